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
    wildcard_constraints:
        model=GENERATED_MODEL,
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


rule import_run:
    """A published run (backend `replay`) read by its benchmark's plugin: one category's cases
    and trajectories (`baseline` only: what the recorded model saw). Bad input in its files
    fails this import alone: the reason goes to the terminal and into `status`, the other
    outputs are empty (no cell), and every other job goes on (`stages/import_run.py`)."""
    input:
        files=published_files,
        cases="results/cases/{benchmark}/{category}.jsonl",
        release=release,
        code=benchmark_code("import_run"),
    output:
        trajectories="results/trajectories/{model}/baseline/{benchmark}/{category}.jsonl",
        cases="results/published/{model}/{benchmark}/{category}.cases.jsonl",
        records="results/published/{model}/{benchmark}/{category}.records.jsonl",
        recorded="results/published/{model}/{benchmark}/{category}.recorded.json",
        status="results/published/{model}/{benchmark}/{category}.import.json",
    wildcard_constraints:
        model=REPLAYED_MODEL,
    params:
        spec=model_spec,
        limit=limit_value,
        ids=case_ids_option,
        options=case_options,
    log:
        "results/logs/import_run/{model}/{benchmark}/{category}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "toolcalib import-run --model-spec {params.spec:q} --benchmark {wildcards.benchmark}"
        " --category {wildcards.category} --source {input.release:q} --cases {input.cases:q}"
        " --limit {params.limit}{params.ids}{params.options} --out {output.trajectories:q}"
        " --out-cases {output.cases:q} --out-records {output.records:q}"
        " --out-recorded {output.recorded:q} --out-status {output.status:q} 2> {log:q}"
