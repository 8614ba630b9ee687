"""Subcommands of ``mdm-theory``, one module per area.

Each module here defines click commands and lists them in ``COMMANDS`` (top-level subcommands)
and optionally ``BENCH_COMMANDS`` (subcommands of ``mdm-theory bench``). The CLI discovers the
modules; heavy imports (torch, matplotlib) belong inside the command functions so that
``mdm-theory --help`` stays fast.
"""
