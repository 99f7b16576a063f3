"""τ²-bench (airline, retail) from its pinned release, run with τ²'s own domain code."""
