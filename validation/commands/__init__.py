"""Subcommands of ``mdm-theory``, one module per area.

Each module defines click commands; :mod:`validation.cli` lists every one of them explicitly
(``COMMANDS`` / ``BENCH_COMMANDS`` there). Heavy imports (torch, matplotlib, dask) belong inside
the command functions so that ``mdm-theory --help`` stays fast. Output conventions shared by all
of them (``--json``, ``--progress``, error objects) live in :mod:`validation.commands._common`.
"""
