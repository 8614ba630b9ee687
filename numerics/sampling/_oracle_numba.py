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
* an n-gram forward step pushes only from windows of non-zero ``alpha`` (those consistent with
  the revealed tokens) along their ``V`` successors, and a backward step visits ``V`` successors
  per window (only the windows ending in the observed token when there is one): ``O(V^n)`` per
  position, never the dense ``V^(n-1) x V^(n-1)`` product;
* a run of ``m - 1`` masked positions followed by an observed one is crossed with one product
  by the precomputed power ``P^m`` (``P`` the state transition matrix; restricted to the windows
  of the observed token for n-grams) when that is cheaper than ``m`` single steps; powers up to a
  memory cap ``M`` are stored, longer runs chain them.

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
:mod:`numerics.sampling.samplers`. Every message is normalized to sum 1 after each step (no underflow);
a zero vector stays zero (never clamped).

The plain reference is the generic sampler with the NumPy masked forward-backward; the tests
compare the two sample by sample.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

from numerics.languages.hmm import HMM, Language, NGram

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
def _matvec_rows(vec, M, out):
    """``out = vec @ M`` (``M`` square, C order) in axpy form, four rows per pass over ``out``."""
    S = out.shape[0]
    for t in range(S):
        out[t] = 0.0
    s = 0
    while s + 4 <= S:
        a0, a1, a2, a3 = vec[s], vec[s + 1], vec[s + 2], vec[s + 3]
        for t in range(S):
            out[t] += a0 * M[s, t] + a1 * M[s + 1, t] + a2 * M[s + 2, t] + a3 * M[s + 3, t]
        s += 4
    while s < S:
        a0 = vec[s]
        for t in range(S):
            out[t] += a0 * M[s, t]
        s += 1


@nb.njit(cache=True)
def _fwd(kind, prev, out, p, thr, selfmask, x, steps, V, W, init, cond, A, E):
    """``out = alpha_p`` from ``prev = alpha_{p-1}`` (ignored at ``p = 0``) under evidence ``thr``."""
    S = out.shape[0]
    if kind == _KIND_DENSE:
        if p == 0:
            for t in range(S):
                out[t] = init[t]
        else:
            _matvec_rows(prev, A, out)
        if _evid(p, thr, selfmask, steps):
            v = x[p]
            for t in range(S):
                out[t] *= E[t, v]
        _normalize(out)
        return
    # n-gram, push form over windows s = a W + b (a = oldest token): alpha[s] cond[s, v] goes to the
    # successor b V + v. Windows inconsistent with the evidence hold alpha = 0 and are skipped.
    vfix = x[p] if _evid(p, thr, selfmask, steps) else -1
    if p == 0:
        for s in range(S):
            out[s] = init[s] if (vfix < 0 or s % V == vfix) else 0.0
        _normalize(out)
        return
    for s in range(S):
        out[s] = 0.0
    if vfix >= 0:
        for a in range(V):
            for b in range(W):
                pa = prev[a * W + b]
                if pa != 0.0:
                    out[b * V + vfix] += pa * cond[a * W + b, vfix]
    else:
        for a in range(V):
            for b in range(W):
                s = a * W + b
                pa = prev[s]
                if pa != 0.0:
                    o = b * V
                    for v in range(V):
                        out[o + v] += pa * cond[s, v]
    _normalize(out)


@nb.njit(cache=True)
def _bwd(kind, nxt, out, p, thr, x, steps, V, W, cond, AT, E, tmp):
    """``out = beta_p`` from ``nxt = beta_{p+1}`` under evidence ``thr`` (``p + 1`` exists).

    Computed for every state when ``x_p`` is masked (states the evidence at ``p-1, ..`` excludes meet
    ``alpha = 0``), only for the windows ending in ``x_p`` when it is observed (the others are 0).
    ``AT`` is ``A`` transposed (dense) or ``cond`` transposed, ``(V, S)`` (n-gram).
    """
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
        _matvec_rows(tmp, AT, out)  # out = A @ tmp
        _normalize(out)
        return
    if _evid(p, thr, -1, steps):  # x_p observed: only windows ending in x_p can meet alpha > 0
        xp = x[p]
        vlo, vhi = (x[q], x[q] + 1) if obs else (0, V)
        for s in range(S):
            out[s] = 0.0
        for c in range(W):
            s = c * V + xp
            o = (s % W) * V
            acc = 0.0
            for v in range(vlo, vhi):
                acc += cond[s, v] * nxt[o + v]
            out[s] = acc
    elif obs:
        v = x[q]
        for a in range(V):
            for b in range(W):
                out[a * W + b] = AT[v, a * W + b] * nxt[b * V + v]
    else:
        for b in range(W):  # tmp[v W + b] = nxt[b V + v]
            for v in range(V):
                tmp[v * W + b] = nxt[b * V + v]
        for s in range(S):
            out[s] = 0.0
        for v in range(V):
            for a in range(V):
                o = a * W
                t0 = v * W
                for b in range(W):
                    out[o + b] += AT[v, o + b] * tmp[t0 + b]
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
def _nnz(vec):
    k = 0
    for s in range(vec.shape[0]):
        if vec[s] != 0.0:
            k += 1
    return k


@nb.njit(cache=True)
def _vecmat(vec, M, out):
    """``out = vec @ M`` skipping zero entries of ``vec``."""
    S = out.shape[0]
    for t in range(S):
        out[t] = 0.0
    for s in range(S):
        a = vec[s]
        if a != 0.0:
            for t in range(S):
                out[t] += a * M[s, t]


@nb.njit(cache=True)
def _jump_fwd(kind, vec, out, m, vfix, Pm, PmT, V, tmp):
    """``out = vec P^m`` (``P^m = Pm[m]``, chained in chunks of ``M = len(Pm) - 1``), normalized.

    n-gram with ``vfix >= 0``: only the windows ending in ``vfix`` (the evidence at the landing
    position) are computed, the others are 0.
    """
    S = out.shape[0]
    M = Pm.shape[0] - 1
    for t in range(S):
        tmp[t] = vec[t]
    while m > M:
        _vecmat(tmp, Pm[M], out)
        _normalize(out)
        tmp[:] = out
        m -= M
    if kind == _KIND_NGRAM and vfix >= 0:
        C = S // V
        for t in range(S):
            out[t] = 0.0
        R = PmT[m, vfix]  # R[s, c] = P^m[s, c V + vfix], contiguous in c
        acc = np.zeros(C)
        for s2 in range(S):
            a = tmp[s2]
            if a != 0.0:
                for c in range(C):
                    acc[c] += a * R[s2, c]
        for c in range(C):
            out[c * V + vfix] = acc[c]
    else:
        _vecmat(tmp, Pm[m], out)
    _normalize(out)


@nb.njit(cache=True)
def _jump_bwd(kind, w, out, m, rowfix, wfix, Pm, PmT, V, tmp):
    """``out = P^m w`` (rows chained in chunks of ``M``), normalized; ``w`` already holds the evidence.

    n-gram with ``rowfix >= 0``: only the rows (windows) ending in ``rowfix`` are computed; with
    ``wfix >= 0`` (and at most ``M`` steps) ``w`` is non-zero only on windows ending in ``wfix``.
    """
    S = out.shape[0]
    M = Pm.shape[0] - 1
    for t in range(S):
        tmp[t] = w[t]
    while m > M:
        P = Pm[M]
        for s2 in range(S):
            acc = 0.0
            for t in range(S):
                acc += P[s2, t] * tmp[t]
            out[s2] = acc
        _normalize(out)
        tmp[:] = out
        m -= M
    P = Pm[m]
    if kind == _KIND_NGRAM and rowfix >= 0:
        C = S // V
        for s2 in range(S):
            out[s2] = 0.0
        if wfix >= 0:  # w lives on the windows ending in wfix: R[s, c] = P^m[s, c V + wfix]
            R = PmT[m, wfix]
            for c in range(C):
                s2 = c * V + rowfix
                acc = 0.0
                for c2 in range(C):
                    acc += R[s2, c2] * tmp[c2 * V + wfix]
                out[s2] = acc
        else:
            for c in range(C):
                s2 = c * V + rowfix
                acc = 0.0
                for t in range(S):
                    acc += P[s2, t] * tmp[t]
                out[s2] = acc
    else:
        for s2 in range(S):
            acc = 0.0
            for t in range(S):
                acc += P[s2, t] * tmp[t]
            out[s2] = acc
    _normalize(out)


@nb.njit(cache=True)
def _advance(kind, vec, start, p, thr, selfmask, store, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, Pm, PmT, tmp2, tmp):
    """Bring ``vec`` (= alpha at ``start`` under ``thr``; ``start = -1``: nothing yet) to alpha at ``p``.

    Restarts from the rightmost separator in ``(start, p)`` when there is one. A run of masked
    positions followed by an observed one (or by ``p``) is crossed in one product with a
    precomputed power ``P^m`` when that is cheaper than ``m`` single steps. With ``store`` the
    messages at the observed positions crossed are written to ``alpha`` and flagged valid.
    """
    S = vec.shape[0]
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
    cur = lo
    if cur == -1:  # alpha_0 from the initial law
        _fwd(kind, vec, tmp, 0, thr, selfmask, x, steps, V, W, init, cond, A, E)
        vec[:] = tmp
        cur = 0
        if store and cur < p:
            alpha[cur, :] = vec
            aval[cur] = True
    while cur < p:
        q = cur + 1
        while q < p and not _evid(q, thr, selfmask, steps):
            q += 1
        m = q - cur
        use_jump = False
        if m > 1:
            if kind == _KIND_DENSE:
                use_jump = True
            else:
                obs = _evid(q, thr, selfmask, steps)
                nz = _nnz(vec)
                jump_cost = nz * (S // V if obs else S)
                step_cost = nz * V + (m - 1) * S * V
                use_jump = jump_cost < step_cost
        if use_jump:
            vfix = x[q] if _evid(q, thr, selfmask, steps) else -1
            _jump_fwd(kind, vec, tmp, m, vfix, Pm, PmT, V, tmp2)
            vec[:] = tmp
            if kind == _KIND_DENSE and vfix >= 0:
                for t in range(S):
                    vec[t] *= E[t, vfix]
                _normalize(vec)
        else:
            for r in range(cur + 1, q + 1):
                _fwd(kind, vec, tmp, r, thr, selfmask, x, steps, V, W, init, cond, A, E)
                vec[:] = tmp
        cur = q
        if store and cur < p:
            alpha[cur, :] = vec
            aval[cur] = True


@nb.njit(cache=True)
def _alpha_query(kind, vec, p, thr, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, Pm, PmT, tmp2, tmp):
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
    _advance(kind, vec, start, p, thr, -1, True, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, Pm, PmT, tmp2, tmp)
    alpha[p, :] = vec
    aval[p] = True


@nb.njit(cache=True)
def _beta_query(kind, p, thr, beta, bval, x, steps, order, V, W, cond, A, AT, E, tmp, pw, Pm, PmT, tmp2):
    """Make ``beta[p]`` valid under ``thr``, from the nearest valid message or separator to the right.

    Runs of masked positions are crossed with a power ``P^m`` when cheaper (as in :func:`_advance`).
    """
    L = beta.shape[0]
    S = beta.shape[1]
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
    cur = start
    while cur > p:
        k = cur - 1
        while k > p and not _evid(k, thr, -1, steps):
            k -= 1
        m = cur - k
        use_jump = False
        if m > 1:
            if kind == _KIND_DENSE:
                use_jump = True
            else:
                obs_cur = _evid(cur, thr, -1, steps)
                rows = S // V if _evid(k, thr, -1, steps) else S
                jump_cost = rows * (S // V if obs_cur else S)
                step_cost = m * S * V
                use_jump = jump_cost < step_cost
        if use_jump:
            # w = evidence at cur times beta_cur
            if _evid(cur, thr, -1, steps):
                v = x[cur]
                if kind == _KIND_DENSE:
                    for t in range(S):
                        tmp[t] = beta[cur, t] * E[t, v]
                else:
                    for t in range(S):
                        tmp[t] = beta[cur, t] if t % V == v else 0.0
            else:
                for t in range(S):
                    tmp[t] = beta[cur, t]
            rowfix = x[k] if (kind == _KIND_NGRAM and _evid(k, thr, -1, steps)) else -1
            wfix = x[cur] if (kind == _KIND_NGRAM and m <= Pm.shape[0] - 1 and _evid(cur, thr, -1, steps)) else -1
            _jump_bwd(kind, tmp, beta[k], m, rowfix, wfix, Pm, PmT, V, tmp2)
        else:
            for r in range(cur - 1, k - 1, -1):
                _bwd(kind, beta[r + 1], beta[r], r, thr, x, steps, V, W, cond, AT, E, tmp)
        cur = k
        bval[cur] = True


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
    else:  # window s = c V + v emits its newest token v
        for c in range(S // V):
            for v in range(V):
                m[v] += a[c * V + v] * b[c * V + v]
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
        for c in range(S // V):
            for w in range(V):
                if w != v:
                    vec[c * V + w] = 0.0
    return _normalize(vec)


@nb.njit(cache=True)
def _sequence(kind, sample, skip_single, steps, order_idx, x, U, order, V, W, init, cond, A, AT, E, pw, Pm, PmT,
              alpha, beta, aval, bval, va, vn, tmp, tmp2, m):
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
            _beta_query(kind, order_idx[r], thr_old, beta, bval, x, steps, order, V, W, cond, A, AT, E, tmp, pw, Pm, PmT, tmp2)
        j1 = order_idx[ptr]
        _alpha_query(kind, va, j1, thr_old, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, Pm, PmT, tmp2, tmp)
        for q in range(j1, L):
            aval[q] = False
        prev = -1
        step_dead = False
        for r in range(ptr, end):
            j = order_idx[r]
            if r == ptr:
                vn[:] = va
            else:
                _advance(kind, va, prev, j, thr_old, -1, False, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, Pm, PmT, tmp2, tmp)
                if not step_dead:
                    _advance(kind, vn, prev, j, thr_new, j, True, alpha, aval, x, steps, order, V, W, init, cond, A, AT, E, pw, Pm, PmT, tmp2, tmp)
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
def _kernel(kind, sample, skip_single, steps, x, U, order, V, W, init, cond, A, AT, E, Pm, PmT, out, lo, hi):
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
    tmp2 = np.empty(S)
    for b in range(lo, hi):
        order_idx = np.argsort(steps[b] * L + np.arange(L))
        lp, lq, jn = _sequence(kind, sample, skip_single, steps[b], order_idx, x[b], U[b], order, V, W, init, cond, A, AT, E, pw, Pm, PmT,
                               alpha, beta, aval, bval, va, vn, tmp, tmp2, m)
        out[b, 0] = lp
        out[b, 1] = lq
        out[b, 2] = jn


def _threads() -> int:
    return max(1, min(os.cpu_count() or 1, int(os.environ.get("NUMBA_NUM_THREADS", os.cpu_count() or 1))))


POWERS_BYTES = 256 * 2**20  # memory for the precomputed powers of one language (both layouts)
_POWERS_CACHE: dict = {}


def _powers(language: Language, length: int, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Pm[m] = P^m`` for ``m = 0..M`` (``P`` the state transition matrix), ``M = min(L, memory cap)``.

    For an n-gram also ``PmT[m, v, s, c] = P^m[s, c V + v]`` (the columns of windows ending in
    ``v``, contiguous), for products restricted to an observed token. Cached per language object
    (languages are immutable).
    """
    if isinstance(language, NGram):
        S, V = language.n_states, language.vocab_size
        P = np.zeros((S, S))
        np.put_along_axis(P, language.successors(), language.conditional, axis=1)
        layouts = 2
    else:
        P = np.array(A)
        S, V = P.shape[0], 1
        layouts = 1
    M = int(max(1, min(length, POWERS_BYTES // (layouts * 8 * S * S) - 1)))
    key = id(language)
    hit = _POWERS_CACHE.get(key)
    if hit is not None and hit[0] is language and hit[1] >= M:
        return hit[2], hit[3]
    Pm = np.empty((M + 1, S, S))
    Pm[0] = np.eye(S)
    for m in range(1, M + 1):
        np.matmul(Pm[m - 1], P, out=Pm[m])
    if layouts == 2:
        PmT = np.ascontiguousarray(Pm.reshape(M + 1, S, S // V, V).transpose(0, 3, 1, 2))
    else:
        PmT = np.zeros((1, 1, 1, 1))
    if len(_POWERS_CACHE) > 4:
        _POWERS_CACHE.clear()
    _POWERS_CACHE[key] = (language, M, Pm, PmT)
    return Pm, PmT


def _run(language: Language, sample: bool, skip_single: bool, steps: np.ndarray, x: np.ndarray, U: np.ndarray) -> np.ndarray:
    kind, order, V, W, init, cond, A, AT, E = _arrays(language)
    Pm, PmT = _powers(language, steps.shape[1], A)
    B = steps.shape[0]
    out = np.empty((B, 3))
    workers = min(_threads(), B)
    if workers <= 1:
        _kernel(kind, sample, skip_single, steps, x, U, order, V, W, init, cond, A, AT, E, Pm, PmT, out, 0, B)
        return out
    bounds = np.linspace(0, B, 4 * workers + 1).astype(np.int64)
    with ThreadPoolExecutor(workers) as pool:
        jobs = [pool.submit(_kernel, kind, sample, skip_single, steps, x, U, order, V, W, init, cond, A, AT, E, Pm, PmT, out,
                            int(a), int(b))
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
                dummy, np.ascontiguousarray(language.conditional.T), dummy)
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
