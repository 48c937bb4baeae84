"""Human labels of the cases the documents did not print (each section's labels.csv, in
its folder, scripts/sections/<section>/).

The documents' own figures carry their labels in the section's reference.csv; a case
measured here beyond them (an A/A twin, a training loss, a PyTorch-only variant) is
labelled by the first row of its section's labels.csv that names it: an exact case before
a pattern (``lenet_*``), and a more specific pattern (more characters that are not ``*``)
before a wider one, so
``torch_mm_bf16_*`` labels ``torch_mm_bf16_2048`` wherever ``torch_mm_*`` stands.
In a label, ``{suffix}`` is the case's last ``_`` part, ``{epoch}`` its epoch,
``{devices}`` the devices of a ``<model>_<n>_device(s)`` case ("2 devices") and ``{case}`` the
case itself; a label with ``{epoch}`` fits per-epoch rows only.
"""

from __future__ import annotations

import csv
import fnmatch
import re
from pathlib import Path
from typing import Any

COLUMNS = ("section", "case", "metric", "label")


class Labels:
    def __init__(self, rows: list[dict[str, str]]) -> None:
        for number, row in enumerate(rows, start=2):
            missing = [c for c in COLUMNS if not row.get(c)]
            if missing:
                raise ValueError(f"labels row {number}: empty {', '.join(missing)}; "
                                 f"every row needs {', '.join(COLUMNS)}")
        # exact names before patterns, the most specific pattern first, else in file order
        self.rows = sorted(rows, key=lambda r: ("*" in r["case"],
                                                -len(r["case"].replace("*", ""))
                                                if "*" in r["case"] else 0))

    @classmethod
    def read(cls, *paths: str | Path) -> Labels:
        """The labels of every table given, in order (each section's own labels.csv:
        ``sections.tables("labels")``)."""
        rows = []
        for path in paths:
            with open(path, newline="", encoding="utf-8") as handle:
                rows += list(csv.DictReader(handle))
        return cls(rows)

    def __call__(self, section: str, case: str, metric: str,
                 epoch: Any = None) -> str | None:
        """The label of one case, or None when labels.csv has none for it."""
        for row in self.rows:
            if (row["section"] != section or row["metric"] != metric
                    or not fnmatch.fnmatchcase(case, row["case"])):
                continue
            per_epoch = "{epoch}" in row["label"]
            if per_epoch != (epoch is not None):
                continue
            count = re.search(r"_(\d+_devices?)$", case)
            return row["label"].format(suffix=case.rsplit("_", 1)[-1], case=case,
                                       epoch="" if epoch is None else int(epoch),
                                       devices=count.group(1).replace("_", " ") if count else "")
        return None
