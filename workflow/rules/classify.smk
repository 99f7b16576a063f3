rule classify:
    """One action class per emission and per turn."""
    input:
        cases="results/cases/{benchmark}/{category}.jsonl",
        trajectories="results/trajectories/{model}/{variant}/{benchmark}/{category}.jsonl",
        code=code("classify", "classify/paper.py", "data/paper_classifier.yaml"),
    output:
        "results/actions/{model}/{variant}/{benchmark}/{category}.parquet",
    params:
        profile=config["classifier"],
    log:
        "results/logs/classify/{model}/{variant}/{benchmark}/{category}.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "toolcalib classify --profile {params.profile} --cases {input.cases:q}"
        " --trajectories {input.trajectories:q} --out {output:q} 2> {log:q}"
