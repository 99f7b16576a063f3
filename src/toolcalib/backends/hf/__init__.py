"""The `transformers` backend, one module per concern: the backend (`backend`: `make`, the
model's identity), its options (`options`, importable without torch), the prompt rendered from
the chat template (`prompt`, shared with the `openai` and `llamacpp` backends), the batched
decode engine (`engine`), the KV of shared system messages kept in files (`shared_prefixes`),
the kernel family (`kernels`) and the linear layers on oneDNN (`onednn`) or integer (`int8`).
Nothing is imported here, so `prompt` and `options` load without torch."""
