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


