# toolcalib: benchmark download -> normalize -> generate -> evaluate (classify + score) -> aggregate.
# The Snakefile is the one DAG; dvc.yaml is generated from it (`toolcalib dvc-sync`).
import sys

from snakemake.utils import min_version

from toolcalib.pipeline.config_schema import ConfigError, check_config, workflow_layers

from toolcalib.pipeline.status import print_summary

from toolcalib.pipeline.schedule import drop_local_rate_limit

min_version("9.0")


configfile: "config/config.yaml"


# The whole config, against the schema generated from its typed records (backend options, benchmark sections, variants, judge; a published-results
# folder of many models made one model each first) before any job: the first error is one
# line naming its config file(s), the field and what is allowed.
try:
    check_config(config, workflow_layers(workflow))
except ConfigError as error:
    sys.exit(str(error))


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/model.smk"
include: "workflow/rules/normalize.smk"
include: "workflow/rules/generate.smk"
include: "workflow/rules/classify.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/aggregate.smk"


rule all:
    input:
        final_targets(),
    default_target: True


# A local run schedules on job events alone (Snakemake's submission rate limit is a cluster's).
onstart:
    drop_local_rate_limit(workflow)


# The run summary (`toolcalib status`) when Snakemake ends: scored, excluded and failed cases,
# the published runs' imports (records without a cell; each failed import with its reason).
onsuccess:
    print_summary(runs(), log, imports=import_jobs())


onerror:
    print_summary(runs(), log, imports=import_jobs())
