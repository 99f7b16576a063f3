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
