"""What is MXNet's own in the sections: devices, data loading, accuracy, its build.

The counterpart of ``d2lperf/torch.py``, with the same names where they mean the same
thing (``devices``, ``names``, ``load_fashion_mnist``, ``load_data``,
``evaluate_accuracy``, ``build_info``), as d2l keeps ``d2l/mxnet.py`` beside
``d2l/torch.py``. MXNet is imported inside the functions, so that the thread counts
are pinned before it loads (``d2lperf.harness.main``).

Devices (docs/design.md, "GPUs when present"): sections written for GPUs run on GPUs when
the machine has enough that MXNet has code for, and are skipped with the reason when it does not
(MXNet 1.9.1 has no kernels for compute capability 9.0 and later: d2lperf.mxnet_gpu),
unless the config asks for CPU contexts instead (``cpu(0)``, ``cpu(1)``, ...: separate
engine queues on the same processor, exactly as seeds/000 ran its multi-device code
without GPUs).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from d2lperf import data, mxnet_gpu, training
from d2lperf import devices as device_kinds
from d2lperf.blas import blas_in_use, loaded_blas
from d2lperf.devices import KINDS
from d2lperf.errors import NEEDS_GPU_CODE, NEEDS_GPUS, Skipped


def matrix_product(dtype: str = "float32"):
    """The matrix product the BLAS probe checks: nd.dot in ``dtype``, numpy arrays in and
    out (its kernel is the OpenBLAS loaded, which d2lperf.blas reads)."""
    from mxnet import nd

    return lambda a, b: nd.dot(nd.array(a, dtype=dtype), nd.array(b, dtype=dtype)).asnumpy()


def devices(kind: str, count: int) -> list:
    """``count`` contexts of ``kind``; Skipped when the machine has too few GPUs, or
    GPUs the installed MXNet has no code for (before any work, rather than crash)."""
    import mxnet as mx

    if kind == "cpu":
        return [mx.cpu(i) for i in range(count)]
    if kind != "gpu":
        raise ValueError(f"unknown device kind {kind!r}; allowed: {', '.join(KINDS)}")
    unusable = mxnet_gpu.unusable_reason(count)
    if unusable is not None:
        raise Skipped(unusable, needs=NEEDS_GPU_CODE)
    found = mx.context.num_gpus()
    if found < count:
        plural = "s" if count > 1 else ""
        raise Skipped(f"needs {count} GPU{plural}, found {found}", needs=NEEDS_GPUS)
    return [mx.gpu(i) for i in range(count)]


# MXNet's engine queues every op, on the CPU as on a GPU, and each context (cpu(0),
# cpu(1), gpu(0)) is a queue of its own: a separate device to the code.
QUEUES_WORK_ON = ("cpu", "gpu")
SEPARATE_DEVICES_ON = ("cpu", "gpu")


def execution(kind: str) -> dict[str, object]:
    """Where this run's work ran, for its run record (devices.execution)."""
    return device_kinds.execution(kind, queues_on=QUEUES_WORK_ON,
                                  separate_on=SEPARATE_DEVICES_ON)


def sync(device: Any = None) -> None:
    """Wait until the work queued so far has finished, on every device: ``nd.waitall()``,
    what the documents call before a clock stops (``device`` is taken for the same call as
    ``d2lperf.torch.sync``; MXNet waits for all of them)."""
    from mxnet import nd

    nd.waitall()


def seed(n: int) -> None:
    """Seed every generator a section draws from: MXNet's (every device's), numpy's and
    Python's."""
    import random

    import mxnet as mx
    import numpy as np

    mx.random.seed(n)
    np.random.seed(n)
    random.seed(n)


def names(ctxs) -> str:
    """How a results row names its devices: ``cpu(0),cpu(1)``."""
    return ",".join(str(c) for c in ctxs)


def check_two_cpu_queues(kind: str, threads: int) -> None:
    """Skipped, before any work, where two CPU engine queues would hang.

    An OpenBLAS built with USE_OPENMP (the mxnet 1.9.1 wheel bundles 0.3.13) hangs for
    good, one core spinning in exec_blas, once two engine workers call its
    multithreaded sgemm at the same time: CPU contexts with more than one OpenMP
    thread. One thread per queue runs (the workflow passes --threads 1 there).
    """
    if kind != "cpu" or threads == 1:
        return
    config = (blas_in_use(loaded_blas()) or {}).get("config", "")
    if "USE_OPENMP" in config:
        raise Skipped(
            f"CPU contexts need --threads 1 with {config.split(' DYNAMIC_ARCH')[0]} "
            f"(USE_OPENMP): two engine queues calling its sgemm at once hang; "
            f"got --threads {threads}"
        )


def run_settings() -> dict[str, object]:
    """What a run record keeps of MXNet's own settings: its GPU variables, each with its
    value here, MXNet's default and the one in effect."""
    from d2lperf import provenance

    return {"mxnet_gpu_settings": provenance.mxnet_gpu_settings()}


def build_info() -> dict[str, object]:
    """Version, build features, visible GPUs and the BLAS this process loaded."""
    import mxnet as mx

    features = mx.runtime.Features()
    return {
        "version": mx.__version__,
        "features": sorted(name for name in features.keys() if features.is_enabled(name)),
        "gpus_visible": mx.context.num_gpus(),
        "blas": blas_in_use(libraries := loaded_blas()),
        "blas_libraries": libraries,
    }


def fashion_mnist(folder: Path, train: bool, limit: int | None = None):
    """The split as a gluon ArrayDataset of (28, 28, 1) uint8 images and int32 labels,
    the first ``limit`` examples only when a preset asks for a subset."""
    import numpy as np
    from mxnet import nd
    from mxnet.gluon import data as gdata

    prefix = "train" if train else "t10k"
    shape, pixels = data.read_idx(folder / f"{prefix}-images-idx3-ubyte.gz")
    _, labels = data.read_idx(folder / f"{prefix}-labels-idx1-ubyte.gz")
    images = np.frombuffer(pixels, dtype=np.uint8).reshape(shape[0], shape[1], shape[2], 1)
    targets = np.frombuffer(labels, dtype=np.uint8).astype(np.int32)
    if limit is not None:
        images, targets = images[:limit], targets[:limit]
    return gdata.ArrayDataset(nd.array(images, dtype=np.uint8), targets)


def downloaded_fashion_mnist(train: bool):
    """MXNet's own download (only when the config allows it)."""
    from mxnet.gluon import data as gdata

    return gdata.vision.FashionMNIST(root=str(data.MXNET_CACHE), train=train)


def load_fashion_mnist(
    batch_size: int,
    *,
    data_dir: str | None = None,
    download: bool = False,
    num_workers: int | None = None,
    resize: int | None = None,
    train_limit: int | None = None,
    test_limit: int | None = None,
):
    """(train_iter, test_iter) as the documents build them: ToTensor (after an optional
    Resize), shuffled, with worker processes for loading."""
    from mxnet.gluon import data as gdata

    try:
        folder = data.find_fashion_mnist(data_dir)
        mnist_train = fashion_mnist(folder, train=True, limit=train_limit)
        mnist_test = fashion_mnist(folder, train=False, limit=test_limit)
    except data.DataMissing:
        if not download:
            raise
        mnist_train, mnist_test = downloaded_fashion_mnist(True), downloaded_fashion_mnist(False)
        if train_limit is not None or test_limit is not None:
            mnist_train = gdata.ArrayDataset(*mnist_train[:train_limit])
            mnist_test = gdata.ArrayDataset(*mnist_test[:test_limit])

    transformer = []
    if resize:
        transformer.append(gdata.vision.transforms.Resize(resize))
    transformer.append(gdata.vision.transforms.ToTensor())
    transformer = gdata.vision.transforms.Compose(transformer)
    workers = data.default_workers() if num_workers is None else num_workers
    train_iter = gdata.DataLoader(mnist_train.transform_first(transformer), batch_size,
                                  shuffle=True, num_workers=workers)
    test_iter = gdata.DataLoader(mnist_test.transform_first(transformer), batch_size,
                                 shuffle=True, num_workers=workers)
    return train_iter, test_iter


def load_data(args: argparse.Namespace, batch_size: int):
    """(train_iter, test_iter) as the documents build them; a missing data set ends the
    run non-zero with data.py's message (where it looked, how to get it) on stderr."""
    try:
        return load_fashion_mnist(
            batch_size, data_dir=args.data_dir, download=args.data_download,
            num_workers=args.data_workers, train_limit=args.train_limit,
            test_limit=args.test_limit,
        )
    except data.DataMissing as missing:
        print(missing, file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def evaluate_accuracy(net, data_iter, ctx) -> float:
    """The documents' evaluate_accuracy (the concise section passes ``data_iter`` first).

    The correct count stays an NDArray on ``ctx`` until the end: one synchronisation
    per evaluation, not one per batch."""
    from mxnet import nd

    acc_sum, n = nd.array([0], ctx=ctx), 0
    for X, y in data_iter:
        X, y = X.as_in_context(ctx), y.as_in_context(ctx).astype("float32")
        y_hat = net(X)
        acc_sum += (y_hat.argmax(axis=1) == y).sum()
        n += y.size
    return acc_sum.asscalar() / n


def gpu_count() -> int:
    import mxnet as mx

    return mx.context.num_gpus()


def prepare(args: argparse.Namespace, rec, model: str) -> tuple[list[training.Run], list]:
    """The runs that fit this machine and contexts enough for the largest
    (training.fitting_runs: with one GPU the 1-GPU run trains, the 2-GPU one says why
    not); then both generators seeded with ``args.seed`` (0, a fresh MXNet process's own
    seed, by default), so parameters and shuffling repeat."""
    planned, ctx = training.fitting_runs(args, rec, model, devices, gpu_count)
    import mxnet as mx
    import numpy as np

    mx.random.seed(args.seed)
    # The DataLoader shuffles with numpy's generator: seeding it makes runs repeatable.
    np.random.seed(args.seed)
    return planned, ctx


def warm_up(train_iter, batch_size: int, step) -> list[list[int]]:
    """training.warm_up with MXNet's zeros and ``nd.waitall``."""
    from mxnet import nd

    def zeros_batch(size: int, example_shape: tuple):
        return nd.zeros((size, *example_shape)), nd.zeros((size,))

    # Gluon's DataLoader keeps its dataset as _dataset
    return training.warm_up(train_iter._dataset, batch_size, step, zeros_batch, nd.waitall)
