"""One line per case for a section's log: its median over the samples just taken."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from d2lperf.stats import Stats


def medians(samples: Iterable[Any], *, detail: str = "") -> dict[str, float]:
    """Print and return each case's median time (samples: timing.Sample, in order)."""
    by_case: dict[str, list[float]] = {}
    for sample in samples:
        by_case.setdefault(sample.case, []).append(sample.value)
    found = {}
    for case, values in by_case.items():
        found[case] = Stats(values).median
        print(f"{case}: median {found[case]:.4f} s over {len(values)} rounds{detail}",
              flush=True)
    return found
