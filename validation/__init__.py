"""Experiments, the proof-companion report and the ``mdm-theory`` command line. Nothing imports this package."""
