"""Machine ceilings in PyTorch: the rates its libraries reach here, beside MXNet's.

The machine's ceiling is the best of every library present, so the report never sets a
timing against a rate another library beats. This twin of ceilings_mxnet.py
measures PyTorch's own:
- float32 ``torch.mm`` (GFLOP/s) on the CPU (MKL in the x86 wheels) at the same sizes,
  and bfloat16 where the CPU has a bfloat16 unit (AVX512_BF16 or AMX: oneDNN's kernels);
- the bandwidth (GB/s) of a large tensor copy on the CPU, counting bytes read and written;
- on each CUDA GPU: ``mm`` in float32, TF32, bfloat16 and float16, the device's own copy
  bandwidth, and host-to-device and device-to-host copies from pinned and pageable memory.
Each precision is a ceiling of its own (``torch_mm_bf16_2048``): the chapter's float32
timings are set against float32 products only.
The GPU code takes any device, so the tests run it on the CPU. Every figure is a rate from
a synchronised, warmed-up, repeated timing; each case names its library and kernel.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import arguments, harness, timing
from d2lperf import torch as d2l
from d2lperf.results import Recorder
from d2lperf.workloads import FLOAT32_BYTES, cpu_precisions, dot_flops, product_case, record_rate

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")


def mm_rates(rec: Recorder, args: argparse.Namespace, device, prefix: str,
             precisions: tuple[str, ...] = ("fp32",)) -> None:
    """``mm`` of n x n for each size and precision; TF32 is float32 inputs with the
    tensor cores' 10-bit products allowed, bf16 bfloat16 inputs, fp16 float16 inputs."""
    import torch

    capability = f"ATen {torch.backends.cpu.get_cpu_capability()}"
    # On the CPU, ATen hands a bfloat16 product to oneDNN where the CPU has a bfloat16
    # unit (its AMX or AVX512_BF16 kernels), a float32 one to the BLAS it was built with.
    kernels = {"cuda": "cuBLAS"} if device.type == "cuda" else {
        "fp32": f"{d2l.build_info().get('blas')}, {capability}",
        "bf16": f"oneDNN, {capability}"}
    for precision in precisions:
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
        allowed = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        try:
            for n in args.dot_sizes:
                a = torch.rand(n, n, device=device).to(dtype)
                b = torch.rand(n, n, device=device).to(dtype)
                case = product_case(prefix, "mm", precision, n)
                samples = timing.measure(lambda a=a, b=b: torch.mm(a, b),
                                         lambda: d2l.sync(device),
                                         warmup=args.warmup, repeats=args.repeats)
                record_rate(rec, case, dot_flops(n), "GFLOP/s", samples, str(device))
                kernel = kernels.get(device.type) or kernels.get(precision, kernels["fp32"])
                rec.notes.setdefault("kernels", {})[case] = f"torch mm ({kernel}, {precision})"
        finally:
            torch.backends.cuda.matmul.allow_tf32 = allowed


def copy_rates(rec: Recorder, args: argparse.Namespace, device, prefix: str,
               host_memory: tuple[str, ...] | None = None) -> None:
    """A copy within the device (read and written: twice its bytes) and copies both ways
    between the host's memory of each kind and the device: pinned and pageable, by
    default where the device is not the host (the tests ask for pageable on the CPU)."""
    import torch

    elements = args.copy_mb * 1_000_000 // FLOAT32_BYTES
    src = torch.ones(elements, device=device)
    dst = torch.empty_like(src)
    nbytes = float(elements * FLOAT32_BYTES)
    samples = timing.measure(lambda: dst.copy_(src), lambda: d2l.sync(device),
                             warmup=args.warmup, repeats=args.repeats)
    record_rate(rec, f"{prefix}_copy", 2 * nbytes, "GB/s", samples, str(device))
    rec.notes.setdefault("kernels", {})[f"{prefix}_copy"] = "torch copy_"
    if host_memory is None:
        host_memory = () if device.type == "cpu" else ("pinned", "pageable")
    for memory in host_memory:
        host = torch.ones(elements, pin_memory=memory == "pinned")
        for case, to, frm in ((f"{prefix}_host_to_device_{memory}", src, host),
                              (f"{prefix}_device_to_host_{memory}", host, src)):
            samples = timing.measure(lambda t=to, f=frm: t.copy_(f, non_blocking=True),
                                     lambda: d2l.sync(device),
                                     warmup=args.warmup, repeats=args.repeats)
            record_rate(rec, case, nbytes, "GB/s", samples,
                        f"cpu->{device}" if "host_to" in case else f"{device}->cpu")
            rec.notes["kernels"][case] = f"torch copy_ ({memory} host memory)"


def body(args: argparse.Namespace, rec: Recorder) -> None:
    import torch

    torch.manual_seed(0)
    cpu = torch.device("cpu")
    mm_rates(rec, args, cpu, "torch", cpu_precisions())
    if "bf16" not in cpu_precisions():
        rec.notes["cpu_bf16"] = ("not measured: the CPU has no bfloat16 unit "
                                 "(neither avx512_bf16 nor amx_bf16)")
    copy_rates(rec, args, cpu, "torch")
    for index in range(d2l.gpu_count()):
        gpu = torch.device("cuda", index)
        mm_rates(rec, args, gpu, f"gpu{index}_torch", PRECISIONS)
        copy_rates(rec, args, gpu, f"gpu{index}_torch")
    if not d2l.gpu_count():
        rec.notes["gpu_ceilings"] = "not measured: no CUDA GPU visible to PyTorch"


if __name__ == "__main__":
    parser = arguments.ceilings_parser(__doc__.splitlines()[0])
    sys.exit(harness.main("ceilings", "pytorch", parser, body))
