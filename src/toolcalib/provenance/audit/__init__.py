"""`toolcalib audit`, one module per concern: the number recomputed from the per-case rows
(`recompute`), the artifacts on its path against the run's record, dvc.lock or the run's own
manifest (`artifacts`), why one no longer matches (`explain`), one case or unit replayed
(`case`), the audit as text (`render`) and the command (`main`)."""
