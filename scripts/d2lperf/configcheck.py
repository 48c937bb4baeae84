"""Config validation with messages that name the key and what is allowed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from d2lperf import data, frameworks, sections
from d2lperf.machine import MachineIdError, check_machine_id

# One training run per entry: devices[i] devices, batch_sizes[i], learning_rates[i].
TRAINING_LISTS = ("devices", "batch_sizes", "learning_rates")


class ConfigError(ValueError):
    """The config is wrong; the message says which key and what it may be."""


def _where(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _allowed_keys(schema: Mapping[str, Any], root: Mapping[str, Any]) -> list[str]:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = root["$defs"][name]
    return sorted(schema.get("properties", {}))


def _message(error: jsonschema.ValidationError, root: Mapping[str, Any]) -> str:
    where = _where(error.absolute_path)
    if error.validator == "anyOf" and error.absolute_path and (
            error.absolute_path[-1] in sections.PER_FRAMEWORK):
        return _per_framework_message(error, where)
    if (error.validator == "type" and isinstance(error.instance, dict)
            and len(error.absolute_path) == 4 and error.absolute_path[0] == "presets"):
        return (f"config key {where} = {error.instance!r}: one value for every framework (the "
                "frameworks do the same work); only how much is measured may differ by "
                f"framework: {', '.join(sections.PER_FRAMEWORK)}")
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        allowed = ", ".join(_allowed_keys(error.schema, root)) or "none"
        keys = ", ".join(repr(k) for k in extra)
        return f"unknown config key {keys} in {where}; allowed keys there: {allowed}"
    if error.validator == "required":
        return f"config section {where} is missing a key: {error.message}"
    if error.validator == "oneOf" and error.absolute_path and error.absolute_path[-1] == "threads":
        return f"config key {where} = {error.instance!r}: must be a positive integer or 'auto'"
    if error.validator == "type" and error.validator_value == "boolean":
        return (f"config key {where} = {error.instance!r}: must be true or false "
                "(on Snakemake's command line: True or False)")
    return f"config key {where} = {error.instance!r}: {error.message}"


def _per_framework_message(error: jsonschema.ValidationError, where: str) -> str:
    """A timing option that is neither a valid value nor one per framework."""
    value = error.instance
    if not isinstance(value, dict):
        scalar = next(e for e in error.context if e.schema_path[0] == 0)
        return f"config key {where} = {value!r}: {scalar.message}"
    allowed = frameworks.names()
    unknown = [name for name in value if name not in allowed]
    if unknown:
        return (f"config key {where}: unknown framework {unknown[0]!r}; allowed: "
                f"{', '.join(allowed)}")
    for sub in error.context:
        if sub.schema_path[0] == 1 and len(sub.relative_path) == 1:
            name = sub.relative_path[0]
            return f"config key {where}.{name} = {value[name]!r}: {sub.message}"
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
    """Raise ConfigError naming the first wrong key, or the unknown preset."""
    schema = load_schema(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError("\n".join(_message(e, schema) for e in errors))
    for name, preset in config["presets"].items():
        for section, options in preset.items():
            lists = {k: len(options[k]) for k in TRAINING_LISTS if k in options}
            if len(set(lists.values())) > 1:
                sizes = ", ".join(f"{k} has {n}" for k, n in lists.items())
                raise ConfigError(
                    f"config section presets.{name}.{section}: {', '.join(lists)} must have "
                    f"one entry per training run, the same number each ({sizes})"
                )
    running = config.get("frameworks") or frameworks.names()
    for name, preset in config["presets"].items():
        for section, options in preset.items():
            for key in sections.PER_FRAMEWORK:
                value = options.get(key) if isinstance(options, Mapping) else None
                missing = [f for f in running if isinstance(value, dict) and f not in value]
                if missing:
                    raise ConfigError(
                        f"config key presets.{name}.{section}.{key} names no value for "
                        f"{', '.join(missing)} (config key frameworks runs it); name one for "
                        f"each of: {', '.join(running)}")
    for key in ("machine", "baseline_machine"):
        if config.get(key):
            try:
                check_machine_id(config[key], f"config key {key} =")
            except MachineIdError as error:
                raise ConfigError(f"{error} (or empty)") from None
    presets = sorted(config["presets"])
    if config["preset"] not in presets:
        raise ConfigError(
            f"unknown preset {config['preset']!r} (config key 'preset'); "
            f"allowed: {', '.join(presets)}"
        )


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
