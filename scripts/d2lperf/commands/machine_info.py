"""Write machine.json: the hardware, OS, GPUs, and the MXNet environment's software.

Runs in the MXNet environment so that it records the MXNet build (version,
features, the BLAS it loaded) that the timings actually used, and the preflight:
for each GPU whether that build has code for it (read from its libmxnet.so) and
whether a smoke test ran on it (d2lperf.mxnet_gpu.preflight).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from d2lperf import hostlock, machine, mxnet_gpu, provenance
from d2lperf.mxnet import build_info as mxnet_build
from d2lperf.results import write_json


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--machine", required=True, help="the machine id naming the results folder")
    p.add_argument("--out", required=True, help="machine.json to write")
    p.add_argument("--smoke-timeout", type=float, default=180,
                   help="seconds each GPU's MXNet smoke test may take (default: 180)")
    args = p.parse_args(argv)
    # never beside a timing of any run (it runs MXNet's smoke test on each GPU)
    hostlock.share("machine-info")

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
        "mxnet_gpu_settings": provenance.mxnet_gpu_settings(),
        "mxnet_gpu_support": mxnet_gpu.preflight(timeout=args.smoke_timeout),
    }
    write_json(args.out, facts)
    for gpu in facts["mxnet_gpu_support"]["gpus"]:
        smoke = gpu["smoke_test"]
        failed = f"; its smoke test failed: {smoke['error']}" if smoke["ok"] is False else ""
        print(f"GPU {gpu['index']}: {'usable' if gpu['usable'] else 'not usable'} by MXNet: "
              f"{gpu['reason']}{failed if gpu['supported'] else ''}")
    print(f"wrote {args.out} for machine {args.machine}")
    return 0

