rule aggregate:
    """Per-category (GAR, TER, Acc) triples, confusion matrices, per-case tables and the
    published runs' calibration leaderboard."""
    input:
        actions=run_files("actions", "jsonl"),
        runs=run_tables(),
        published=published_records(),
        recorded=published_recorded(),
        code=code("aggregate"),
    output:
        METRICS,
    params:
        published=published_option,
        recorded=recorded_option,
        pairs=pairs_option,
    log:
        "results/logs/aggregate.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "toolcalib aggregate --actions {input.actions:q} --runs {input.runs:q}"
        "{params.published}{params.recorded}{params.pairs} --out-dir results/metrics 2> {log:q}"


rule report:
    """One self-contained HTML page: the published-run imports that failed (if any), the
    published runs' calibration leaderboard, then the headline (each real model's calibration
    profile and GAR vs Acc), shifts, triples, heatmaps, the reference policies' self-check,
    audit anchors."""
    input:
        metrics=METRICS,
        validation=VALIDATION,
        imports=published_imports(),
        code=code("report", *(module_file(PLUGINS.module(name)) for name in PLUGINS)),
    output:
        REPORT,
    params:
        imports=imports_option,
        policies=json.dumps({m["name"]: m["options"]["policy"] for m in config["models"]
                             if m["backend"] == "policy"}, sort_keys=True, separators=(",", ":")),
    log:
        "results/logs/report.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "toolcalib report --metrics-dir results/metrics --validation {input.validation[0]:q}"
        " --validation-summary {input.validation[1]:q} --policies {params.policies:q}"
        "{params.imports} --out-dir results/report 2> {log:q}"


rule manifest:
    """Code version, config, model identities, package versions and input hashes of the run."""
    input:
        metrics=METRICS,
        trajectories=run_files("trajectories", "jsonl"),
        cases=case_files(),
        releases=release_files(),
        code=code("manifest", *(module_file(PLUGINS.module(name)) for name in PLUGINS)),
    output:
        MANIFEST,
    params:
        config=json.dumps(config, sort_keys=True, separators=(",", ":")),
    log:
        "results/logs/manifest.log",
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    shell:
        "toolcalib manifest --config-json {params.config:q}"
        " --inputs {input.metrics:q} {input.cases:q} {input.releases:q}"
        " --trajectories {input.trajectories:q} --out {output:q} 2> {log:q}"
