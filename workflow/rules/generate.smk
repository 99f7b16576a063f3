rule generate:
    """Run one model on one category under one context variant (the benchmark's loop)."""
    input:
        cases="results/cases/{benchmark}/{category}.jsonl",
        release=release,
        model=model_dir,
        user=user_model_dir,
        code=benchmark_code("generate", backends=True),
    output:
        "results/trajectories/{model}/{variant}/{benchmark}/{category}.jsonl",
    params:
        spec=model_spec,
        limit=limit_value,
        ids=case_ids_option,
        loop=loop_options,
        store=config["store"],
    log:
        "results/logs/generate/{model}/{variant}/{benchmark}/{category}.log",
    threads: generate_threads
    priority: generate_job_priority
    resources:
        mem_mb=lambda wc: 8000 if MODELS[wc.model]["backend"] in LOCAL_BACKENDS else 2000,
        runtime=240,
    shell:
        "toolcalib generate --model-spec {params.spec:q} --variant {wildcards.variant}"
        " --benchmark {wildcards.benchmark} --cases {input.cases:q} --source {input.release:q}"
        " --limit {params.limit}{params.ids}{params.loop} --store {params.store:q} --out {output:q}"
        " 2> {log:q}"
