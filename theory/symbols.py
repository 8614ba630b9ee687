"""The named sympy symbols of the statements (one place, so every claim prints the same names).

Opaque quantities (exact expectations and divergences with no closed form) are undefined sympy
functions; each claim evaluates them with a Python callable.
"""

from __future__ import annotations

import sympy as sp

#: LaTeX names of the symbols whose Python names cannot carry them.
LATEX_NAMES: dict[sp.Symbol, str] = {}

_pos_int = dict(integer=True, positive=True)

L = sp.Symbol("L", **_pos_int)  # sequence length
N = sp.Symbol("N", **_pos_int)  # number of steps
n = sp.Symbol("n", **_pos_int)  # n-gram order
V = sp.Symbol("V", **_pos_int)  # vocabulary size |V|
k = sp.Symbol("k", **_pos_int)  # number of variables / new positions
l = sp.Symbol("l", **_pos_int)  # interval length  # noqa: E741
s = sp.Symbol("s", integer=True, nonnegative=True)  # number of separators
d = sp.Symbol("d", nonnegative=True)  # Chernoff deviation
mu = sp.Symbol("mu", positive=True)  # a mean
mu_S = sp.Symbol("mu_S", positive=True)
mu_T = sp.Symbol("mu_T", positive=True)
u_prev = sp.Symbol("u_prev", positive=True)  # u_{i-1}
pi_i = sp.Symbol("pi_i", positive=True)
eps = sp.Symbol("epsilon", positive=True)
eps_l = sp.Symbol("eps_learning", nonnegative=True)
p_e = sp.Symbol("p_e", positive=True)
x = sp.Symbol("x", nonnegative=True)
C = sp.Symbol("C", positive=True)
KLsym = sp.Symbol("KL", nonnegative=True)
delta_N = sp.Symbol("delta_N", nonnegative=True)
i = sp.Symbol("i", integer=True, positive=True)
pi = sp.IndexedBase("pi")

LATEX_NAMES.update(
    {
        V: r"|\mathcal{V}|",
        u_prev: r"u_{i-1}",
        pi_i: r"\pi_i",
        mu_S: r"\mu_S",
        mu_T: r"\mu_T",
        eps: r"\epsilon",
        eps_l: r"\epsilon_{\mathrm{learning}}",
        p_e: r"p_e",
        delta_N: r"\delta_N",
        KLsym: r"\mathrm{KL}",
    }
)


def fn(name: str) -> sp.FunctionClass:
    """An undefined function (an opaque exact quantity) named for printing."""
    return sp.Function(name)


def step_sum(expr_of_i: sp.Expr, lo=1, hi=N) -> sp.Expr:
    """``sum_{i=lo}^{hi} expr`` unevaluated (for display; numerics evaluate it directly)."""
    return sp.Sum(expr_of_i, (i, lo, hi))


def tex(latex_text: str) -> sp.Symbol:
    """A display-only symbol printed verbatim as ``latex_text`` (sympy would mangle ``_`` and ``|``)."""
    sym = sp.Symbol(latex_text)
    LATEX_NAMES[sym] = latex_text
    return sym


#: ``KL(., .)`` of the statements (an opaque divergence evaluated by enumeration or a DP).
KLq = fn("KL")
#: ``E_tau[sum_i (|tau_i| - D_i)]``: the expected dependency count of Lemmas B.9, B.12 (transfer matrix).
Eps_sum = fn("E")(tex(r"\sum_i (|\tau_i| - D_i)"))
#: ``P(.)``: the probability of an event (a tail, a case of a proof).
Pr = fn("P")
