"""Fast exact kernels of the oracle factorized reveal process (numba), for sampling and scoring.

One pass over a sequence processes its reveal steps in order. At step ``i`` the new positions
``j_1 < .. < j_k`` (``tau_i``) need the posterior marginals ``q(x_j | x_{tau_<i})``, i.e. the
forward message ``alpha_j`` and the backward message ``beta_j`` under the *old* evidence
(positions revealed at steps ``< i``). Instead of a full forward-backward per step:

* messages are stored per position with a validity flag; a reveal at ``j`` invalidates only
  ``alpha`` at positions ``>= j`` and ``beta`` at positions ``< j``; a query recomputes from the
  nearest valid message (forward from the left, backward from the right);
* for an n-gram (order ``n``), a run of ``n-1`` revealed tokens fixes the window state
  (a separator, Definition B.4): ``alpha`` restarts there from a point mass and ``beta`` from
  ones, so a query never looks past the separators around it;
* an n-gram forward/backward step only visits the window states consistent with the revealed
  tokens of the window (``V^(#masked)`` of them), never the dense ``V^(n-1) x V^(n-1)`` matrix.

Inside a step the new positions are swept left to right with two forward vectors: ``alpha_old``
(old evidence; gives the sampler's marginal ``q(x_j | x_{tau_<i})``) and ``alpha_new`` (old
evidence plus the new tokens to the left; gives the chain-rule factor
``q(x_j | x_{tau_<i}, x_{j_1..j_{m-1}})``). Hence per sequence

* ``log p(x | tau) = sum_i sum_{j in tau_i} log q(x_j | x_{tau_<i})`` (the factorized law of the
  instance; ``-inf`` outside its support),
* ``log q(x) = sum_i sum_m log q(x_{j_m} | x_{tau_<i}, x_{j_<m})`` (chain rule, a check), and
* ``log q(x) - log p(x | tau) = sum_i [log q(x_{tau_i} | x_{tau_<i}) - sum_{j in tau_i} log q(x_j | x_{tau_<i})]``
  accumulated term by term (no cancellation of two large numbers; steps revealing one position
  contribute exactly 0): the per-sample term of the Jensen bound ``E_tau KL(q || p(.|tau))``.

A sampled step whose new tokens are jointly impossible (a chain-rule factor 0) leaves the
sequence outside ``supp q``; from the next step on it draws uniformly, the convention of
:mod:`numerics.samplers`. Every message is normalized to sum 1 after each step (no underflow);
a zero vector stays zero (never clamped).

The plain reference is the generic sampler with the NumPy masked forward-backward; the tests
compare the two sample by sample.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

from .hmm import HMM, Language, NGram

__all__ = ["reveal_sample", "reveal_score"]

_KIND_NGRAM = 0
_KIND_DENSE = 1


@nb.njit(cache=True)
def _evid(pos, thr, selfmask_pos, steps):
    """True when position ``pos`` is observed under threshold ``thr`` (revealed at a step < thr)."""
    return pos >= 0 and pos != selfmask_pos and steps[pos] < thr


@nb.njit(cache=True)
def _normalize(vec):
    total = 0.0
    for s in range(vec.shape[0]):
        total += vec[s]
    if total > 0.0:
        inv = 1.0 / total
        for s in range(vec.shape[0]):
            vec[s] *= inv
    return total


@nb.njit(cache=True)
def _fwd(kind, prev, out, p, thr, selfmask, x, steps, order, V, W, init, cond, A, AT, E, pw, freepw):
    """``out = alpha_p`` from ``prev = alpha_{p-1}`` (ignored at ``p = 0``) under evidence ``thr``."""
    S = out.shape[0]
    if kind == _KIND_DENSE:
        obs = _evid(p, thr, selfmask, steps)
        if p == 0:
            for t in range(S):
                out[t] = init[t]
        else:
            for t in range(S):
                out[t] = 0.0
            for s in range(S):
                a = prev[s]
                if a != 0.0:
                    for t in range(S):
                        out[t] += a * A[s, t]
        if obs:
            v = x[p]
            for t in range(S):
                out[t] *= E[t, v]
        _normalize(out)
        return
    # n-gram, push form: every predecessor window s with alpha > 0 (only windows consistent with the
    # evidence are non-zero) sends alpha[s] cond[s, v] to its successor (s mod W) V + v, contiguous in v
    vfix = x[p] if _evid(p, thr, selfmask, steps) else -1
    if p == 0:
        for s in range(S):
            out[s] = init[s] if (vfix < 0 or s % V == vfix) else 0.0
        _normalize(out)
        return
    for s in range(S):
        out[s] = 0.0
    for s in range(S):
        a = prev[s]
        if a == 0.0:
            continue
        nb0 = (s % W) * V
        if vfix >= 0:
            out[nb0 + vfix] += a * cond[s, vfix]
        else:
            for v in range(V):
                out[nb0 + v] += a * cond[s, v]
    _normalize(out)


@nb.njit(cache=True)
def _bwd(kind, nxt, out, p, thr, x, steps, order, V, W, cond, A, AT, E, tmp, pw, freepw):
    """``out = beta_p`` from ``nxt = beta_{p+1}`` under evidence ``thr`` (``p + 1`` exists)."""
    S = out.shape[0]
    q = p + 1
    obs = _evid(q, thr, -1, steps)
    if kind == _KIND_DENSE:
        if obs:
            v = x[q]
            for t in range(S):
                tmp[t] = nxt[t] * E[t, v]
        else:
            for t in range(S):
                tmp[t] = nxt[t]
        for s in range(S):  # out = A @ tmp in axpy form over the rows of A^T (vectorizes without reassociation)
            out[s] = 0.0
        for t in range(S):
            w = tmp[t]
            if w != 0.0:
                for s in range(S):
                    out[s] += AT[t, s] * w
        _normalize(out)
        return
    for s in range(S):
        out[s] = 0.0
    base = 0
    nfree = 0
    for d in range(order - 1):
        if _evid(p - d, thr, -1, steps):
            base += x[p - d] * pw[d]
        else:
            freepw[nfree] = pw[d]
            nfree += 1
    total = 1
    for f in range(nfree):
        total *= V
    vfix = x[q] if obs else -1
    for idx in range(total):
        s = base
        r = idx
        for f in range(nfree):
            s += (r % V) * freepw[f]
            r //= V
        nb0 = (s % W) * V
        if vfix >= 0:
            out[s] = cond[s, vfix] * nxt[nb0 + vfix]
        else:
            acc = 0.0
            for v in range(V):
                acc += cond[s, v] * nxt[nb0 + v]
            out[s] = acc
    _normalize(out)


@nb.njit(cache=True)
def _sep_end(p, thr, selfmask, steps, order):
    """n-gram: positions ``p-n+2..p`` all observed under ``thr`` (the window at ``p`` is known)."""
    if p - order + 2 < 0:
        return False
    for d in range(order - 1):
        if not _evid(p - d, thr, selfmask, steps):
            return False
    return True


@nb.njit(cache=True)
def _point_mass(out, p, x, order, pw):
    for s in range(out.shape[0]):
        out[s] = 0.0
    s = 0
    for d in range(order - 1):
        s += x[p - d] * pw[d]
    out[s] = 1.0


@nb.njit(cache=True)
def _advance(kind, vec, start, p, thr, selfmask, store, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, freepw, tmp):
    """Bring ``vec`` (= alpha at ``start`` under ``thr``; ``start = -1``: nothing yet) to alpha at ``p``.

    Restarts from the rightmost separator in ``(start, p)`` when there is one. With ``store``
    the intermediate messages are written to ``alpha`` and flagged valid.
    """
    lo = start
    if kind == _KIND_NGRAM:
        for q in range(p - 1, start, -1):
            if _sep_end(q, thr, selfmask, steps, order):
                _point_mass(vec, q, x, order, pw)
                lo = q
                if store:
                    alpha[q, :] = vec
                    aval[q] = True
                break
    for q in range(lo + 1, p + 1):
        _fwd(kind, vec, tmp, q, thr, selfmask, x, steps, order, V, W, init, cond, A, AT, E, pw, freepw)
        vec[:] = tmp
        if store and q < p:
            alpha[q, :] = vec
            aval[q] = True


@nb.njit(cache=True)
def _alpha_query(kind, vec, p, thr, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, freepw, tmp):
    """``vec = alpha_p`` under ``thr`` (``p`` masked), from the nearest valid message or separator."""
    start = -1
    for q in range(p - 1, -1, -1):
        if aval[q]:
            start = q
            break
        if kind == _KIND_NGRAM and _sep_end(q, thr, -1, steps, order):
            break  # _advance restarts here
    if start >= 0:
        vec[:] = alpha[start]
    _advance(kind, vec, start, p, thr, -1, True, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, freepw, tmp)
    alpha[p, :] = vec
    aval[p] = True


@nb.njit(cache=True)
def _beta_query(kind, p, thr, beta, bval, x, steps, order, V, W, cond, A, AT, E, tmp, pw, freepw):
    """Make ``beta[p]`` valid under ``thr``, from the nearest valid message or separator to the right."""
    L = beta.shape[0]
    if bval[p]:
        return
    start = L - 1
    for q in range(p + 1, L):
        if bval[q]:
            start = q
            break
        if kind == _KIND_NGRAM and _sep_end(q, thr, -1, steps, order) and q - order + 2 > p:
            start = q
            break
    if not bval[start]:
        beta[start, :] = 1.0
        bval[start] = True
    for q in range(start - 1, p - 1, -1):
        _bwd(kind, beta[q + 1], beta[q], q, thr, x, steps, order, V, W, cond, A, AT, E, tmp, pw, freepw)
        bval[q] = True


@nb.njit(cache=True)
def _marginal(kind, a, b, m, E, V):
    """``m[v] = sum_s a[s] b[s] P(v | s)`` (unnormalized); returns the total."""
    for v in range(V):
        m[v] = 0.0
    S = a.shape[0]
    if kind == _KIND_DENSE:
        for s in range(S):
            w = a[s] * b[s]
            if w != 0.0:
                for v in range(V):
                    m[v] += w * E[s, v]
    else:
        for s in range(S):
            m[s % V] += a[s] * b[s]
    total = 0.0
    for v in range(V):
        total += m[v]
    return total


@nb.njit(cache=True)
def _draw(m, u, V):
    """Inverse CDF at ``u`` of the unnormalized row ``m``; same arithmetic as ``draw_inverse_cdf``."""
    c = 0.0
    for v in range(V):
        c += m[v]
    target = u * c
    c = 0.0
    idx = 0
    for v in range(V):
        c += m[v]
        if c <= target:
            idx += 1
    if idx >= V:
        idx = V - 1
        while m[idx] <= 0.0:
            idx -= 1
    return idx


@nb.njit(cache=True)
def _observe(kind, vec, v, E, V):
    """Multiply ``vec`` by the evidence ``x = v`` at its position and normalize; returns the old total mass kept."""
    S = vec.shape[0]
    if kind == _KIND_DENSE:
        for s in range(S):
            vec[s] *= E[s, v]
    else:
        for s in range(S):
            if s % V != v:
                vec[s] = 0.0
    return _normalize(vec)


@nb.njit(cache=True)
def _sequence(kind, sample, skip_single, steps, order_idx, x, U, order, V, W, init, cond, A, AT, E, pw,
              alpha, beta, aval, bval, va, vn, tmp, m, freepw):
    """Run one sequence; returns (log p(x|tau), log q(x), jensen term). ``x`` is written when ``sample``."""
    L = steps.shape[0]
    S = va.shape[0]
    aval[:] = False
    bval[:] = False
    dead = False
    log_p_tau = np.nan if skip_single else 0.0
    log_q = np.nan if skip_single else 0.0
    jensen = 0.0
    unif = np.empty(V)
    for v in range(V):
        unif[v] = 1.0 / V
    ptr = 0
    while ptr < L:
        i = steps[order_idx[ptr]]
        end = ptr
        while end < L and steps[order_idx[end]] == i:
            end += 1
        if skip_single and end - ptr == 1:  # contributes exactly 0 to the Jensen term: only invalidate
            j = order_idx[ptr]
            for q in range(j, L):
                aval[q] = False
            for q in range(0, j):
                bval[q] = False
            ptr = end
            continue
        if dead:  # uniform draws (the samplers' convention for an undefined posterior)
            for r in range(ptr, end):
                j = order_idx[r]
                if sample:
                    x[j] = _draw(unif, U[j], V)
                log_p_tau += np.log(1.0 / V)
            ptr = end
            continue
        thr_old = i
        thr_new = i + 1
        # backward messages (old evidence) at every new position, right to left
        for r in range(end - 1, ptr - 1, -1):
            _beta_query(kind, order_idx[r], thr_old, beta, bval, x, steps, order, V, W, cond, A, AT, E, tmp, pw, freepw)
        j1 = order_idx[ptr]
        _alpha_query(kind, va, j1, thr_old, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, freepw, tmp)
        for q in range(j1, L):
            aval[q] = False
        prev = -1
        step_dead = False
        for r in range(ptr, end):
            j = order_idx[r]
            if r == ptr:
                vn[:] = va
            else:
                _advance(kind, va, prev, j, thr_old, -1, False, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, freepw, tmp)
                if not step_dead:
                    _advance(kind, vn, prev, j, thr_new, j, True, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, freepw, tmp)
            prev = j
            tot_old = _marginal(kind, va, beta[j], m, E, V)  # q(x_j = . | x_{tau_<i}), unnormalized
            if sample:
                x[j] = _draw(m, U[j], V)
            xj = x[j]
            lo = np.log(m[xj] / tot_old) if m[xj] > 0.0 else -np.inf
            log_p_tau += lo
            if step_dead:
                continue
            if r > ptr:  # chain-rule factor q(x_j | x_{tau_<i}, new tokens to the left)
                tot_new = _marginal(kind, vn, beta[j], m, E, V)
                ln = np.log(m[xj] / tot_new) if (tot_new > 0.0 and m[xj] > 0.0) else -np.inf
            else:
                ln = lo
            if ln == -np.inf:
                step_dead = True
                continue
            log_q += ln
            jensen += ln - lo
            _observe(kind, vn, xj, E, V)
            alpha[j, :] = vn
            aval[j] = True
        jl = order_idx[end - 1]
        for q in range(0, jl):
            bval[q] = False
        if step_dead:  # the revealed tokens are jointly impossible: outside supp q from here on
            dead = True
            log_q = -np.inf
            jensen = np.nan
            for q in range(j1, L):
                aval[q] = False
        ptr = end
    return log_p_tau, log_q, jensen


@nb.njit(cache=True, nogil=True)
def _kernel(kind, sample, skip_single, steps, x, U, order, V, W, init, cond, A, AT, E, out, lo, hi):
    """Sequences ``lo..hi-1`` of the batch; releases the GIL so threads run chunks in parallel."""
    L = steps.shape[1]
    S = init.shape[0]
    pw = np.empty(max(order - 1, 1), dtype=np.int64)
    p = 1
    for d in range(order - 1):
        pw[d] = p
        p *= V
    alpha = np.empty((L, S))
    beta = np.empty((L, S))
    aval = np.zeros(L, dtype=np.bool_)
    bval = np.zeros(L, dtype=np.bool_)
    va = np.empty(S)
    vn = np.empty(S)
    tmp = np.empty(S)
    m = np.empty(V)
    freepw = np.empty(max(order - 1, 1), dtype=np.int64)
    for b in range(lo, hi):
        order_idx = np.argsort(steps[b] * L + np.arange(L))
        lp, lq, jn = _sequence(kind, sample, skip_single, steps[b], order_idx, x[b], U[b], order, V, W, init, cond, A, AT, E, pw,
                               alpha, beta, aval, bval, va, vn, tmp, m, freepw)
        out[b, 0] = lp
        out[b, 1] = lq
        out[b, 2] = jn


def _threads() -> int:
    return max(1, min(os.cpu_count() or 1, int(os.environ.get("NUMBA_NUM_THREADS", os.cpu_count() or 1))))


def _run(language: Language, sample: bool, skip_single: bool, steps: np.ndarray, x: np.ndarray, U: np.ndarray) -> np.ndarray:
    kind, order, V, W, init, cond, A, AT, E = _arrays(language)
    B = steps.shape[0]
    out = np.empty((B, 3))
    workers = min(_threads(), B)
    if workers <= 1:
        _kernel(kind, sample, skip_single, steps, x, U, order, V, W, init, cond, A, AT, E, out, 0, B)
        return out
    bounds = np.linspace(0, B, 4 * workers + 1).astype(np.int64)
    with ThreadPoolExecutor(workers) as pool:
        jobs = [pool.submit(_kernel, kind, sample, skip_single, steps, x, U, order, V, W, init, cond, A, AT, E, out, int(a), int(b))
                for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        for job in jobs:
            job.result()
    return out


def _arrays(language: Language):
    """Kernel arguments ``(kind, order, V, W, init, cond, A, AT, E)`` of a language."""
    if isinstance(language, NGram):
        V = language.vocab_size
        n = language.order
        dummy = np.zeros((1, 1))
        return (_KIND_NGRAM, n, V, V ** (n - 2), np.array(language.initial), np.array(language.conditional),
                dummy, dummy, dummy)
    if isinstance(language, HMM):
        dummy = np.zeros((1, 1))
        return (_KIND_DENSE, 1, language.vocab_size, 1, np.array(language.initial), dummy,
                np.array(language.transition), np.ascontiguousarray(language.transition.T), np.array(language.emission))
    raise TypeError(f"language must be an HMM or NGram, got {type(language).__name__}")


def _check_steps(steps: np.ndarray) -> np.ndarray:
    steps = np.ascontiguousarray(steps, dtype=np.int64)
    if steps.ndim != 2 or steps.shape[1] < 1:
        raise ValueError(f"steps must be (B, L) with L >= 1, got shape {steps.shape}")
    if steps.size and steps.min() < 1:
        raise ValueError("reveal steps must be >= 1")
    return steps


def reveal_sample(language: Language, steps: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Tokens of the oracle factorized sampler for given reveal ``steps`` and token ``uniforms`` (both ``(B, L)``).

    Position ``j`` (step ``steps[b, j]``) gets the float64 inverse CDF at ``uniforms[b, j]`` of
    ``q(x_j | x_{tau_<i})``; see the module docstring.
    """
    steps = _check_steps(steps)
    U = np.ascontiguousarray(uniforms, dtype=np.float64)
    if U.shape != steps.shape:
        raise ValueError(f"uniforms {U.shape} and steps {steps.shape} differ in shape")
    x = np.zeros(steps.shape, dtype=np.int64)
    _run(language, True, False, steps, x, U)
    return x


def reveal_score(language: Language, steps: np.ndarray, tokens: np.ndarray, *, chain: bool = False) -> np.ndarray:
    """Per sequence ``(log p(x | tau), log q(x), log q(x) - log p(x | tau))`` as a ``(B, 3)`` array.

    Steps revealing a single position contribute exactly 0 to the third column; unless
    ``chain=True`` they are skipped (only their invalidations are kept), which makes the cost scale
    with the number of multi-position steps, and the first two columns are then NaN.

    ``tokens`` are given (e.g. ``x ~ q`` for the Jensen bound); ``steps`` is the instance ``tau``.
    The third column is accumulated step by step (module docstring); ``log q(x)`` comes from the
    chain rule along the reveal order and is ``-inf`` for ``x`` outside ``supp q``.
    """
    steps = _check_steps(steps)
    x = np.ascontiguousarray(tokens, dtype=np.int64)
    if x.shape != steps.shape:
        raise ValueError(f"tokens {x.shape} and steps {steps.shape} differ in shape")
    V = language.vocab_size
    if np.any((x < 0) | (x >= V)):
        raise ValueError(f"tokens must be in 0..{V - 1}")
    return _run(language, False, not chain, steps, x.copy(), np.zeros(steps.shape))
