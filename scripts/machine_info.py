"""Write machine.json: the hardware, OS, GPUs, and the experiment environment's software.

Runs in the experiment environment so that it records the MXNet build (version,
features, the BLAS it loaded) that the timings actually used.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import machine, provenance
from d2lperf.experiment import mxnet_build
from d2lperf.results import write_json


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--machine", required=True, help="the machine id naming the results folder")
    p.add_argument("--out", required=True, help="machine.json to write")
    args = p.parse_args()

    try:
        import numpy

        software = {"numpy": numpy.__version__, "mxnet": mxnet_build()}
    except ImportError as error:  # no MXNet: the report still shows the machine, and why
        software = {"numpy": None, "mxnet": {"version": None, "error": str(error)}}
    facts = {
        "machine": args.machine,
        "derived_machine_id": machine.machine_id(),
        "recorded": provenance.now(),
        **machine.hardware_facts(),
        "software": {"python": provenance.run_context()["python"], **software},
        "threads_environment": provenance.thread_settings(),
    }
    write_json(args.out, facts)
    print(f"wrote {args.out} for machine {args.machine}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
