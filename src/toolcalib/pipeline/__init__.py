"""The workflow's own tooling, beside the Snakefile: the config checked whole before any job
(`config_schema`), each stage's code closure the rules declare as inputs (`codedeps`), the
order and pace of jobs (`schedule`), `dvc.yaml` generated from the Snakemake DAG (`dvcsync`)
and a run's state (`status`). Imported by the workflow and the CLI, never by a stage."""
