"""toolcalib: action-class calibration diagnostics for tool-calling LLMs."""
