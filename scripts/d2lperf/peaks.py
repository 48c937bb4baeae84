"""The GPU datasheets' peaks, as data (report/gpu_peaks.csv): dense TFLOP/s per precision,
memory bandwidth and the host link, with the datasheet each came from (docs/design.md,
"Ceilings and BLAS"). The report sets the ceilings measured here against them.

NVIDIA prints its TF32, BF16 and FP16 tensor figures "with sparsity" (2:4 structured),
twice the dense rate a dense matrix product can reach: the table holds the dense ones,
and each row's note says what the datasheet printed.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

PEAKS = Path(__file__).resolve().parents[2] / "report/gpu_peaks.csv"
NUMBERS = ("fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "memory_tb_s",
           "host_gb_s_each_way")
COLUMNS = ("gpu", "names", *NUMBERS, "host_link", "source", "note")


def datasheet(gpu_name: str, path: str | Path = PEAKS) -> dict[str, Any] | None:
    """The datasheet row of a GPU named as machine.json records it (nvidia-smi's name,
    "NVIDIA H200"): the first row whose ``names`` (a regular expression, matched whole,
    case ignored) matches it, its figures as numbers (None where empty); None for a GPU
    the table does not hold. A malformed table raises ValueError naming the row."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for number, row in enumerate(rows, start=2):
        missing = [c for c in COLUMNS if c not in row]
        if missing or not row["names"] or not row["source"]:
            raise ValueError(f"{path}: row {number}: needs {', '.join(COLUMNS)}, "
                             "with names and source filled in")
        if not re.fullmatch(row["names"], gpu_name.strip(), re.IGNORECASE):
            continue
        found: dict[str, Any] = dict(row)
        for column in NUMBERS:
            try:
                found[column] = float(row[column]) if row[column] else None
            except ValueError:
                raise ValueError(f"{path}: row {number}: {column} is not a number: "
                                 f"{row[column]!r}") from None
        return found
    return None
