"""Metrics: per-case table, (GAR, TER, Acc) triples, confusion counts, and their artifacts.

Import what you need from its module: `rows` (the per-case rows and triples, standard library
only, what `evaluate` uses) must not pull in polars through this package.
"""
