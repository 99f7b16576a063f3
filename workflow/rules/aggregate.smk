rule aggregate:
    """Per-category (GAR, TER, Acc) triples, confusion matrices and per-case tables."""
    input:
        actions=run_files("actions", "parquet"),
        scores=run_files("scores", "parquet"),
        cases=case_files(),
        code=code("aggregate"),
    output:
        METRICS,
    log:
        "results/logs/aggregate.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "toolcalib aggregate --actions {input.actions:q} --scores {input.scores:q}"
        " --cases {input.cases:q} --out-dir results/metrics 2> {log:q}"
