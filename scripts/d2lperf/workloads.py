"""How much work a timed case does, so its time becomes a rate beside the ceiling.

For every timing built on ``dot`` or on copies, and every training epoch, the achieved
rate (GFLOP/s or GB/s) and its fraction of this machine's measured ceiling
(scripts/sections/ceilings/) tell a slow machine from a bad measurement. A rate is
set against ceilings of its own precision only: the chapter's timings are float32, so a
bfloat16, float16 or TF32 product is a ceiling of its own, never a float32 figure's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from d2lperf import flops, machine
from d2lperf.sections import SECTIONS, Copies, Dots

FLOAT32_BYTES = 4
# Fashion-MNIST's training set: an epoch trains on all of it, or on --train-limit images.
TRAIN_EXAMPLES = 60_000
# The models each training section trains (its declaration's ``models``); its cases are
# <model>_<n>_device(s). An epoch case trains an epoch's images; a case of a section with a
# process per device a fixed number per sample.
TRAINING_MODELS = {s.name: s.models for s in SECTIONS.values() if s.models}
PER_SAMPLE = tuple(s.name for s in SECTIONS.values() if s.process_per_device)
# CPU flags that give bfloat16 products a unit of their own (AVX512_BF16's dot products,
# AMX's tiles): there a bfloat16 ceiling is measured beside float32.
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_precisions(flags: set[str] | None = None) -> tuple[str, ...]:
    """The precisions of the CPU's matrix-product ceilings: float32, and bfloat16 where
    the CPU has a bfloat16 unit (elsewhere bfloat16 is converted to float32 and back,
    work that no figure of the chapter does)."""
    flags = machine.cpu_flags() if flags is None else flags
    return ("fp32", "bf16") if any(f in flags for f in BF16_CPU_FLAGS) else ("fp32",)


def precision_of(case: str) -> str | None:
    """A matrix-product ceiling's precision, read from its name (``product_case``); None
    for a ceiling that is not a product (a copy)."""
    found = re.fullmatch(r".*_(?:dot|mm)(?:_(tf32|bf16|fp16))?_\d+", case)
    return (found.group(1) or "fp32") if found else None


def product_case(prefix: str, product: str, precision: str, n: int) -> str:
    """A matrix-product ceiling's name: ``torch_mm_2048`` in float32, else the precision
    before the size (``torch_mm_bf16_2048``, ``gpu0_torch_mm_fp16_4096``)."""
    return (f"{prefix}_{product}_{n}" if precision == "fp32"
            else f"{prefix}_{product}_{precision}_{n}")


def dot_gflop(n: int, count: int = 1) -> float:
    return 2.0 * n**3 * count / 1e9


def dot_flops(n: int) -> float:
    return dot_gflop(n) * 1e9


def record_rate(rec: Any, case: str, amount: float, unit: str, seconds: list[float],
                devices: str) -> None:
    """A ceiling's raw times, and the rate each one gives (both frameworks' ceilings)."""
    from d2lperf.describe import Stats

    rates = [amount / s / 1e9 for s in seconds]
    rec.samples(case, "time", "s", seconds, devices=devices)
    rec.samples(case, "rate", unit, rates, devices=devices)
    print(f"{case}: median {Stats(rates).median:.1f} {unit} on {devices}", flush=True)


def work(section: str, case: str, parameters: Mapping[str, Any]) -> tuple[float, str] | None:
    """(amount, "GFLOP" or "GB") that one sample of this case performs, where known: as its
    section declares it (``Section.work``), or a training case's model's FLOPs."""
    entry = SECTIONS.get(section)
    matrices = entry.work.get(case) if entry else None
    if isinstance(matrices, Dots):
        return dot_gflop(parameters[matrices.side], matrices.times(parameters)), "GFLOP"
    if isinstance(matrices, Copies):
        side = parameters[matrices.side]
        return matrices.times(parameters) * side**2 * FLOAT32_BYTES / 1e9, "GB"
    model = training_model(section, case)
    if model:
        return flops.train_flops(model) * examples(section, model, parameters) / 1e9, "GFLOP"
    return None


def training_case(case: str) -> tuple[str, int] | None:
    """A training case's model and device count (``lenet_2_devices``: lenet, 2)."""
    found = re.fullmatch(r"(\w+?)_(\d+)_devices?", case)
    return (found.group(1), int(found.group(2))) if found else None


def training_model(section: str, case: str) -> str | None:
    """The model a training section's case trains (``lenet_2_devices``: LeNet)."""
    found = training_case(case)
    return found[0] if found and found[0] in TRAINING_MODELS.get(section, ()) else None


def examples(section: str, model: str, parameters: Mapping[str, Any]) -> int:
    """The images one sample of a training case trains on: a data-parallel sample's
    fixed number (``--images``, per model), else an epoch's."""
    if section in PER_SAMPLE:
        return int(parameters["images"][parameters["models"].index(model)])
    return examples_per_epoch(parameters)


def examples_per_epoch(parameters: Mapping[str, Any]) -> int:
    """The images one epoch trains on: all of Fashion-MNIST's, or the first --train-limit."""
    limit = parameters["train_limit"]
    return min(limit, TRAIN_EXAMPLES) if limit else TRAIN_EXAMPLES


def examples_per_second(section: str, case: str, achieved_gflops: float) -> float | None:
    """A training epoch's images per second, from its achieved GFLOP/s."""
    model = training_model(section, case)
    return achieved_gflops * 1e9 / flops.train_flops(model) if model else None


# A figure at this share of the machine's best ceiling or above is at the limit: the
# hardware, not the framework, bounds it (the overview marks it).
AT_LIMIT = 0.8


def gpus_of(devices: str) -> list[str]:
    """The GPU indices a row's devices name, in order, once each: MXNet names a GPU
    gpu(0), PyTorch and JAX cuda:0."""
    found = [a or b for a, b in re.findall(r"gpu\((\d+)\)|cuda:(\d+)", devices or "")]
    return list(dict.fromkeys(found))


def ceiling_case(unit: str, devices: str, case: str) -> str:
    """Which ceilings a rate compares with: a pattern over the ceilings' case names, every
    library's (MXNet's dot, numpy's, PyTorch's mm, JAX's dot) on the same device, float32
    only (``torch_mm_2048``, never ``torch_mm_bf16_2048``). A rate on several GPUs (a
    training epoch on two) is set against each GPU's: ``best_ceiling`` adds their bests.
    Several CPU "devices" are one CPU, one ceiling."""
    gpus = gpus_of(devices)
    gpu = gpus[0] if gpus else None
    if unit == "GFLOP":
        if len(gpus) > 1:
            return rf"gpu({'|'.join(gpus)})_(dot|torch_mm|jax_dot)_\d+"
        return (rf"gpu{gpu}_(dot|torch_mm|jax_dot)_\d+" if gpu
                else r"(mxnet_dot|numpy_dot|torch_mm|jax_dot)_\d+")
    if gpu and case in ("copy_to_cpu", "copy_to_cpu_pinned"):
        return (rf"gpu{gpu}_(device_to_host|torch_device_to_host_(pinned|pageable)"
                r"|jax_device_to_host_pageable)")
    return r"(mxnet|numpy|torch|jax)_copy"


def best_ceiling(ceilings: dict[str, float], pattern: str) -> tuple[str, float] | None:
    """The highest median rate among the ceilings matching the pattern; where they are
    several GPUs' (a pattern of ``ceiling_case`` for a rate on several), the sum of each
    GPU's highest, named ``gpu0_... + gpu1_...``."""
    found = [(name, rate) for name, rate in ceilings.items() if re.fullmatch(pattern, name)]
    if not found:
        return None
    best: dict[str | None, tuple[str, float]] = {}
    for name, rate in found:
        gpu = re.match(r"gpu(\d+)_", name)
        key = gpu.group(1) if gpu else None
        if key not in best or rate > best[key][1]:
            best[key] = (name, rate)
    several = re.match(r"gpu\(([\d|]+)\)_", pattern)
    if several and set(several.group(1).split("|")) != set(best):
        return None  # a GPU without a ceiling: no sum to set the rate against
    if len(best) == 1:
        return next(iter(best.values()))
    ordered = [best[key] for key in sorted(best, key=lambda k: int(k or -1))]
    return " + ".join(n for n, _ in ordered), sum(r for _, r in ordered)
