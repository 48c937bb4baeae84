"""How a section says it will not report figures on this machine: a leaf, so that the
framework modules and the harness both raise and catch the same classes."""

from __future__ import annotations


class Skipped(Exception):
    """This section cannot run here (for example: needs 2 GPUs, found 0)."""


class Refused(Skipped):
    """This section will not report figures: its BLAS computes something else."""
