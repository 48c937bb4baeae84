"""PyTorch's side of what the two frameworks do differently (as d2l keeps ``d2l/torch.py``).

Same names as ``d2lperf/mxnet.py`` where they mean the same thing: ``devices`` (the
contexts a section runs on), ``sync`` (``nd.waitall``'s counterpart), ``seed``,
``load_fashion_mnist``, ``evaluate_accuracy`` and ``build_info`` (what run.json records
of the framework). Everything else in d2lperf knows no framework.

torch is imported inside the functions only: the section's thread counts are pinned in
the environment (provenance.set_threads) before torch loads and reads them. The CUDA
calls are guarded by what torch itself reports (``torch.cuda.is_available()``,
``device_count()``), never attempted on a machine without a GPU, and tested with those
answers stood in for.
"""

from __future__ import annotations

import os
import random
import re
import sys
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from d2lperf import data, frameworks, training
from d2lperf import devices as device_kinds
from d2lperf.devices import KINDS
from d2lperf.errors import NEEDS_GPUS, Skipped


def version_problem(text: str) -> str | None:
    """Why this torch cannot run the sections, or None when it can (the registry's
    oldest version that does)."""
    return frameworks.version_problem("pytorch", text)


def matrix_product(dtype: str = "float32"):
    """The matrix product the BLAS probe checks: torch.mm in ``dtype``, numpy arrays in
    and out."""
    import torch

    kind = getattr(torch, dtype)
    return lambda a, b: torch.mm(torch.from_numpy(a).to(kind),
                                 torch.from_numpy(b).to(kind)).numpy()


def blas_kernel() -> str:
    """torch's BLAS, by its build settings (BLAS_INFO=mkl in the x86 wheels)."""
    import torch

    found = re.search(r"BLAS_INFO=([\w.+-]+)", torch.__config__.show())
    return f"torch {found.group(1) if found else 'unknown BLAS'}"


def devices(kind: str, count: int) -> list:
    """``count`` devices of ``kind``: GPUs ``cuda:0`` ... when the machine has enough
    (Skipped otherwise), or the CPU ``count`` times over: PyTorch has one CPU device,
    so the multi-device code runs as a code path on it (seeds/000 ran its multi-device
    code on cpu(0), cpu(1), which are MXNet engine queues on one processor)."""
    import torch

    if kind == "cpu":
        return [torch.device("cpu")] * count
    if kind != "gpu":
        raise ValueError(f"unknown device kind {kind!r}; allowed: {', '.join(KINDS)}")
    found = gpu_count()
    if found < count:
        plural = "s" if count > 1 else ""
        raise Skipped(f"needs {count} GPU{plural}, found {found}", needs=NEEDS_GPUS)
    return [torch.device("cuda", i) for i in range(count)]


def gpu_count() -> int:
    """The GPUs torch sees; 0 without CUDA (device_count is not asked then)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def prepare(args: Any, rec: Any, model: str) -> tuple[list, list]:
    """The runs that fit this machine and devices enough for the largest
    (training.fitting_runs: with one GPU the 1-GPU run trains, the 2-GPU one says why
    not); then every generator seeded with ``args.seed`` (``seed``), so parameters and
    shuffling repeat."""
    planned, found = training.fitting_runs(args, rec, model, devices, gpu_count)
    seed(args.seed)
    return planned, found


def warm_up(train_iter, batch_size: int, step) -> list[list[int]]:
    """training.warm_up with torch's zeros (int64 labels, as the loader gives) and
    ``sync``."""
    import torch

    def zeros_batch(size: int, example_shape: tuple):
        return torch.zeros((size, *example_shape)), torch.zeros(size, dtype=torch.int64)

    return training.warm_up(train_iter.dataset, batch_size, step, zeros_batch, sync)


# Eager PyTorch runs a CPU op to its end before the call returns and queues only CUDA
# kernels; it has one CPU device, so "two devices" on the CPU are that one twice.
QUEUES_WORK_ON = ("gpu",)
SEPARATE_DEVICES_ON = ("gpu",)


def execution(kind: str) -> dict[str, object]:
    """Where this run's work ran, for its run record (devices.execution)."""
    return device_kinds.execution(kind, queues_on=QUEUES_WORK_ON,
                                  separate_on=SEPARATE_DEVICES_ON)


def names(devs: Iterable[Any]) -> str:
    """How a results row names its devices: ``cuda:0,cuda:1`` or ``cpu,cpu``."""
    return ",".join(str(d) for d in devs)


def is_cuda(device: Any) -> bool:
    import torch

    return torch.device(device).type == "cuda"


def sync(device: Any = None) -> None:
    """Wait until the work queued so far has finished: ``nd.waitall()``'s counterpart.

    On the CPU PyTorch's eager ops run to the end before they return: nothing is queued,
    nothing to wait for. On a GPU, ``device=None`` waits for every GPU (MXNet's waitall
    waits for all devices; ``torch.cuda.synchronize()`` alone waits for the current one)."""
    import torch

    if device is not None and not is_cuda(device):
        return
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return  # no CUDA context in this process: no GPU work was ever queued
    if device is not None:
        torch.cuda.synchronize(device)
        return
    for index in range(torch.cuda.device_count()):
        torch.cuda.synchronize(index)


def seed(n: int) -> None:
    """Seed every generator a section draws from: torch's (CPU and every GPU's), the
    DataLoader's shuffling (it draws from torch's), numpy's and Python's."""
    import numpy as np
    import torch

    torch.manual_seed(n)
    np.random.seed(n)
    random.seed(n)


class FashionMNIST:
    """One split as torchvision's ``FashionMNIST(transform=ToTensor())`` yields it:
    (1, 28, 28) float32 images in [0, 1] and int64 labels, converted item by item."""

    def __init__(self, images, labels) -> None:
        self.images, self.labels = images, labels  # uint8 (N, 28, 28), int64 (N,)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return self.images[index].unsqueeze(0).float().div(255), self.labels[index]


def fashion_mnist(folder: Path, train: bool, limit: int | None = None) -> FashionMNIST:
    """The split read from the four idx files with numpy (torchvision is not needed)."""
    import numpy as np
    import torch

    prefix = "train" if train else "t10k"
    shape, pixels = data.read_idx(folder / f"{prefix}-images-idx3-ubyte.gz")
    _, labels = data.read_idx(folder / f"{prefix}-labels-idx1-ubyte.gz")
    images = np.frombuffer(pixels, dtype=np.uint8).reshape(shape)
    targets = np.frombuffer(labels, dtype=np.uint8).astype(np.int64)
    if limit is not None:
        images, targets = images[:limit], targets[:limit]
    return FashionMNIST(torch.from_numpy(images.copy()), torch.from_numpy(targets))


def load_fashion_mnist(
    batch_size: int,
    *,
    data_dir: str | os.PathLike | None = None,
    download: bool = False,
    num_workers: int | None = None,
    train_limit: int | None = None,
    test_limit: int | None = None,
):
    """(train_iter, test_iter) as d2l's PyTorch ``load_data_fashion_mnist`` builds them:
    ToTensor, the training set shuffled, 4 worker processes (none on Windows). The files
    are found and verified as for MXNet (data.find_fashion_mnist); they are never
    downloaded from here (no torchvision), so ``download`` only changes the message."""
    from torch.utils.data import DataLoader

    try:
        folder = data.find_fashion_mnist(data_dir)
    except data.DataMissing as missing:
        if download:
            raise data.DataMissing(
                f"{missing}\n(data_download is set, but the PyTorch sections read the files "
                "only: let an MXNet section download them, or use one of the ways above)"
            ) from None
        raise
    workers = data.default_workers() if num_workers is None else num_workers
    train_iter = DataLoader(fashion_mnist(folder, True, train_limit), batch_size,
                            shuffle=True, num_workers=workers)
    test_iter = DataLoader(fashion_mnist(folder, False, test_limit), batch_size,
                           shuffle=False, num_workers=workers)
    return train_iter, test_iter


def load_data(args: Any, batch_size: int):
    """(train_iter, test_iter) from a training section's options (training.add_arguments);
    a missing data set ends the run non-zero with data.py's message on stderr."""
    try:
        return load_fashion_mnist(
            batch_size, data_dir=args.data_dir, download=args.data_download,
            num_workers=args.data_workers, train_limit=args.train_limit,
            test_limit=args.test_limit)
    except data.DataMissing as missing:
        print(missing, file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def scatter(batch, devs: Sequence[Any]) -> list:
    """A batch split evenly over devices, the first shard on the first device (Gluon's
    ``split_and_load``): ``nn.parallel.scatter`` on GPUs, as the book does; on the CPU
    stand-in, which scatter refuses, the same split with ``chunk``."""
    from torch import nn

    if all(is_cuda(d) for d in devs):
        return list(nn.parallel.scatter(batch, list(devs)))
    return [shard.to(d) for shard, d in zip(batch.chunk(len(devs)), devs)]


def evaluate_accuracy(net, data_iter, device=None) -> float:
    """d2l's ``evaluate_accuracy_gpu``: eval mode, no gradients, on ``device`` (the
    net's first parameter's when not given); the correct count stays on the device
    until the end, one synchronisation per evaluation."""
    import torch
    from torch import nn

    if isinstance(net, nn.Module):
        net.eval()
        if device is None:
            device = next(iter(net.parameters())).device
    correct, n = torch.zeros((), device=device), 0
    with torch.no_grad():
        for X, y in data_iter:
            X, y = X.to(device), y.to(device)
            correct += (net(X).argmax(dim=1) == y).sum()
            n += y.numel()
    return correct.item() / n


def _quiet(read, default: Any = None) -> Any:
    """A setting's value, without the deprecation warnings some of them raise now."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return read()
        except (AttributeError, RuntimeError, AssertionError):
            return default


def build_settings(config: str) -> dict[str, str]:
    """``Build settings`` of ``torch.__config__.show()`` as a dict (BLAS_INFO, USE_CUDA, ...)."""
    found = re.search(r"Build settings: (.*)", config)
    if not found:
        return {}
    pairs = (item.strip().rstrip(",").split("=", 1) for item in found.group(1).split(", "))
    return {pair[0]: pair[1] for pair in pairs if len(pair) == 2 and pair[0].isupper()}


def gpu_info(index: int) -> dict[str, object]:
    import torch

    props = torch.cuda.get_device_properties(index)
    major, minor = torch.cuda.get_device_capability(index)
    return {
        "index": index,
        "name": torch.cuda.get_device_name(index),
        "compute_capability": f"{major}.{minor}",
        "memory_gb": round(props.total_memory / 1e9, 2),
        "multiprocessors": props.multi_processor_count,
    }


def build_info() -> dict[str, object]:
    """What run.json records of torch: its build, its threads, and the settings that
    change GPU timings (TF32, cuDNN's autotuner), with the GPUs it sees."""
    import torch

    settings = build_settings(_quiet(torch.__config__.show, ""))
    cuda = torch.cuda.is_available()
    info: dict[str, object] = {
        "version": torch.__version__,
        "git": torch.version.git_version,
        "build": "cuda" if torch.version.cuda else ("rocm" if torch.version.hip else "cpu"),
        "cuda_version": torch.version.cuda,
        "cudnn_version": _quiet(torch.backends.cudnn.version) if cuda else None,
        "blas": settings.get("BLAS_INFO"),
        "build_settings": {k: settings[k] for k in sorted(settings)
                           if k.startswith("USE_") or k in ("BLAS_INFO", "LAPACK_INFO")},
        "threads": {"intra_op": torch.get_num_threads(),
                    "inter_op": torch.get_num_interop_threads()},
        "parallel_info": _quiet(torch.__config__.parallel_info, ""),
        "mkldnn": torch.backends.mkldnn.is_available(),
        "openmp": torch.backends.openmp.is_available(),
        "cuda_available": cuda,
        "arch_list": _quiet(torch.cuda.get_arch_list, []),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "tf32": {
            "matmul": _quiet(lambda: torch.backends.cuda.matmul.allow_tf32),
            "cudnn": _quiet(lambda: torch.backends.cudnn.allow_tf32),
        },
        "cudnn": {
            "enabled": torch.backends.cudnn.enabled,
            "benchmark": torch.backends.cudnn.benchmark,
            "deterministic": torch.backends.cudnn.deterministic,
        },
        "gpus": [gpu_info(i) for i in range(torch.cuda.device_count())] if cuda else [],
    }
    return info

