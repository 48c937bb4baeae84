"""How a section says it will not report figures on this machine: a leaf, so that the
framework modules and the harness both raise and catch the same classes."""

from __future__ import annotations

# What a skipped section needs that the machine lacks, as the run record's ``needs``
# field: the report says how to run it elsewhere from the field, never from the words.
NEEDS_GPUS = "gpus"  # more GPUs than the machine has
NEEDS_GPU_CODE = "gpu_code"  # GPUs the installed build has code for


class Skipped(Exception):
    """This section cannot run here (for example: needs 2 GPUs, found 0). ``needs``: one
    of the NEEDS_* above where the machine lacks that, else None."""

    def __init__(self, reason: str, needs: str | None = None) -> None:
        super().__init__(reason)
        self.needs = needs


class Refused(Skipped):
    """This section will not report figures: its BLAS computes something else."""
