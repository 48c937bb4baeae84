"""Measure one section: the manager (d2lperf.manager) runs the section's worker script in
fresh processes of its framework's interpreter and writes its samples and run record.

    .venv/bin/python scripts/measure.py --section hybridize --framework mxnet \
        --script scripts/sections/mxnet/hybridize.py --processes 4 \
        --csv samples.csv --sidecar run.json [worker options ...]

Run in the workflow's environment (scipy judges the stages); the rule of every section
calls it. A section script run by hand measures in one process and judges nothing.
"""

from __future__ import annotations

import sys

from d2lperf import manager

if __name__ == "__main__":
    sys.exit(manager.main())
