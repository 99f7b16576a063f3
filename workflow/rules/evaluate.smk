# One job per (model, variant) and benchmark: every category classified and scored in one
# process. Snakemake outputs cannot depend on a wildcard's value, and a benchmark's
# categories do, so each benchmark gets its own rule, `evaluate_<benchmark>`.
for _benchmark in sorted(BENCHMARKS):

    rule:
        """Action classes and the benchmark's verdict of every case, per category; the run's
        per-case table and triples."""
        name:
            f"evaluate_{_benchmark}"
        input:
            cases=lambda wc, b=_benchmark: run_inputs("cases", wc.model, b),
            gold=lambda wc, b=_benchmark: run_inputs("gold", wc.model, b),
            trajectories=category_files("trajectories/{model}/{variant}", _benchmark, "jsonl"),
            release=f"results/raw/{_benchmark}/{BENCHMARKS[_benchmark]['file']}",
            judge=judge_inputs if CLASSIFIER_JUDGE else [],
            code=code("evaluate", *PROFILE_CODE, *(JUDGE_CODE if CLASSIFIER_JUDGE else []),
                      benchmark=_benchmark),
        output:
            actions=category_files("actions/{model}/{variant}", _benchmark, "jsonl"),
            scores=category_files("scores/{model}/{variant}", _benchmark, "jsonl"),
            per_case=f"results/runs/{{model}}/{{variant}}/{_benchmark}/per_case.jsonl",
            triples=f"results/runs/{{model}}/{{variant}}/{_benchmark}/triples.csv",
        params:
            profile=config["classifier"],
            benchmark=_benchmark,
            judge=judge_args if CLASSIFIER_JUDGE else "",
        log:
            f"results/logs/evaluate/{{model}}/{{variant}}/{_benchmark}.log",
        threads: LOCAL_MODEL_THREADS if CLASSIFIER_JUDGE and JUDGE_LOCAL else 1
        resources:
            mem_mb=8000 if CLASSIFIER_JUDGE and JUDGE_LOCAL else 2000,
            runtime=30,
        shell:
            "toolcalib evaluate --profile {params.profile} --benchmark {params.benchmark}"
            " --source {input.release:q} --cases {input.cases:q} --gold {input.gold:q}"
            " --trajectories {input.trajectories:q} --actions {output.actions:q}"
            " --scores {output.scores:q} --per-case {output.per_case:q}"
            " --triples {output.triples:q}{params.judge} 2> {log:q}"
