rule aggregate:
    """Per-category (GAR, TER, Acc) triples, confusion matrices and per-case tables."""
    input:
        actions=run_files("actions", "parquet"),
        scores=run_files("scores", "parquet"),
        code=code("metrics/__init__.py", "metrics/wilson.py", "metrics/triples.py",
                  "metrics/confusion.py", "metrics/per_case.py"),
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
        " --out-dir results/metrics 2> {log:q}"
