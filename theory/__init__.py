"""Symbolic and numeric forms of the lemmas and theorems of arXiv 2502.09622 (no torch, no matplotlib)."""
