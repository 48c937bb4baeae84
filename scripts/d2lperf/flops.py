"""The FLOPs per example of the models the training sections train (report/model_flops.csv).

Counted once per architecture by ``d2lperf count-flops`` (PyTorch's
``FlopCounterMode`` on the very LeNet and ResNet-18 the PyTorch twins train, one forward
and one backward pass), and kept as data: every framework's twin trains the same
architecture on the same 1x28x28 images, so one count holds for all of them, and the
summary turns each timed epoch into images/s, GFLOP/s and a share of the matrix-product
ceiling without a worker counting anything. ``tests/test_model_flops.py`` recounts the
table with torch, so it cannot go stale.
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

TABLE = Path(__file__).resolve().parents[2] / "report" / "model_flops.csv"
COLUMNS = ("model", "input_shape", "forward_flops", "backward_flops", "train_flops",
           "counted_with")


@cache
def table(path: Path = TABLE) -> dict[str, dict[str, str]]:
    """The table's rows by model name."""
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["model"]: row for row in csv.DictReader(handle)}


def train_flops(model: str) -> float:
    """FLOPs of one training example: its forward and backward passes."""
    return float(table()[model]["train_flops"])
