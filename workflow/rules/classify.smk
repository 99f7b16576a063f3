rule classify:
    """One action class per emission and per turn."""
    input:
        cases="results/cases/{benchmark}/{category}.jsonl",
        trajectories="results/trajectories/{model}/{variant}/{benchmark}/{category}.jsonl",
        code=code("classify", *PROFILE_CODE),
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


rule validate_classifier:
    """Every classifier profile against the hand- and model-labelled corpus."""
    input:
        corpus=config["classifier_corpus"],
        code=code("validate", *PROFILE_CODE),
    output:
        VALIDATION,
    params:
        profiles=PROFILES,
    log:
        "results/logs/validate_classifier.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "toolcalib validate --corpus {input.corpus:q} --profiles {params.profiles}"
        " --out-dir results/metrics 2> {log:q}"
