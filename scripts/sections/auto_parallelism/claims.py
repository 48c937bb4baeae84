"""The section's claims: CPU and GPU work overlap; computing and copying overlap (the
overlap rule, ``d2lperf.claims.overlap_claim``).

Judging, not measuring: ``d2lperf.claims`` loads this file (the workers never do)."""

from __future__ import annotations

from d2lperf.applicability import WHERE_WORK_IS_QUEUED
from d2lperf.claims import OVERLAP_RULE, Claim, overlap_claim
from d2lperf.measurements import Measurements

SECTION = "auto_parallelism"


def cpu_and_gpu_overlap(m: Measurements):
    return overlap_claim(m, SECTION, "cpu_only", "gpu_only", "cpu_and_gpu")


def compute_and_copy_overlap(m: Measurements):
    return overlap_claim(m, SECTION, "gpu_compute", "copy_to_cpu", "compute_and_copy")


CLAIMS = [
    Claim("cpu_gpu_overlap", SECTION,
          "CPU and GPU work overlap: together takes close to the longer, not the sum",
          cpu_and_gpu_overlap, OVERLAP_RULE, WHERE_WORK_IS_QUEUED,
          short="CPU and GPU work overlap", form="overlap",
          figures=("cpu_and_gpu", "cpu_only+gpu_only")),
    Claim("compute_copy_overlap", SECTION,
          "computation and copying to the CPU overlap", compute_and_copy_overlap,
          OVERLAP_RULE, WHERE_WORK_IS_QUEUED, short="computing and copying overlap",
          form="overlap", figures=("compute_and_copy", "gpu_compute+copy_to_cpu")),
]
