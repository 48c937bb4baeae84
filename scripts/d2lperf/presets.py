"""A preset's entries as a section script's command-line options (docs/design.md,
"Each section script is a standalone command line")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from d2lperf import sections
from d2lperf.frameworks import DOCUMENTS

# Preset entries that only one framework's script takes (the others leave them out).
FRAMEWORK_OPTIONS = sections.framework_options()


def for_framework(options: Mapping[str, object], framework: str) -> dict[str, object]:
    """A preset section's entries as ``framework``'s script takes them: those only another
    framework's script takes left out, a value given per framework (``repeats: {mxnet: 10,
    pytorch: 30}``) resolved to this framework's: its own, else the ``default`` entry,
    else the documents' framework's (the config check refuses a value that leaves a
    framework that runs with none of the three)."""
    return {key: per_framework_value(value, framework) if isinstance(value, Mapping) else value
            for key, value in options.items()
            if FRAMEWORK_OPTIONS.get(key, framework) == framework}


def per_framework_value(value: Mapping[str, object], framework: str) -> object:
    """``framework``'s entry of a value per framework, else its fallback; None where there
    is none."""
    for name in (framework, sections.DEFAULT, DOCUMENTS):
        if name in value:
            return value[name]
    return None


def cli_args(options: Mapping[str, Any]) -> list[str]:
    """``{"batch_sizes": [256, 512], "data_download": True}`` ->
    ``["--batch-sizes", "256", "512", "--data-download"]``; False and None are left out."""
    args: list[str] = []
    for key, value in options.items():
        flag = sections.flag(key)
        if isinstance(value, bool):
            args += [flag] if value else []
        elif isinstance(value, list):
            args += [flag, *map(str, value)]
        elif value is not None:
            args += [flag, str(value)]
    return args
