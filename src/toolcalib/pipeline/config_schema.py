"""The workflow config, validated whole before any job runs: the schema and its one-line errors.

The schema is `workflow/schemas/config.schema.yaml` (the top level) completed from the
registries, so nothing is written twice: `models[*].backend` is one of the registered backends
and `models[*].options` follows that backend's options model (`backends.OPTIONS`, pydantic's
JSON schema: unknown options are errors), `benchmarks.<name>` follows the benchmark's config
model (`benchmarks.CONFIGS`), and the variants are those of `variants.VARIANTS`. What one
schema cannot say is checked after it: model names that collide once escaped into DVC stage
names or compared case-insensitively, the judge naming a model that is not in `models` (or a
policy), a model's options as its backend receives them (`model_dir` filled from `source`), a
variant a benchmark does not run (`check_variants`), a model's `benchmarks` map naming a
benchmark the run does not have, a `pairs` entry naming an unknown model or two models that
run nothing in common (`check_pairs`).

A benchmark section set to null (an overlay's `benchmarks: {tau2: null}`) is removed before
anything is checked (`drop_benchmarks`): the run has no such benchmark, and the models'
`benchmarks` maps naming it leave it out (a list in an overlay replaces the whole list, so an
overlay could not drop it from each model).

The first error is raised as one `ConfigError` line: the config file(s) it comes from, the
path to the field and what is allowed, e.g.
`my.yaml: models[3].options.max_concurency: unknown key in options of backend 'openai'
(allowed: api_key_env, ...)`.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import relevance
from pydantic import ValidationError

from toolcalib.backends import OPTIONS
from toolcalib.benchmarks import CONFIGS, get_benchmark
from toolcalib.expand import expand_models
from toolcalib.jsonio import InputError
from toolcalib.pipeline.dvcsync import stage_part
from toolcalib.variants import VARIANTS, refusal

Layer = tuple[str, Mapping[str, Any]]
"""A config source and what it sets: a file's name and its content, or `--config` and the
command line's values; the merged config is the layers merged in order (later ones win)."""
FieldPath = tuple[str | int, ...]

WORKFLOW_OPTIONS = {"model_dir": "or give the model a `source`: the workflow then sets it"}
"""Options the workflow fills in (`common.smk`, `spec_json`): not required in the config."""
MAX_REPR = 60


class ConfigError(InputError):
    """A config error, as one line: source file(s), field path, what is wrong and allowed."""


def options_schema(backend: str) -> dict[str, Any]:
    """The JSON schema of a model's `options` under `backend`, from its options model."""
    schema = OPTIONS.load(backend).model_json_schema()
    schema["required"] = [k for k in schema.get("required", ()) if k not in WORKFLOW_OPTIONS]
    schema["title"] = f"options of backend '{backend}'"
    return schema


def config_schema(base: Mapping[str, Any]) -> dict[str, Any]:
    """The whole config schema: `base` (the YAML file's) completed from the registries."""
    schema = copy.deepcopy(dict(base))
    props = schema["properties"]
    variant_names = {"enum": sorted(VARIANTS)}
    props["variants"]["items"].update(variant_names)
    benchmarks = props["benchmarks"]
    benchmarks["properties"] = {}
    for name in sorted(CONFIGS):
        section = CONFIGS.load(name).model_json_schema()
        section["title"] = f"benchmark '{name}'"
        benchmarks["properties"][name] = section
    model = props["models"]["items"]
    model["properties"]["backend"]["enum"] = sorted(OPTIONS)
    model["properties"]["variants"]["items"].update(variant_names)
    model["allOf"] = [{"if": {"properties": {"backend": {"const": backend}},
                              "required": ["backend"]},
                       "then": {"properties": {"options": options_schema(backend)}}}
                      for backend in sorted(OPTIONS)]
    return schema


def load_yaml(path: str | Path) -> Any:
    import yaml

    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def check_config(config: dict[str, Any], layers: Sequence[Layer],
                 schema_file: str | Path) -> None:
    """Validate the merged `config` (its layers name the sources in errors), then fill in the
    YAML schema's defaults (`options: {}`, `batch_size: 1`) in place; raises `ConfigError`.
    A published-results folder of many models (`replay`, `model: '*'`) becomes one model each
    once the schema holds (`expand.expand_models`), so every later check sees the models that
    run."""
    base = load_yaml(schema_file)
    drop_benchmarks(config, layers)
    check_schema(config, config_schema(base), layers)
    try:
        config["models"] = expand_models(config["models"])
    except InputError as exc:
        raise ConfigError(f"{', '.join(name for name, _ in layers)}: {exc}") from None
    check_references(config, layers)
    check_model_benchmarks(config, layers)
    check_variants(config, layers)
    check_pairs(config, layers)
    fill_defaults(config, base)


def drop_benchmarks(config: dict[str, Any], layers: Sequence[Layer]) -> list[str]:
    """Remove the benchmark sections set to null (in place, before the schema sees them) and
    their names from every model's `benchmarks` map; the names removed, sorted. Dropping every
    benchmark is an error (a run needs one)."""
    sections = config.get("benchmarks")
    if not isinstance(sections, dict):
        return []
    dropped = sorted(name for name, section in sections.items() if section is None)
    if not dropped:
        return []
    for name in dropped:
        del sections[name]
    if not sections:
        raise error(layers, ("benchmarks",),
                    f"every benchmark is dropped (null: {', '.join(dropped)}); a run needs "
                    "at least one")
    for model in config.get("models") or ():
        chosen = model.get("benchmarks") if isinstance(model, dict) else None
        if isinstance(chosen, dict) and set(chosen) & set(dropped):
            model["benchmarks"] = {k: v for k, v in chosen.items() if k not in dropped}
    return dropped


# --- the schema -----------------------------------------------------------------------------

def check_schema(config: Any, schema: Mapping[str, Any], layers: Sequence[Layer]) -> None:
    errors = list(Draft202012Validator(schema).iter_errors(config))
    if errors:
        path, message = describe_error(max(errors, key=relevance))
        raise error(layers, path, message)


def describe_error(err: Any) -> tuple[FieldPath, str]:
    """(path to the field, what is wrong and what is allowed) of a jsonschema error."""
    path, kind, value = tuple(err.absolute_path), err.validator, err.instance
    schema = err.schema if isinstance(err.schema, dict) else {}
    where = f" in {schema['title']}" if "title" in schema else ""
    if kind == "additionalProperties" and isinstance(value, dict):
        known = set(schema.get("properties", {}))
        extra = next((k for k in value if k not in known), None)
        return (*path, extra), f"unknown key{where} (allowed: {', '.join(sorted(known))})"
    if kind == "required":
        missing = next(k for k in err.validator_value if k not in value)
        return (*path, missing), f"missing{where} (required)"
    if kind in ("enum", "const"):
        allowed = err.validator_value if kind == "enum" else [err.validator_value]
        return path, f"unknown value {short(value)} (allowed: {', '.join(map(str, allowed))})"
    if kind == "type":
        return path, f"expected {alternatives([schema])}, got {short(value)}"
    if kind in ("oneOf", "anyOf"):
        options = err.validator_value
        checker = Draft202012Validator.TYPE_CHECKER
        fitting = [i for i, option in enumerate(options) if "type" not in option
                   or checker.is_type(value, option["type"])]
        nested = [e for e in err.context if e.relative_schema_path[0] in fitting]
        if len(fitting) == 1 and nested:
            return describe_error(max(nested, key=relevance))
        return path, f"expected {alternatives(options)}, got {short(value)}"
    return path, err.message.replace("\n", " ")


def alternatives(options: Iterable[Mapping[str, Any]]) -> str:
    """What schemas accept, in words: `integer >= 1 or null`."""
    words = []
    for option in options:
        types = option.get("type", "any value")
        text = " or ".join([types] if isinstance(types, str) else types)
        if "minimum" in option:
            text += f" >= {option['minimum']}"
        if "maximum" in option:
            text += f" <= {option['maximum']}"
        if "exclusiveMinimum" in option:
            text += f" > {option['exclusiveMinimum']}"
        if "pattern" in option:
            text += f" matching {option['pattern']}"
        if "enum" in option:
            text += f" (one of {', '.join(map(str, option['enum']))})"
        words.append(text)
    return " or ".join(words)


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_REPR else text[:MAX_REPR - 3] + "..."


# --- what the schema cannot say -------------------------------------------------------------

def stage_key(name: str) -> str:
    """A name as DVC stage names write it, compared ignoring case (two names differing only in
    case are one folder on a case-insensitive filesystem)."""
    return stage_part(name).casefold()


def check_references(config: Mapping[str, Any], layers: Sequence[Layer]) -> None:
    models = config["models"]
    seen: dict[str, int] = {}
    for index, model in enumerate(models):
        other = seen.setdefault(stage_key(model["name"]), index)
        if other != index:
            raise error(layers, ("models", index, "name"),
                        f"{model['name']!r} collides with models[{other}].name "
                        f"{models[other]['name']!r} (names must differ after '.' -> '_' as in "
                        "DVC stage names, ignoring case)")
        check_options(model, effective_options(model), layers, ("models", index, "options"))
    judge = config.get("judge")
    if config["classifier"] == "judge" and not judge:
        raise error(layers, ("classifier",),
                    "classifier 'judge' needs a 'judge' section naming a model (allowed "
                    "without one: default, paper)")
    if not judge:
        return
    by_name = {model["name"]: model for model in models}
    model = by_name.get(judge["model"])
    if model is None:
        raise error(layers, ("judge", "model"),
                    f"{judge['model']!r} is not in 'models' (known: {', '.join(by_name)})",
                    also=[("models",)])
    if model["backend"] in ("policy", "replay"):
        kind = "a reference policy" if model["backend"] == "policy" else "a published run"
        judges = (n for n, m in by_name.items() if m["backend"] not in ("policy", "replay"))
        raise error(layers, ("judge", "model"),
                    f"{judge['model']!r} is {kind}, which cannot judge (allowed: "
                    f"{', '.join(judges)})", also=[("models",)])
    overrides = judge.get("options") or {}
    check_options(model, {**effective_options(model), **overrides}, layers, ("judge", "options"))


def check_model_benchmarks(config: Mapping[str, Any], layers: Sequence[Layer]) -> None:
    """A model's `benchmarks` map names only benchmarks of the run (one dropped with null is
    already gone from it: `drop_benchmarks`)."""
    known = config["benchmarks"]
    for index, model in enumerate(config["models"]):
        for name in model.get("benchmarks") or {}:
            if name not in known:
                raise error(layers, ("models", index, "benchmarks", name),
                            f"unknown benchmark (this run's: {', '.join(sorted(known))})")


def model_runs(config: Mapping[str, Any], model: Mapping[str, Any]) -> set[tuple[str, str, str]]:
    """The (variant, benchmark, category) cells a model runs, as `runs()` in `common.smk`
    lists them, less the categories its `limit` sets to 0 (no case, no cell)."""
    own, chosen, limit = model.get("variants"), model.get("benchmarks"), model.get("limit")
    cells: set[tuple[str, str, str]] = set()
    for benchmark, section in config["benchmarks"].items():
        if chosen is not None and benchmark not in chosen:
            continue
        variants = (chosen or {}).get(benchmark) or own or config["variants"]
        for category in section["categories"]:
            if limit == 0 or isinstance(limit, dict) and limit.get(category) == 0:
                continue
            cells.update((variant, benchmark, category) for variant in variants)
    return cells


def check_pairs(config: Mapping[str, Any], layers: Sequence[Layer]) -> None:
    """Each `pairs` entry: a name no other entry has, `base` and `other` two different models
    of `models` (as the run has them, folder entries expanded) that share at least one
    (variant, benchmark, category)."""
    models = {model["name"]: model for model in config["models"]}
    names: dict[str, int] = {}
    for index, pair in enumerate(config.get("pairs") or ()):
        first = names.setdefault(pair["name"], index)
        if first != index:
            raise error(layers, ("pairs", index, "name"),
                        f"{pair['name']!r} is also pairs[{first}].name (pair names must differ)")
        for side in ("base", "other"):
            if pair[side] not in models:
                known = known_names(pair[side], models)
                raise error(layers, ("pairs", index, side),
                            f"{pair[side]!r} is not in 'models' ({known})", also=[("models",)])
        if pair["base"] == pair["other"]:
            raise error(layers, ("pairs", index, "other"),
                        f"{pair['other']!r} is also the pair's base (a pair compares two models)")
        runs = {side: model_runs(config, models[pair[side]]) for side in ("base", "other")}
        if not runs["base"] & runs["other"]:
            raise error(layers, ("pairs", index, "other"),
                        f"{pair['other']!r} shares no (variant, benchmark, category) with base "
                        f"{pair['base']!r} (it runs {cells_text(runs['other'])}; base runs "
                        f"{cells_text(runs['base'])})", also=[("models",)])


def known_names(name: str, models: Mapping[str, Any], listed: int = 8) -> str:
    """`did you mean 'x'? known: a, b, ...`: the closest model names first."""
    close = difflib.get_close_matches(name, list(models), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    more = f", ... ({len(models)} models)" if len(models) > listed else ""
    return f"{hint}known: {', '.join(list(models)[:listed])}{more}"


def cells_text(cells: set[tuple[str, str, str]], listed: int = 4) -> str:
    """`baseline/bfcl/irrelevance, ... (12 in all)`, or `nothing`."""
    if not cells:
        return "nothing"
    shown = ["/".join(cell) for cell in sorted(cells)]
    more = f", ... ({len(shown)} in all)" if len(shown) > listed else ""
    return ", ".join(shown[:listed]) + more


def check_variants(config: Mapping[str, Any], layers: Sequence[Layer]) -> None:
    """Every (model, variant, benchmark) the config runs (`runs()` in `common.smk`: the
    model's `variants`, else the run's, each within its `benchmarks` entry's list if it has
    one; a benchmark without categories runs nothing) is one the benchmark runs
    (`variants.refusal`); the error points at the list that asks for it."""
    for index, model in enumerate(config["models"]):
        own, chosen = model.get("variants"), model.get("benchmarks")
        for benchmark, section in sorted(config["benchmarks"].items()):
            if not section["categories"] or (chosen is not None and benchmark not in chosen):
                continue
            listed = (chosen or {}).get(benchmark)
            for variant in own or config["variants"]:
                if listed and variant not in listed:
                    continue
                line = refusal(model["name"], model["backend"], variant, benchmark,
                               get_benchmark(benchmark).variants)
                if line is None:
                    continue
                if listed:
                    path: FieldPath = ("models", index, "benchmarks", benchmark,
                                       listed.index(variant))
                elif own:
                    path = ("models", index, "variants", own.index(variant))
                else:
                    path = ("variants", config["variants"].index(variant))
                raise error(layers, path, line, also=[("models", index, "name")])


def effective_options(model: Mapping[str, Any]) -> dict[str, Any]:
    """A model's options as its backend receives them (what `common.smk`'s `spec_json` adds)."""
    extra = {"model_dir": f"results/models/{model['name']}"} if model.get("source") else {}
    return {**(model.get("options") or {}), **extra}


def check_options(model: Mapping[str, Any], options: Mapping[str, Any],
                  layers: Sequence[Layer], at: FieldPath) -> None:
    """Validate `options` with the model's backend options model (what the schema cannot say:
    `model_dir` is required once `source` cannot fill it); errors are reported at `at`."""
    backend = model["backend"]
    options_model = OPTIONS.load(backend)
    try:
        options_model.model_validate(options)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = first["loc"][0] if first["loc"] else None
        where = f" in options of backend '{backend}'"
        path = (*at, *first["loc"])
        if first["type"] == "extra_forbidden":
            allowed = ", ".join(sorted(options_model.model_fields))
            raise error(layers, path, f"unknown key{where} (allowed: {allowed})") from None
        if first["type"] == "missing":
            hint = f"; {WORKFLOW_OPTIONS[key]}" if key in WORKFLOW_OPTIONS else ""
            raise error(layers, path, f"missing{where} (required{hint})") from None
        raise error(layers, path, f"{first['msg']} ({where.strip()})") from None


# --- sources and defaults -------------------------------------------------------------------

def error(layers: Sequence[Layer], path: FieldPath, message: str,
          also: Iterable[FieldPath] = ()) -> ConfigError:
    """`<sources>: <path>: <message>`; the sources are the layers that set the field (and the
    fields of `also`, which the error involves too)."""
    names: list[str] = []
    for field in (path, *also):
        for name in sources(layers, field):
            if name not in names:
                names.append(name)
    return ConfigError(f"{', '.join(names)}: {dotted(path)}: {message}")


def sources(layers: Sequence[Layer], path: FieldPath) -> list[str]:
    """The layer a field's value comes from: the last one that sets the longest part of its
    path (mappings are merged key by key, a list is replaced whole, so the layer that sets a
    list sets all of it); every layer when none sets even the top-level key."""
    best, depth = [name for name, _ in layers], 0
    for name, data in layers:
        reached = reach(data, path)
        if reached and reached >= depth:
            best, depth = [name], reached
    return best


def reach(data: Any, path: FieldPath) -> int:
    """How many keys of `path` `data` sets (a list counts as setting all that is below it)."""
    for depth, key in enumerate(path):
        if isinstance(data, list):
            return len(path)
        if not isinstance(data, Mapping) or key not in data:
            return depth
        data = data[key]
    return len(path)


def dotted(path: FieldPath) -> str:
    """`models[3].options.max_concurency`."""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else f".{key}" if text else str(key)
    return text or "<config>"


def fill_defaults(config: Any, schema: Mapping[str, Any]) -> None:
    """Set the `default` of every property the YAML schema gives one, where the config omits it
    (as Snakemake's `validate` did; the generated options schemas' defaults stay out: the
    backend applies them, and a model's identity holds only what the config sets)."""
    if isinstance(config, dict):
        for key, sub in schema.get("properties", {}).items():
            if "default" in sub:
                config.setdefault(key, copy.deepcopy(sub["default"]))
            if key in config:
                fill_defaults(config[key], sub)
    elif isinstance(config, list) and isinstance(schema.get("items"), Mapping):
        for item in config:
            fill_defaults(item, schema["items"])


def workflow_layers(workflow: Any) -> list[Layer]:
    """The config layers of a Snakemake run, in the order they were merged: the Snakefile's
    `configfile:` (unless `--configfile` names it too), each `--configfile`, then `--config`."""
    cli = [display(f) for f in workflow.overwrite_configfiles]
    files = [f for f in map(display, workflow.configfiles) if f not in cli] + cli
    layers: list[Layer] = [(f, load_yaml(f) or {}) for f in files]
    overrides = workflow.config_settings.config
    if overrides:
        layers.append(("--config", overrides))
    return layers


def display(path: str | Path) -> str:
    """A config file's name as the user wrote it, more or less: relative below the current
    folder, absolute elsewhere."""
    full = Path(path).absolute()
    try:
        return str(full.relative_to(Path.cwd()))
    except ValueError:
        return str(full)
