rule normalize:
    """Raw benchmark release -> canonical cases, one JSON line each."""
    input:
        release=release,
        code=benchmark_code("normalize"),
    output:
        "results/cases/{benchmark}/{category}.jsonl",
    params:
        options=case_options,
    log:
        "results/logs/normalize/{benchmark}/{category}.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "toolcalib normalize --benchmark {wildcards.benchmark} --category {wildcards.category}"
        " --source {input.release:q}{params.options} --out {output:q} 2> {log:q}"


rule gold:
    """Execute the ground truth once per case (model-independent), for the scorer."""
    input:
        cases="results/cases/{benchmark}/{category}.jsonl",
        release=release,
        code=benchmark_code("gold"),
    output:
        "results/gold/{benchmark}/{category}.jsonl",
    log:
        "results/logs/gold/{benchmark}/{category}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    shell:
        "toolcalib gold --benchmark {wildcards.benchmark} --cases {input.cases:q}"
        " --source {input.release:q} --out {output:q} 2> {log:q}"


rule gold_published:
    """The ground truth of a published run's own cases (τ²: the tasks its file embeds); a case
    whose task is the release's takes the release's gold row (`toolcalib gold --known`)."""
    input:
        cases="results/published/{model}/{benchmark}/{category}.cases.jsonl",
        known_cases="results/cases/{benchmark}/{category}.jsonl",
        known="results/gold/{benchmark}/{category}.jsonl",
        release=release,
        code=benchmark_code("gold"),
    output:
        "results/published/{model}/{benchmark}/{category}.gold.jsonl",
    log:
        "results/logs/gold/published/{model}/{benchmark}/{category}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    shell:
        "toolcalib gold --benchmark {wildcards.benchmark} --cases {input.cases:q}"
        " --source {input.release:q} --known-cases {input.known_cases:q} --known {input.known:q}"
        " --out {output:q} 2> {log:q}"
