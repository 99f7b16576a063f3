"""BFCL v4 (multi-turn base, long_context, miss_func, miss_param; irrelevance,
live_irrelevance) from its pinned release, executed and scored as BFCL does."""
