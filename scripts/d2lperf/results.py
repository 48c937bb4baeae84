"""Tidy result rows, printed outputs and the JSON sidecar of one experiment run.

One CSV row per measured sample (DESIGN.md decision 3); statistics are computed
downstream from the raw rows, never stored instead of them. Files are written
atomically so that an interrupted run never leaves half a table behind.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

COLUMNS = ("experiment", "case", "metric", "unit", "repeat", "value", "epoch", "devices")


class Recorder:
    """Collects one experiment's samples, printed outputs and artifacts as it runs."""

    def __init__(self, experiment: str) -> None:
        self.experiment = experiment
        self.rows: list[dict[str, Any]] = []
        self.outputs: dict[str, dict[str, Any]] = {}
        self.artifacts: list[str] = []
        self.notes: dict[str, Any] = {}

    def samples(
        self,
        case: str,
        metric: str,
        unit: str,
        values: Sequence[float],
        *,
        epoch: int | None = None,
        devices: str | None = None,
    ) -> None:
        """Record every raw sample of one case, numbered by repeat."""
        for repeat, value in enumerate(values):
            self.rows.append(
                {
                    "experiment": self.experiment,
                    "case": case,
                    "metric": metric,
                    "unit": unit,
                    "repeat": repeat,
                    "value": float(value),
                    "epoch": "" if epoch is None else epoch,
                    "devices": "" if devices is None else devices,
                }
            )

    def output(self, name: str, text: str, values: Any = None) -> None:
        """Record a printed output: the text as printed, and its numbers when it has any."""
        entry: dict[str, Any] = {"text": text}
        if values is not None:
            entry["values"] = values
        self.outputs[name] = entry


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_csv(path: str | Path, rows: Iterable[dict[str, Any]]) -> None:
    def write(handle):
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)

    _atomic_write(Path(path), write)


def write_json(path: str | Path, data: dict[str, Any]) -> None:
    _atomic_write(Path(path), lambda h: h.write(json.dumps(data, indent=2, sort_keys=True) + "\n"))


def read_json(path: str | Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
