rule score:
    """The benchmark's own verdict (Acc) per case."""
    input:
        cases="results/cases/{benchmark}/{category}.jsonl",
        gold="results/gold/{benchmark}/{category}.jsonl",
        trajectories="results/trajectories/{model}/{variant}/{benchmark}/{category}.jsonl",
        release=release,
        code=code("score", benchmarks=True),
    output:
        "results/scores/{model}/{variant}/{benchmark}/{category}.parquet",
    log:
        "results/logs/score/{model}/{variant}/{benchmark}/{category}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    shell:
        "toolcalib score --benchmark {wildcards.benchmark} --cases {input.cases:q}"
        " --gold {input.gold:q} --source {input.release:q}"
        " --trajectories {input.trajectories:q} --out {output:q} 2> {log:q}"
