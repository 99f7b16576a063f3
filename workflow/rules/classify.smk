rule validate_classifier:
    """Every classifier profile against the labelled corpus, per source."""
    input:
        corpus=config["classifier_corpus"],
        judge=judge_inputs,
        code=code("validate", *PROFILE_CODE, *JUDGE_CODE),
    output:
        VALIDATION,
    params:
        profiles=PROFILES,
        judge=judge_args,
    log:
        "results/logs/validate_classifier.log",
    threads: LOCAL_MODEL_THREADS if JUDGE_LOCAL else 1
    resources:
        mem_mb=8000 if JUDGE_LOCAL else 1000,
        runtime=120 if JUDGE else 5,
    shell:
        "toolcalib validate --corpus {input.corpus:q} --profiles {params.profiles}{params.judge}"
        " --out-dir results/metrics 2> {log:q}"


if CONFIRM_CORPUS:

    rule validate_confirm:
        """The confirm verdicts on τ²'s writes (the rule's, the judge's) against the
        hand-labelled write contexts (only with a judge configured)."""
        input:
            corpus=CONFIRM_CORPUS,
            judge=judge_inputs,
            code=code("validate_confirm", *PROFILE_CODE, *JUDGE_CODE),
        output:
            CONFIRM_VALIDATION,
        params:
            judge=judge_args,
        log:
            "results/logs/validate_confirm.log",
        threads: LOCAL_MODEL_THREADS if JUDGE_LOCAL else 1
        resources:
            mem_mb=8000 if JUDGE_LOCAL else 1000,
            runtime=120,
        shell:
            "toolcalib validate-confirm --corpus {input.corpus:q} --profiles default judge"
            "{params.judge} --out-dir results/metrics 2> {log:q}"
