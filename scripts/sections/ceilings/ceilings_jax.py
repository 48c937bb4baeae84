"""Machine ceilings in JAX: the rates XLA reaches here, beside MXNet's and PyTorch's.

The machine's ceiling is the best of every library present, so the report never sets a
timing against a rate another library beats. This twin of ceilings_mxnet.py
measures JAX's own:
- float32 ``jnp.dot`` (GFLOP/s) on the CPU at the same sizes (XLA:CPU's kernel named),
  and bfloat16 where the CPU has a bfloat16 unit (AVX512_BF16 or AMX), recorded whatever
  XLA:CPU makes of it: the report sets it beside float32, so a bfloat16 product that
  XLA:CPU runs slower than float32 (converted, not on the unit) reads as such;
- the bandwidth (GB/s) of a large array copy on the CPU, counting bytes read and written
  (into one array, as MXNet's and PyTorch's: ``copy_step``);
- on each GPU: ``jnp.dot`` in float32, bfloat16 and float16 (each precision a ceiling of
  its own: ``gpu0_jax_dot_fp16_4096``), the device's own copy bandwidth, and
  host-to-device and device-to-host copies (``device_put`` and ``numpy.asarray``: JAX
  takes pageable host memory).
The GPU code takes any device, so the tests run it on the CPU. Every figure is a rate from
a synchronised, warmed-up, repeated timing; each case names its library and kernel.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import arguments, harness, timing
from d2lperf import jax as d2l
from d2lperf.results import Recorder
from d2lperf.workloads import FLOAT32_BYTES, cpu_precisions, dot_flops, product_case, record_rate

PRECISIONS = ("fp32", "bf16", "fp16")


def dot_rates(rec: Recorder, args: argparse.Namespace, device, prefix: str,
              precisions: tuple[str, ...] = ("fp32",)) -> None:
    """``jnp.dot`` of n x n for each size and precision on ``device``."""
    import jax
    import jax.numpy as jnp

    kernel = "cuBLAS" if device.platform == "gpu" else d2l.blas_kernel()
    key = jax.device_put(d2l.seed(0), device)
    for precision in precisions:
        dtype = {"bf16": jnp.bfloat16, "fp16": jnp.float16}.get(precision, jnp.float32)
        for n in args.dot_sizes:
            a = jax.random.uniform(key, (n, n)).astype(dtype)
            b = jax.random.uniform(key, (n, n)).astype(dtype)
            case = product_case(prefix, "dot", precision, n)
            samples = timing.measure(lambda a=a, b=b: jnp.dot(a, b), d2l.sync,
                                     warmup=args.warmup, repeats=args.repeats)
            record_rate(rec, case, dot_flops(n), "GFLOP/s", samples, d2l.names([device]))
            rec.notes.setdefault("kernels", {})[case] = f"jax.numpy.dot ({kernel}, {precision})"


def copy_step(src):
    """A step that copies ``src`` into one destination array on its device and returns it,
    again and again: each call gives XLA the destination back (donated), and XLA writes the
    copy into its memory. ``jnp.copy`` makes a new array each time, and on the CPU a new
    array first touches fresh pages: its 'bandwidth' was an allocation's (5.5 GB/s where
    numpy's copy reads 32 on the build machine). MXNet and PyTorch copy into an existing
    array too."""
    import jax
    import jax.numpy as jnp

    copy_into = jax.jit(lambda dst, new: dst.at[:].set(new), donate_argnums=0)
    dst = jnp.zeros_like(src)  # src's shape, type and device

    def step():
        nonlocal dst
        dst = copy_into(dst, src)
        return dst
    return step


def copy_rates(rec: Recorder, args: argparse.Namespace, device, prefix: str,
               host: bool | None = None) -> None:
    """A copy within the device (read and written: twice its bytes) and, where the device
    is not the host (or ``host`` says so: the tests, on the CPU), copies both ways between
    the host's memory and the device."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    elements = args.copy_mb * 1_000_000 // FLOAT32_BYTES
    src = jax.device_put(jnp.ones(elements, dtype=jnp.float32), device)
    nbytes = float(elements * FLOAT32_BYTES)
    where = d2l.names([device])
    samples = timing.measure(copy_step(src), d2l.sync, warmup=args.warmup,
                             repeats=args.repeats)
    record_rate(rec, f"{prefix}_copy", 2 * nbytes, "GB/s", samples, where)
    rec.notes.setdefault("kernels", {})[f"{prefix}_copy"] = (
        "jax.jit(dst.at[:].set(src)), dst donated: a copy into one array")
    if not (device.platform != "cpu" if host is None else host):
        return
    on_host = np.ones(elements, dtype=np.float32)
    out: list = []  # what device_put returned, until its sync has run
    for case, step, sync in (
            (f"{prefix}_host_to_device_pageable",
             lambda: out.append(jax.device_put(on_host, device)), lambda: d2l.sync(out.pop())),
            (f"{prefix}_device_to_host_pageable", lambda: np.asarray(src), lambda: None)):
        samples = timing.measure(step, sync, warmup=args.warmup, repeats=args.repeats)
        record_rate(rec, case, nbytes, "GB/s", samples,
                    f"cpu->{where}" if "host_to" in case else f"{where}->cpu")
        rec.notes["kernels"][case] = "jax device_put / numpy.asarray (pageable host memory)"


def body(args: argparse.Namespace, rec: Recorder) -> None:
    cpu = d2l.devices("cpu", 1)[0]
    dot_rates(rec, args, cpu, "jax", cpu_precisions())
    if "bf16" not in cpu_precisions():
        rec.notes["cpu_bf16"] = ("not measured: the CPU has no bfloat16 unit "
                                 "(neither avx512_bf16 nor amx_bf16)")
    copy_rates(rec, args, cpu, "jax")
    count = d2l.gpu_count()
    for index, gpu in enumerate(d2l.devices("gpu", count) if count else []):
        dot_rates(rec, args, gpu, f"gpu{index}_jax", PRECISIONS)
        copy_rates(rec, args, gpu, f"gpu{index}_jax")
    if not count:
        rec.notes["gpu_ceilings"] = "not measured: no GPU visible to JAX"


if __name__ == "__main__":
    parser = arguments.ceilings_parser(__doc__.splitlines()[0])
    sys.exit(harness.main("ceilings", "jax", parser, body))
