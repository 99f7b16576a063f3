"""`toolcalib audit`, one module per concern: the number recomputed from the per-case rows
(`recompute`), the artifacts on its path against dvc.lock (`artifacts`), why one no longer
matches (`explain`), one case replayed (`case`), the audit as text (`render`) and the command
(`main`)."""
