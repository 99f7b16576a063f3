"""The workflow config, validated whole before any job runs: the schema and its one-line errors.

The schema is generated from msgspec structs (`msgspec.json.schema_components`), each field
declared once: the top level and a model entry by the records below (`WorkflowConfig`; a model
entry is the `config.ModelSpec` the stages receive plus the fields saying what it runs, its
`source` the `models.ModelSource` the `model` stage reads), `models[*].backend` one of the
registered backends, `benchmarks.<name>` the benchmark's config record (`benchmarks.CONFIGS`),
the variants those of `variants.VARIANTS`. Each model's `options` are validated once, against
the JSON schema of its backend's options record (`backends.OPTIONS`: unknown options are
errors), as the backend receives them (`model_dir` filled from `source`).
What one schema cannot say is checked after it: model names that collide once escaped into DVC stage
names or compared case-insensitively, the judge naming a model that is not in `models` (or a
policy), a
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

import difflib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, get_origin

import msgspec
from jsonschema import Draft202012Validator
from jsonschema.exceptions import relevance
from msgspec import Meta

from toolcalib.backends import OPTIONS
from toolcalib.benchmarks import CONFIGS, get_benchmark
from toolcalib.config import NAME_PATTERN, ModelSpec, StrictModel
from toolcalib.expand import expand_models
from toolcalib.jsonio import InputError, field_default
from toolcalib.models import ModelSource
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


Name = Annotated[str, Meta(pattern=NAME_PATTERN)]
if TYPE_CHECKING:
    from typing import TypeAlias

    VariantName: TypeAlias = str
    BackendName: TypeAlias = str
else:  # the registries' names, as the schema's enums
    VariantName = Literal[tuple(sorted(VARIANTS))]
    BackendName = Literal[tuple(sorted(OPTIONS))]
Variants = Annotated[list[VariantName], Meta(min_length=1,
                                             extra_json_schema={"uniqueItems": True})]
CaseIds = Annotated[list[Annotated[str, Meta(min_length=1, pattern=r"^[^,]+$")]],
                    Meta(min_length=1, extra_json_schema={"uniqueItems": True})]
Count = Annotated[int, Meta(ge=0)]


class ModelEntry(ModelSpec, frozen=True, kw_only=True):
    """An entry of `models`: the spec its jobs receive (`config.ModelSpec`; `options` checked
    against its backend's options model) and what it runs (`common.smk`'s `RUN_FIELDS`)."""

    backend: BackendName
    source: ModelSource | None = None
    """Pinned weights fetched, verified and converted by the `model` rule."""
    limit: Count | dict[str, Count] | None = None
    """Cases per category for this model (overrides the run's `limit`; 0: the model runs none
    of that category's cases, and its job loads no model)."""
    cases: dict[str, CaseIds] | None = None
    """Pinned case ids per category (override `limit` there)."""
    variants: Variants | None = None
    """The variants this model runs (overrides the run's)."""
    benchmarks: dict[str, Variants | None] | None = None
    """The benchmarks this model runs (default: all), each with the variants it runs there
    (null: the model's)."""


class Judge(StrictModel, frozen=True, kw_only=True):
    """The model the `judge` profile asks and option overrides for its judge requests."""

    model: Name
    options: dict[str, Any] | None = None


class Pair(StrictModel, frozen=True, kw_only=True):
    """A model-vs-model comparison on the same cases: `other` against `base`."""

    name: Name
    base: Name
    other: Name


class WorkflowConfig(StrictModel, frozen=True, kw_only=True):
    """toolcalib's workflow configuration (`config/config.yaml` and its overlays)."""

    store: str
    """The response store folder (outside results/, never deleted by Snakemake)."""
    limit: Annotated[int, Meta(ge=1)] | Annotated[str, Meta(
        pattern=r"^([1-9][0-9]*|null|None)$")] | None
    """Cases per category (null: all; a string from `--config limit=5`)."""
    variants: Variants
    classifier: Literal["paper", "default", "judge"]
    """The action-classifier profile for the triples (`judge` needs `judge`)."""
    judge: Judge | None = None
    classifier_corpus: str
    """Labelled emissions every profile is validated against."""
    confirm_corpus: str | None = None
    """Hand-labelled write contexts the judge's confirm verdict is validated on."""
    benchmarks: Annotated[dict[str, Any], Meta(min_length=1)]
    """One section per benchmark (`benchmarks.CONFIGS`; a null one is dropped first)."""
    pairs: list[Pair] = []
    """None by default (not filled in: `common.smk` reads a missing list as empty)."""
    models: Annotated[list[ModelEntry], Meta(min_length=1)]


FILLED = ("options", "batch_size")
"""The model fields the workflow reads filled in with `ModelSpec`'s defaults where the config
omits them (a model's identity holds only what the config sets, the options' defaults not)."""
DEFAULTS = {info.name: info for info in msgspec.structs.fields(ModelSpec) if info.name in FILLED}


def strip(node: Any) -> Any:
    """A generated JSON schema without its titles and defaults (the errors name fields by
    path, and the workflow fills `FILLED` alone)."""
    if isinstance(node, dict):
        return {key: ({name: strip(sub) for name, sub in value.items()}
                      if key == "properties" else strip(value))
                for key, value in node.items() if key not in ("title", "default")}
    return [strip(item) for item in node] if isinstance(node, list) else node


def generated(records: Sequence[type[msgspec.Struct]]
              ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each record's JSON schema (`msgspec.json.schema_components`) and the `$defs` of the
    records they hold, `strip`ped, each `Literal`'s values in declared order
    (`declared_order`)."""
    refs, defs = msgspec.json.schema_components(records, ref_template="#/$defs/{name}")
    for record in held(records):
        declared_order(record, defs[record.__name__])
    schemas = [defs.pop(ref["$ref"].rsplit("/", 1)[1]) for ref in refs]  # inlined
    return [strip(schema) for schema in schemas], strip(defs)


def held(records: Iterable[Any]) -> list[type[msgspec.Struct]]:
    """`records` and the records their fields hold, at any depth: `$defs` names them by class
    name, so no two may share one."""
    found: dict[str, type[msgspec.Struct]] = {}
    todo = list(records)
    while todo:
        kind = todo.pop()
        if not (isinstance(kind, type) and issubclass(kind, msgspec.Struct)):
            todo.extend(get_args(kind))
        elif found.setdefault(kind.__name__, kind) is not kind:
            raise TypeError(f"two records named {kind.__name__} in one schema")
        else:
            todo.extend(info.type for info in msgspec.structs.fields(kind))
    return list(found.values())


def declared_order(record: type[msgspec.Struct], schema: dict[str, Any]) -> dict[str, Any]:
    """`record`'s generated `schema` with the values of each `Literal` (a field's, or in a
    list, a mapping or a union of one) in the order the `Literal` declares them, as strings
    (msgspec sorts them and leaves the type out), so that an error lists them as the code
    does."""
    for info in msgspec.structs.fields(record):
        _in_order(info.type, schema["properties"][info.encode_name])
    return schema


def _in_order(kind: Any, node: dict[str, Any]) -> None:
    kind = _bare(kind)
    origin, args = get_origin(kind), get_args(kind)
    if origin is Literal and all(isinstance(value, str) for value in args):
        node.update(enum=list(args), type="string")
    elif origin in (list, dict) and _HOLDS[origin] in node:
        _in_order(args[-1], node[_HOLDS[origin]])
    elif "anyOf" in node:  # a union: each arm in the option its JSON schema became
        for arm in args:
            key = _HOLDS.get(get_origin(_bare(arm)))
            option = next((option for option in node["anyOf"] if key in option), None)
            if option is not None:
                _in_order(arm, option)


_HOLDS: dict[Any, str] = {Literal: "enum", list: "items", dict: "additionalProperties"}
"""Where the schema of a `Literal`, a list and a mapping holds what may need ordering."""


def _bare(kind: Any) -> Any:
    return _bare(get_args(kind)[0]) if get_origin(kind) is Annotated else kind


def options_schema(backend: str) -> dict[str, Any]:
    """The JSON schema of a model's `options` under `backend`, from its options model."""
    (schema,), defs = generated([OPTIONS.load(backend)])
    assert not defs  # options are flat
    return {**schema, "title": f"options of backend '{backend}'"}


def config_schema() -> dict[str, Any]:
    """The whole config schema: `WorkflowConfig`'s, each benchmark's section its config
    record's (`benchmarks.CONFIGS`)."""
    names = sorted(CONFIGS)
    (schema, *sections), defs = generated([WorkflowConfig, *map(CONFIGS.load, names)])
    benchmarks = schema["properties"]["benchmarks"]
    benchmarks["additionalProperties"] = False
    benchmarks["properties"] = {name: {**section, "title": f"benchmark '{name}'"}
                                for name, section in zip(names, sections, strict=True)}
    return {**schema, "$defs": defs}


def load_yaml(path: str | Path) -> Any:
    import yaml

    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def check_config(config: dict[str, Any], layers: Sequence[Layer]) -> None:
    """Validate the merged `config` (its layers name the sources in errors), then fill in the
    model fields the workflow reads (`FILLED`) in place; raises `ConfigError`. A
    published-results folder of many models (`replay`, `model: '*'`) becomes one model each
    once the schema holds (`expand.expand_models`), so every later check sees the models that
    run."""
    drop_benchmarks(config, layers)
    check_schema(config, config_schema(), layers)
    try:
        config["models"] = expand_models(config["models"])
    except InputError as exc:
        raise ConfigError(f"{', '.join(name for name, _ in layers)}: {exc}") from None
    check_references(config, layers)
    check_model_benchmarks(config, layers)
    check_variants(config, layers)
    check_pairs(config, layers)
    fill_defaults(config)


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
    """Validate `options` against the JSON schema of the model's backend options model (once:
    the config's schema leaves them to this); errors are reported at `at`."""
    errors = list(Draft202012Validator(options_schema(model["backend"])).iter_errors(options))
    if errors:
        path, message = describe_error(max(errors, key=relevance))
        if message.endswith("(required)") and path[-1] in WORKFLOW_OPTIONS:
            message = f"{message[:-1]}; {WORKFLOW_OPTIONS[str(path[-1])]})"
        raise error(layers, (*at, *path), message)


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


def fill_defaults(config: Mapping[str, Any]) -> None:
    """Set each model's `FILLED` fields to `ModelSpec`'s defaults where the config omits them."""
    for model in config["models"]:
        for key in FILLED:
            if key not in model:
                model[key] = field_default(DEFAULTS[key])


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
