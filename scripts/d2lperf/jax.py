"""JAX's side of what the frameworks do differently (as d2l keeps ``d2l/jax.py``).

Same names as ``d2lperf/mxnet.py`` and ``d2lperf/torch.py`` where they mean the same
thing: ``devices`` (the devices a section runs on), ``sync`` (``nd.waitall``'s
counterpart: ``block_until_ready`` on what was returned, or on every live array),
``seed``, ``build_info`` (what run.json records of the framework), ``execution`` (where
it queues work). A framework module implements what its sections call; JAX's sections
so far need no data loader.

JAX dispatches asynchronously on every device, the CPU included: a call returns once
its work is queued, like MXNet's engine and unlike eager PyTorch on a CPU. So the
chapter's queueing claims apply to it on a CPU. Its CPU is one device unless XLA is told
to split it (``--xla_force_host_platform_device_count``): ``thread_environment`` asks for
as many host devices as the sections use (two, as the documents' ``cpu(0)``, ``cpu(1)``),
and pins XLA's CPU threads to the timing's thread count.

jax is imported inside the functions only: XLA reads ``XLA_FLAGS`` once, when jax loads
its backend, after ``provenance.set_threads`` has set it.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterable, Iterator
from typing import Any

from d2lperf import data, training
from d2lperf import devices as device_kinds
from d2lperf.devices import KINDS
from d2lperf.errors import NEEDS_GPUS, Skipped

HOST_DEVICES = 2  # CPU devices XLA splits the host into: the documents' cpu(0), cpu(1)
# The XLA flags this pipeline sets (any other a user set are kept, after these).
OWN_FLAGS = ("--xla_force_host_platform_device_count", "--xla_cpu_multi_thread_eigen",
             "intra_op_parallelism_threads")


def thread_environment(threads: int, environ: dict[str, str] | None = None,
                       host_devices: int = HOST_DEVICES) -> dict[str, str]:
    """The variables that pin XLA's CPU threads to ``threads`` and split the host into
    ``host_devices`` devices, kept beside any other XLA flag already set."""
    environ = os.environ if environ is None else environ
    others = [flag for flag in environ.get("XLA_FLAGS", "").split()
              if flag.split("=", 1)[0] not in OWN_FLAGS]
    own = [f"--xla_force_host_platform_device_count={host_devices}",
           f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'}",
           f"intra_op_parallelism_threads={threads}"]
    return {"XLA_FLAGS": " ".join(own + others)}


THREAD_VARIABLES = ("XLA_FLAGS",)  # recorded with every run, set or not


def devices(kind: str, count: int) -> list:
    """``count`` devices of ``kind``: GPUs when the machine has enough (Skipped
    otherwise), or the host's CPU devices (``HOST_DEVICES`` of them, the first again
    where more are asked for)."""
    import jax

    if kind == "cpu":
        found = jax.devices("cpu")
        return [found[i % len(found)] for i in range(count)]
    if kind != "gpu":
        raise ValueError(f"unknown device kind {kind!r}; allowed: {', '.join(KINDS)}")
    found = gpu_count()
    if found < count:
        plural = "s" if count > 1 else ""
        raise Skipped(f"needs {count} GPU{plural}, found {found}", needs=NEEDS_GPUS)
    return jax.devices("gpu")[:count]


def gpu_count() -> int:
    """The GPUs JAX sees; 0 where it has no GPU backend."""
    import jax

    try:
        return len(jax.devices("gpu"))
    except RuntimeError:  # no GPU backend in this jaxlib, or no GPU
        return 0


# JAX queues work on every device, the CPU included; its host devices are separate
# XLA devices with their own streams.
QUEUES_WORK_ON = ("gpu", "cpu")
SEPARATE_DEVICES_ON = ("gpu", "cpu")


def execution(kind: str) -> dict[str, object]:
    """Where this run's work ran, for its run record (devices.execution)."""
    return device_kinds.execution(kind, queues_on=QUEUES_WORK_ON,
                                  separate_on=SEPARATE_DEVICES_ON)


def names(devs: Iterable[Any]) -> str:
    """How a results row names its devices: ``cpu:0,cpu:1``, or ``cuda:0`` for a GPU (as
    PyTorch names it: the ceilings and the report read GPUs so)."""
    return ",".join(f"{'cuda' if d.platform == 'gpu' else d.platform}:{d.id}" for d in devs)


def sync(*values: Any) -> None:
    """Wait until the work queued so far has finished: ``nd.waitall()``'s counterpart.
    With ``values``, until those are computed; without, until every live array is (JAX
    has no global barrier: every array still referenced is waited for, which covers
    whatever a timed function returned)."""
    import jax

    if values:
        jax.block_until_ready(values)
        return
    for array in jax.live_arrays():
        array.block_until_ready()


def seed(n: int):
    """Seed Python's and numpy's generators and return JAX's key for ``n`` (JAX has no
    global generator: a section draws from the key it is given)."""
    import jax
    import numpy as np

    np.random.seed(n)
    random.seed(n)
    return jax.random.key(n)


def prepare(args: Any, rec: Any, model: str) -> tuple[list, list]:
    """The runs that fit this machine and devices enough for the largest
    (training.fitting_runs); then numpy's and Python's generators seeded with
    ``args.seed`` (the loader's shuffling draws from numpy's)."""
    planned, found = training.fitting_runs(args, rec, model, devices, gpu_count)
    seed(args.seed)
    return planned, found


class FashionMNIST:
    """One split as numpy arrays: (N, 1, 28, 28) float32 images in [0, 1] (the layout the
    MXNet and PyTorch twins feed) and int32 labels."""

    def __init__(self, images, labels) -> None:
        self.images, self.labels = images, labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return self.images[index], self.labels[index]


class Loader:
    """Batches of a split, shuffled with numpy's generator every epoch where asked (the
    training split), the last smaller batch kept, as d2l's loaders give them; each batch
    numpy arrays, put on a device by the step that takes it."""

    def __init__(self, dataset: FashionMNIST, batch_size: int, shuffle: bool) -> None:
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        import numpy as np

        order = (np.random.permutation(len(self.dataset)) if self.shuffle
                 else np.arange(len(self.dataset)))
        for start in range(0, len(order), self.batch_size):
            chosen = order[start:start + self.batch_size]
            yield self.dataset.images[chosen], self.dataset.labels[chosen]


def fashion_mnist(folder, train: bool, limit: int | None = None) -> FashionMNIST:
    return FashionMNIST(*data.arrays(folder, train, limit))


def load_data(args: Any, batch_size: int):
    """(train_iter, test_iter) from a training section's options: the files found and
    verified as for the other twins (data.find_fashion_mnist), read with numpy; a missing
    data set ends the run non-zero with data.py's message."""
    folder = data.found_or_exit(args.data_dir)
    return (Loader(fashion_mnist(folder, True, args.train_limit), batch_size, True),
            Loader(fashion_mnist(folder, False, args.test_limit), batch_size, False))


def warm_up(train_iter: Loader, batch_size: int, step) -> list[list[int]]:
    """training.warm_up with zero batches (compiling each input shape's step first)."""
    import numpy as np

    def zeros_batch(size: int, example_shape: tuple):
        return (np.zeros((size, *example_shape), np.float32), np.zeros(size, np.int32))

    return training.warm_up(train_iter.dataset, batch_size, step, zeros_batch, sync)


def evaluate_accuracy(net, data_iter: Loader, device=None) -> float:
    """The share of correct predictions of ``net`` (a function of a batch) over a split, on
    ``device``; the correct count stays on the device until the end."""
    import jax
    import jax.numpy as jnp

    correct, n = jnp.zeros((), jnp.int32), 0
    for X, y in data_iter:
        X, y = jax.device_put(X, device), jax.device_put(y, device)
        correct = correct + (net(X).argmax(axis=1) == y).sum()
        n += len(y)
    return int(correct) / n


def matrix_product(dtype: str = "float32"):
    """The matrix product the BLAS probe checks: ``jnp.dot`` in ``dtype`` on the CPU,
    numpy arrays in and out."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    kind = getattr(jnp, dtype)
    cpu = jax.devices("cpu")[0]
    return lambda a, b: np.asarray(jnp.dot(jax.device_put(a.astype(kind), cpu),
                                           jax.device_put(b.astype(kind), cpu)))


def blas_kernel() -> str:
    """XLA's CPU matrix product: Eigen's contraction (XLA:CPU links no BLAS), or oneDNN's
    where this jaxlib was built with it and the flag asks for it."""
    flags = os.environ.get("XLA_FLAGS", "")
    return "XLA:CPU oneDNN" if re.search(r"xla_cpu_use_mkl_dnn=true", flags) else \
        "XLA:CPU Eigen"


def stack(build: dict[str, object]) -> dict[str, str]:
    """JAX's rows of the report's software table, from ``build_info``'s record."""
    devs = build.get("devices") or []
    return {
        "version": f"JAX {build.get('version')}, jaxlib {build.get('jaxlib')} "
                   f"({build.get('backend')} backend)",
        "devices": ", ".join(f"{d.get('platform')}:{d.get('id')}" for d in devs) or "none",
        "XLA flags": str(build.get("xla_flags") or "none"),
    }


def build_info() -> dict[str, object]:
    """What run.json records of JAX: its versions, its backend and devices, and the XLA
    flags it ran with."""
    import jax
    import jaxlib

    devs = jax.devices()
    return {
        "version": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "backend": jax.default_backend(),
        "devices": [{"platform": d.platform, "id": d.id, "kind": d.device_kind}
                    for d in devs],
        "host_devices": len(jax.devices("cpu")),
        "gpus": [{"index": d.id, "name": d.device_kind} for d in devs if d.platform == "gpu"],
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "x64": bool(jax.config.jax_enable_x64),
    }
