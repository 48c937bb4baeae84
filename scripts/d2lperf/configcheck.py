"""Config validation with messages that name the key and what is allowed."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from d2lperf import data, frameworks, sections
from d2lperf.machine import MachineIdError, check_machine_id
from d2lperf.presets import per_framework_value
from d2lperf.results import is_finite_number

# One training run per entry: devices[i] devices, batch_sizes[i], learning_rates[i].
# Lists of a section's options that pair up entry by entry, named by what one entry is
# and the key that gives the count: a training run's devices, batch size and learning
# rate; a data-parallel model's images and learning rate.
PAIRED_LISTS = {"devices": (("devices", "batch_sizes", "learning_rates"), "training run"),
                "models": (("models", "images", "learning_rates"), "model")}


class ConfigError(ValueError):
    """The config is wrong; the message says which key and what it may be."""


def _is_integer(checker, instance) -> bool:
    """JSON Schema counts 2.0 as an integer; the config's integers reach the section
    scripts' command lines and the thread variables as written (libgomp stops at
    OMP_NUM_THREADS=2.0 without naming the key), so only an int is one here (a bool is an
    int to Python, never to a config)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


# Draft 2020-12 with the integers above and finite numbers (results.is_finite_number, the
# records' rule): every "integer" and "number" of the schema, the table of sections'
# options included, is checked so.
Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": is_finite_number}))


def _where(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _allowed_keys(schema: Mapping[str, Any], root: Mapping[str, Any]) -> list[str]:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = root["$defs"][name]
    return sorted(schema.get("properties", {}))


def _bounds(schema: Mapping[str, Any]) -> str:
    """A schema's bounds in words: ' from 1 to 16', ' of at least 0', ' above 0 and below 1'."""
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f" from {low} to {high}"
    words = [f"above {schema['exclusiveMinimum']}" if "exclusiveMinimum" in schema else
             f"of at least {low}" if low is not None else None,
             f"below {schema['exclusiveMaximum']}" if "exclusiveMaximum" in schema else
             f"at most {high}" if high is not None else None]
    words = [w for w in words if w]
    if len(words) == 2 and words[0].startswith("of at least"):
        words[0] = words[0].replace("of at least", "at least")
    return (" " + " and ".join(words)) if words else ""


def _type_message(error: jsonschema.ValidationError) -> str | None:
    """What a value of the wrong type should have been, and why this one is not it; None
    where jsonschema's own words say it (an object, an array)."""
    wanted, value = error.validator_value, error.instance
    if wanted == "boolean":
        return "must be true or false (on Snakemake's command line: True or False)"
    if wanted not in ("integer", "number", "string"):
        return None
    allowed = {"integer": "an integer", "number": "a finite number", "string": "a string"}[wanted]
    allowed += _bounds(error.schema)
    key = error.absolute_path[-1] if error.absolute_path else "key"
    if value is None:
        why = (f" (null here: on Snakemake's command line, {key}= with nothing after it gives "
               "null; leave the key out instead)")
    elif wanted == "string" and isinstance(value, bool):
        why = (f" ({value} here: YAML reads an unquoted yes, no, true or false as one; put "
               "it in quotes)")
    elif wanted == "string" and isinstance(value, (int, float)):
        # Snakemake's --config strips quotes before it tries int() and float()
        why = (f" ({_short(value)} here: Snakemake's --config reads a value of digits as a "
               f"number, quoted or not; write it in a config file, in quotes: "
               f"{key}: \"{value}\")")
    elif isinstance(value, bool):
        why = " (true and false are not numbers)"
    elif isinstance(value, str) and _yaml_text_number(value):
        why = f" ({_yaml_text_number(value)})"
    elif isinstance(value, str):
        # Snakemake's --config reads whatever is nested in [...] or {...} as text
        why = (" (a string here: write the number without quotes; inside [...] or {...} on "
               "Snakemake's --config line every value is a string, so set it in a config file)")
    elif isinstance(value, float) and not math.isfinite(value):
        why = f" ({value} is not one)"
    elif wanted == "integer" and isinstance(value, float) and value.is_integer():
        return f"must be {allowed}, written without a decimal point ({int(value)}, not {value})"
    else:
        why = ""
    return f"must be {allowed}{why}"


def _message(error: jsonschema.ValidationError, root: Mapping[str, Any]) -> str:
    where = _where(error.absolute_path)
    if "propertyNames" in error.schema_path:
        return (f"config section {where}: the name {error.instance!r} is not a string; "
                f"allowed: a name in quotes ('{error.instance}')")
    if error.validator == "anyOf" and error.absolute_path and (
            error.absolute_path[-1] in sections.PER_FRAMEWORK):
        return _per_framework_message(error, where)
    if (error.validator == "type" and isinstance(error.instance, dict)
            and len(error.absolute_path) == 4 and error.absolute_path[0] == "presets"):
        return (f"config key {where} = {error.instance!r}: one value for every framework (the "
                "frameworks do the same work); only how much is measured may differ by "
                f"framework: {', '.join(sections.PER_FRAMEWORK)}")
    if error.validator == "additionalProperties":
        # key=str: YAML may give a key as a number beside the named ones
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})), key=str)
        allowed = ", ".join(_allowed_keys(error.schema, root)) or "none"
        keys = ", ".join(repr(k) for k in extra)
        return f"unknown config key {keys} in {where}; allowed keys there: {allowed}"
    if error.validator == "required":
        return f"config section {where} is missing a key: {error.message}"
    if error.validator == "oneOf" and error.absolute_path and error.absolute_path[-1] == "threads":
        value = error.instance
        if isinstance(value, float) and value.is_integer() and value >= 1:
            return (f"config key {where} = {value!r}: must be a positive integer (written "
                    f"without a decimal point: {int(value)}, not {value}) or 'auto'")
        return f"config key {where} = {value!r}: must be a positive integer or 'auto'"
    return f"config key {where} = {error.instance!r}: {_detail(error)}"


def _detail(error: jsonschema.ValidationError) -> str:
    """What is wrong with one value: for a wrong type, what it must be; for one out of its
    bounds, the bounds and why they are there (the schema's description); else jsonschema's."""
    if error.validator in BOUNDS:
        return _range_message(error)
    return (error.validator == "type" and _type_message(error)) or error.message


BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
# YAML 1.1 (PyYAML, Snakemake's reader) reads a float only with a '.' in it and a sign in
# its exponent: 1.0e9 and 1e9 stay text, 1.0e+9 is a number.
_EXPONENT = re.compile(r"([-+]?(?:\d+\.?\d*|\.\d+))[eE]([-+]?)(\d+)")


def _yaml_text_number(text: str) -> str | None:
    """What to write instead of a number in exponent form that YAML read as text (the
    value has no quotes to remove), or None where ``text`` is not one."""
    found = _EXPONENT.fullmatch(text.strip())
    if not found:
        return None
    mantissa, sign, exponent = found.groups()
    mantissa = mantissa if "." in mantissa else f"{mantissa}.0"
    number = float(text)
    plain = f"{int(number)}" if number.is_integer() and abs(number) < 1e18 else repr(number)
    return (f"YAML reads {text} as text, not a number: write {mantissa}e{sign or '+'}"
            f"{exponent} or {plain}")


def _range_message(error: jsonschema.ValidationError) -> str:
    """A number out of its bounds: the bounds, and the schema's reason for them."""
    kind = "an integer" if error.schema.get("type") == "integer" else "a number"
    reason = " ".join(str(error.schema.get("description", "")).split())
    return (f"out of bounds; allowed: {kind}{_bounds(error.schema)}"
            + (f" ({reason})" if reason else ""))


def _per_framework_message(error: jsonschema.ValidationError, where: str) -> str:
    """A timing option that is neither a valid value nor one per framework."""
    value = error.instance
    if not isinstance(value, dict):
        scalar = next(e for e in error.context if e.schema_path[0] == 0)
        return f"config key {where} = {value!r}: {_detail(scalar)}"
    allowed = frameworks.names()
    unknown = [name for name in value if name not in allowed]
    if unknown:
        return (f"config key {where}: unknown framework {unknown[0]!r}; allowed: "
                f"{', '.join(allowed)}")
    for sub in error.context:
        if sub.schema_path[0] == 1 and len(sub.relative_path) == 1:
            name = sub.relative_path[0]
            return f"config key {where}.{name} = {value[name]!r}: {_detail(sub)}"
    return f"config key {where} = {value!r}: a number, or one per framework ({', '.join(allowed)})"


def load_schema(schema_path: str | Path) -> dict[str, Any]:
    """The config schema: the file's, with what a preset holds and the sections one may
    choose filled in from the table of sections, so that a section added there is required
    and checked in every preset, and the frameworks allowed and their interpreters' keys
    from the framework registry."""
    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    schema["$defs"]["preset"] = sections.preset_schema()
    schema["properties"]["frameworks"]["items"] = {"enum": frameworks.names()}
    schema["$defs"]["framework"] = {"enum": frameworks.names()}
    schema["properties"]["sections"]["items"] = {"enum": sections.names()}
    for entry in frameworks.REGISTRY.values():
        schema["properties"].setdefault(entry.interpreter_key, {
            "type": "string", "minLength": 1,
            "description": f"interpreter with {entry.package} for the {entry.label} sections"})
    return schema


def check_config(config: Mapping[str, Any], schema_path: str | Path) -> None:
    """Raise ConfigError naming the first wrong key, or the unknown preset. The presets are
    checked as the run takes them: each section's declared entry with the config's keys
    over it (``sections.complete_presets``)."""
    config = {**config, "presets": sections.complete_presets(config.get("presets"))}
    schema = load_schema(schema_path)
    validator = Validator(schema)
    # by where they are; a path may hold a preset named by a number beside named ones
    errors = sorted(validator.iter_errors(dict(config)),
                    key=lambda e: [(isinstance(p, str), p) for p in e.absolute_path])
    if errors:
        raise ConfigError("\n".join(_message(e, schema) for e in errors))
    for name, preset in config["presets"].items():
        for section, options in preset.items():
            first = next((k for k in PAIRED_LISTS if k in options), None)
            keys, what = PAIRED_LISTS[first] if first else ((), "")
            lists = {k: len(options[k]) for k in keys if k in options}
            if len(set(lists.values())) > 1:
                sizes = ", ".join(f"{k} has {n}" for k, n in lists.items())
                raise ConfigError(
                    f"config section presets.{name}.{section}: {', '.join(lists)} must have "
                    f"one entry per {what}, the same number each ({sizes})"
                )
            if options.get("nodes", 1) > max(options.get("device_counts", [1])):
                raise ConfigError(
                    f"config key presets.{name}.{section}.nodes = {options['nodes']}: at most "
                    f"the largest of device_counts ({max(options['device_counts'])}), a "
                    "process a node at least"
                )
            if sections.SECTIONS[section].process_per_device:
                _check_process_per_device(f"presets.{name}.{section}", options, schema)
    running = config.get("frameworks") or frameworks.names()
    for name, preset in config["presets"].items():
        for section, options in preset.items():
            for key in sections.PER_FRAMEWORK:
                value = options.get(key) if isinstance(options, Mapping) else None
                missing = [f for f in running if isinstance(value, dict)
                           and per_framework_value(value, f) is None]
                if missing:
                    raise ConfigError(
                        f"config key presets.{name}.{section}.{key} names no value for "
                        f"{', '.join(missing)} (config key frameworks runs it); name one for "
                        f"each, or a '{sections.DEFAULT}' (a framework not named takes it, "
                        f"else {frameworks.DOCUMENTS}'s value)")
    # machine names the folder this run writes; baseline_machine any folder under
    # results/, a BLAS variant's or a kept archive's included
    for key in ("machine", "baseline_machine"):
        if config.get(key):
            try:
                check_machine_id(config[key], f"config key {key} =", own=key == "machine")
            except MachineIdError as error:
                raise ConfigError(f"{error} (or empty)") from None
    presets = sorted(config["presets"])
    if config["preset"] not in presets:
        raise ConfigError(
            f"unknown preset {config['preset']!r} (config key 'preset'); "
            f"allowed: {', '.join(presets)}"
        )


def _words(counts: list[int]) -> str:
    """1, 2 and 4."""
    if len(counts) == 1:
        return str(counts[0])
    return f"{', '.join(map(str, counts[:-1]))} and {counts[-1]}"


def _check_process_per_device(where: str, options: Mapping[str, Any],
                              schema: Mapping[str, Any]) -> None:
    """What the data-parallel worker refuses (d2lperf.groups.check, and its share of the
    data), refused here naming the config key: images that do not split into whole steps
    of batch_size on every device count (every count alike, so that machines compare), a
    training set (train_limit, else all of Fashion-MNIST's) that leaves a device of the
    largest count less than one batch. The preset has passed the schema, its lists paired."""
    outside = sections.models_outside(options["models"], options.get("cpu_models"))
    if outside:
        raise ConfigError(
            f"config key {where}.cpu_models = {options['cpu_models']!r}: {outside[0]} is not "
            f"one of the models trained (models = {options['models']!r}); allowed: some of "
            f"{options['models']!r}")
    counts = sorted(set(options["device_counts"]))
    batch = options["batch_size"]
    step = sections.images_step(batch, counts)
    for model, images in zip(options["models"], options["images"]):
        if images % step:
            raise ConfigError(
                f"config key {where}.images = {options['images']!r}: {images} images of "
                f"{model} do not split into whole steps of {batch} images (batch_size) on "
                f"each of {_words(counts)} devices (device_counts); allowed: a multiple of "
                f"{step}")
    largest = counts[-1]
    limit = options.get("train_limit")
    if limit is not None and limit // largest < batch:
        raise ConfigError(
            f"config key {where}.train_limit = {limit}: leaves each of {largest} devices "
            f"(device_counts) {limit // largest} images, less than one batch of {batch} "
            f"(batch_size); allowed: at least {batch * largest}")
    everything = schema["$defs"]["train_limit"]["maximum"]
    if limit is None and everything // largest < batch:
        raise ConfigError(
            f"config key {where}.device_counts = {options['device_counts']!r}: "
            f"Fashion-MNIST's {everything} training images (train_limit not set) leave each "
            f"of {largest} devices {everything // largest} images, less than one batch of "
            f"{batch} (batch_size); allowed: at most {everything // batch} devices")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_threads(threads: int | str, available: int) -> None:
    """Refuse more threads than this process may run on: each timing would share cores."""
    if threads != "auto" and threads > available:
        raise ConfigError(
            f"config key threads = {threads}: more than the {available} cores this run may use; "
            f"allowed: 1 to {available}, or 'auto' (one per core)")


def check_data_dir(data_dir: str) -> None:
    """A configured data_dir must hold the four Fashion-MNIST files, intact: the training
    sections never fall back to another copy behind the config's back."""
    if not data_dir:
        return
    folder = Path(data_dir).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"config key data_dir = {_short(data_dir)}: {folder} is missing: "
                          "no such folder; allowed: a folder with the four Fashion-MNIST .gz "
                          f"files ({', '.join(data.FILES)}), or empty")
    problems = data.verify(folder)
    if problems:
        raise ConfigError(f"config key data_dir = {_short(data_dir)}: " + "; ".join(problems)
                          + "; allowed: a folder with the four Fashion-MNIST .gz files intact,"
                          " or empty")
