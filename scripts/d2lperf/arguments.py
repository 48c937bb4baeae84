"""The command line every section script shares: argument types that name what they
allow, the usage error argparse would give, and ``parser`` with the common options and a
section's workload options.

A section declares its options once (``d2lperf.sections``): their JSON schema and the
documents' preset. ``add_options`` makes the command line from that declaration, a flag
per option its script takes, its type, bounds and choices from the option's schema and
its default the documents' value: a script run by hand reproduces the documents, and the
presets set the same flags in a pipeline run (``plan.arguments``).

A leaf of the library: it knows no framework and runs nothing."""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from d2lperf import devices, sections


def _integer(text: str, lowest: int, wanted: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}") from None
    if value < lowest:
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: 1 or more."""
    return _integer(text, 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """An argparse type: 0 or more."""
    return _integer(text, 0, "zero or more")


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0 (a learning rate, a probe's seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def positive_fraction(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1 (a practical band)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}") \
            from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}")
    return value


def usage_error(message: str) -> None:
    """End the script as argparse does on a bad option: the message on stderr, exit 2."""
    print(f"{Path(sys.argv[0]).name}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


# The config schema: its ``$defs`` hold the pieces a section's options refer to
# (``sections.COUNT`` is ``{"$ref": "#/$defs/count"}``).
CONFIG_SCHEMA = Path(__file__).resolve().parents[2] / "workflow/schemas/config.schema.yaml"
# An integer option's argparse type, by the minimum its schema sets.
INTEGER_TYPES: dict[int, Callable[[str], int]] = {0: non_negative_int, 1: positive_int}


@functools.cache
def definitions() -> dict[str, Any]:
    """The config schema's ``$defs``, read once: what a section's ``$ref`` names."""
    import yaml  # every environment has it; read only where a command line is built

    return yaml.safe_load(CONFIG_SCHEMA.read_text(encoding="utf-8"))["$defs"]


def resolved(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$ref`` replaced by the definition it names, its own keys
    over the definition's (a description beside a reference is the option's own)."""
    found = dict(schema)
    while "$ref" in found:
        name = found.pop("$ref").rsplit("/", 1)[-1]
        found = {**definitions()[name], **found}
    return found


def _kind(schema: Mapping[str, Any]) -> str | None:
    """A schema's type; of ``{"type": ["integer", "null"]}`` the integer (null is the flag
    left out, its default None)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        return next((k for k in kind if k != "null"), None)
    return kind


def value_type(schema: Mapping[str, Any]) -> Callable[[str], Any]:
    """The argparse type of one value of an option, from its schema: an integer's by its
    minimum (``INTEGER_TYPES``), a number above 0 ``positive_float``; TypeError for a
    schema no type here checks, so that no flag takes what the config check refuses."""
    kind = _kind(schema)
    if kind == "integer" and schema.get("minimum") in INTEGER_TYPES:
        return INTEGER_TYPES[schema["minimum"]]
    if kind == "number" and schema.get("exclusiveMinimum") == 0:
        return positive_float
    raise TypeError(f"no command-line type checks an option of schema {dict(schema)}")


def shown(value: Any) -> str:
    """A value as its flag takes it: a list's items apart (``[1, 2]`` -> ``1 2``)."""
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


def flag_default(schema: Mapping[str, Any], documents: Any) -> Any:
    """An option's default on the command line: the documents' value; None where the
    documents leave the option out (the script's own choice, which its description says).
    A schema's own ``default`` goes first: an option whose absence means something of its
    own (``cpu_models``: every model) keeps that meaning on the command line too, where a
    config's null leaves it out."""
    value = schema.get("default", documents)
    return list(value) if isinstance(value, list) else value


def option_argument(schema: Mapping[str, Any], documents: Any) -> dict[str, Any]:
    """``add_argument``'s keywords for one option: its type, or its choices, from its
    schema (an array: one value or more, each its items'), its default
    (``flag_default``), its help the schema's description and the documents' value."""
    schema = resolved(schema)
    many = _kind(schema) == "array"
    one = resolved(schema["items"]) if many else schema
    meaning = " ".join(str(schema.get("description", "")).split()).replace("%", "%%")
    keywords: dict[str, Any] = {
        "default": flag_default(schema, documents),
        "help": meaning if documents is None else f"{meaning} (documents: {shown(documents)})"}
    if many:
        keywords["nargs"] = "+"
    if "enum" in one:
        keywords["choices"] = list(one["enum"])
    else:
        keywords["type"] = value_type(one)
    return keywords


def option_schemas(section: str) -> dict[str, Any]:
    """The schema of each of a section's options, by key, in the order declared (a whole
    schema given by reference, the training sections' ``TRAINING``, resolved)."""
    return dict(resolved(sections.SECTIONS[section].options_schema())["properties"])


def option_keys(section: str, framework: str | None = None) -> list[str]:
    """The options of ``section`` that ``framework``'s script takes as flags of its own
    (``Section.takes``; None: those every framework's script takes), in the order
    declared."""
    entry = sections.SECTIONS[section]
    return [key for key in option_schemas(section) if entry.takes(key, framework)]


def add_options(p: argparse.ArgumentParser, section: str,
                framework: str | None = None) -> None:
    """The section's workload flags, made from its declaration, on ``p`` (a parser or one
    of its groups): a flag per option its ``framework``'s script takes (``option_keys``),
    typed and bounded by the option's schema, its default the documents' preset's value
    (``option_argument``)."""
    documents = sections.SECTIONS[section].presets.get("documents", {})
    schemas = option_schemas(section)
    for key in option_keys(section, framework):
        p.add_argument(sections.flag(key), **option_argument(schemas[key], documents.get(key)))


# The manager's defaults (d2lperf.manager): the documents' preset's budget and band.
DEFAULT_BUDGET_S = 180.0
DEFAULT_BAND = 0.05


def parser(description: str, *, repeated: bool = True, section: str | None = None,
           framework: str | None = None) -> argparse.ArgumentParser:
    """The common arguments; ``repeated=False`` for sections whose samples are epochs;
    ``section``: that section's workload options too, made from its declaration
    (``add_options``; ``framework``: the script's, where it takes an option the others do
    not)."""
    p = argparse.ArgumentParser(description=description)
    if section:
        add_options(p, section, framework)
    out = p.add_argument_group("outputs")
    out.add_argument("--csv", required=True, help="tidy CSV of raw samples to write")
    out.add_argument("--sidecar", required=True, help="JSON run record to write")
    timing = p.add_argument_group("timing")
    timing.add_argument("--threads", type=positive_int, default=1,
                        help="OpenMP/BLAS threads, set before the framework loads (default: 1)")
    timing.add_argument("--blas-reference", type=Path,
                        help="stock-BLAS dot to match before timing (runs on another BLAS)")
    timing.add_argument("--blas-probe-size", type=positive_int, default=None,
                        help="side of the matrix product checked against float64 before any "
                             "timing (default: d2lperf.blas.PROBE_SIZE, the documents' 2000)")
    timing.add_argument("--probe-seconds", type=positive_float, default=0.2,
                        help="length of the steadiness probe run before and after (default: 0.2)")
    if repeated:
        timing.add_argument("--warmup", type=non_negative_int, default=1,
                            help="untimed runs of every case before the timed ones (default: 1)")
        timing.add_argument("--repeats", type=positive_int, default=5,
                            help="rounds per process: timed runs of every case, side by side; "
                                 "every one is kept (default: 5)")
        timing.add_argument("--seed", type=non_negative_int, default=0,
                            help="seed of the cases' balanced orders (default: 0)")
    # which fresh process of its section this is: set by the manager (d2lperf.manager),
    # which then holds the host's lock and measures the machine's steadiness itself
    timing.add_argument("--process", type=non_negative_int, default=None,
                        help=argparse.SUPPRESS)
    return p


def ceilings_parser(description: str) -> argparse.ArgumentParser:
    """The ceilings sections' command line (every framework measures the same sizes)."""
    return parser(description, section="ceilings")


def two_gpu_parser(description: str) -> argparse.ArgumentParser:
    """Automatic parallelism's command line in the twins that also run d2l's PyTorch
    edition's two-GPU variant (each GPU multiplies a matrix of its own)."""
    p = parser(description, section="auto_parallelism")
    p.add_argument("--pair-size", type=positive_int, default=4000,
                   help="matrix side of the two-GPU variant (d2l's PyTorch edition: 4000)")
    p.add_argument("--pair-dots", type=positive_int, default=50,
                   help="products per GPU in the two-GPU variant (d2l's PyTorch edition: 50)")
    devices.add_argument(p)
    return p
