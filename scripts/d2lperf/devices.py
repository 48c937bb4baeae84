"""The ``--on`` option of the sections written for GPUs, in every framework: the GPUs,
or CPU stand-ins (docs/design.md, "GPUs when present"). Which devices that gives is each framework's
own: ``d2lperf.mxnet.devices``, ``d2lperf.torch.devices``.
"""

from __future__ import annotations

import argparse

KINDS = ("gpu", "cpu")


def add_argument(parser: argparse.ArgumentParser, default: str = "gpu") -> None:
    parser.add_argument("--on", choices=KINDS, default=default,
                        help=f"device kind for the section's GPU contexts (default: {default})")


def execution(kind: str, *, queues_on: tuple[str, ...],
              separate_on: tuple[str, ...]) -> dict[str, object]:
    """What a run record says about where the work ran (``execution``): the device kind,
    whether the framework queues work there (a call returns before its work is done)
    and whether its devices there are separate devices (not one under several names).
    The claims are judged only where what they are about happens (d2lperf.claims)."""
    return {"device_kind": kind, "queues_work": kind in queues_on,
            "separate_devices": kind in separate_on}
