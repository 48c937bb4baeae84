"""Machine ceilings in MXNet: what this hardware can do at best, measured in the same run.

A reader must be able to tell a slow machine from a bad measurement, so beside the
chapter's timings the report shows the peak rates they are built on:
- float32 matrix multiply (GFLOP/s) through MXNet's ``nd.dot`` (its bundled BLAS) and
  through numpy's BLAS, at large square sizes;
- memory bandwidth (GB/s) of a large copy, counting the bytes read and written;
- on each GPU, the same ``dot`` rate and the host-to-device and device-to-host copy
  bandwidth.
Every figure is a rate computed from a synchronised, warmed-up, repeated timing, and
names the library and kernel that reached it. The machine's ceiling is the best of these
and of the PyTorch twin's (ceilings_pytorch.py): the report never sets a timing
against one framework's rate when another library here is faster.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import arguments, blas, harness, mxnet_gpu, timing
from d2lperf import mxnet as d2l
from d2lperf.results import Recorder
from d2lperf.workloads import FLOAT32_BYTES, dot_flops, record_rate


def name_kernel(rec: Recorder, case: str, kernel: str) -> None:
    """Which library and kernel reached a ceiling: the report names it beside the rate."""
    rec.notes.setdefault("kernels", {})[case] = kernel


def mxnet_dot(rec: Recorder, args: argparse.Namespace, ctx, case_prefix: str) -> None:
    from mxnet import nd

    for n in args.dot_sizes:
        a = nd.random.uniform(shape=(n, n), ctx=ctx)
        b = nd.random.uniform(shape=(n, n), ctx=ctx)
        samples = timing.measure(lambda a=a, b=b: nd.dot(a, b), d2l.sync,
                                 warmup=args.warmup, repeats=args.repeats)
        record_rate(rec, f"{case_prefix}_dot_{n}", dot_flops(n), "GFLOP/s", samples, str(ctx))
        name_kernel(rec, f"{case_prefix}_dot_{n}", "MXNet dot (" + (
            blas.kernel_of("mxnet") if ctx.device_type == "cpu" else "cuBLAS") + ")")


def numpy_dot(rec: Recorder, args: argparse.Namespace) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    for n in args.dot_sizes:
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        # numpy returns only when the product is done: the call is its own sync
        samples = timing.measure(lambda a=a, b=b: a @ b, lambda: None,
                                 warmup=args.warmup, repeats=args.repeats)
        record_rate(rec, f"numpy_dot_{n}", dot_flops(n), "GFLOP/s", samples, "cpu")
        name_kernel(rec, f"numpy_dot_{n}", f"numpy {np.__version__} matmul "
                                           f"({blas.kernel_of('numpy')})")


def host_copy(rec: Recorder, args: argparse.Namespace) -> None:
    import numpy as np
    from mxnet import nd

    elements = args.copy_mb * 1_000_000 // FLOAT32_BYTES
    src = np.ones(elements, dtype=np.float32)
    dst = np.empty_like(src)
    moved = 2.0 * src.nbytes  # read once, written once
    samples = timing.measure(lambda: np.copyto(dst, src), lambda: None,
                             warmup=args.warmup, repeats=args.repeats)
    record_rate(rec, "numpy_copy", moved, "GB/s", samples, "cpu")
    name_kernel(rec, "numpy_copy", "numpy copyto")
    mx_src, mx_dst = nd.ones(elements), nd.zeros(elements)
    samples = timing.measure(lambda: mx_src.copyto(mx_dst), d2l.sync,
                             warmup=args.warmup, repeats=args.repeats)
    record_rate(rec, "mxnet_copy", moved, "GB/s", samples, "cpu(0)")
    name_kernel(rec, "mxnet_copy", "MXNet copyto")


def gpu_ceilings(rec: Recorder, args: argparse.Namespace) -> None:
    import mxnet as mx
    from mxnet import nd

    unusable = mxnet_gpu.unusable_reason(1)
    if unusable is not None:  # MXNet would stop at its first kernel there
        rec.notes["gpu_ceilings"] = f"not measured: {unusable}"
        return
    for i in range(mx.context.num_gpus()):
        gpu = mx.gpu(i)
        mxnet_dot(rec, args, gpu, f"gpu{i}")
        elements = args.copy_mb * 1_000_000 // FLOAT32_BYTES
        host, device = nd.ones(elements), nd.zeros(elements, ctx=gpu)
        nbytes = float(elements * FLOAT32_BYTES)
        for case, src, dst in ((f"gpu{i}_host_to_device", host, device),
                               (f"gpu{i}_device_to_host", device, host)):
            samples = timing.measure(lambda s=src, d=dst: s.copyto(d), d2l.sync,
                                     warmup=args.warmup, repeats=args.repeats)
            record_rate(rec, case, nbytes, "GB/s", samples, f"cpu(0)->{gpu}"
                        if "host_to" in case else f"{gpu}->cpu(0)")


def body(args: argparse.Namespace, rec: Recorder) -> None:
    import mxnet as mx

    mx.random.seed(0)
    mxnet_dot(rec, args, mx.cpu(0), "mxnet")
    numpy_dot(rec, args)
    host_copy(rec, args)
    gpu_ceilings(rec, args)


if __name__ == "__main__":
    parser = arguments.ceilings_parser(__doc__.splitlines()[0])
    sys.exit(harness.main("ceilings", "mxnet", parser, body))
