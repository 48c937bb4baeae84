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
from collections.abc import Iterable
from typing import Any

from d2lperf import devices as device_kinds
from d2lperf.devices import KINDS
from d2lperf.errors import NEEDS_GPUS, Skipped

HOST_DEVICES = 2  # CPU devices XLA splits the host into: the documents' cpu(0), cpu(1)
# The XLA flags this pipeline sets (any other a user set are kept, after these).
OWN_FLAGS = ("--xla_force_host_platform_device_count", "--xla_cpu_multi_thread_eigen",
             "intra_op_parallelism_threads")


def thread_environment(threads: int, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables that pin XLA's CPU threads to ``threads`` and split the host into
    ``HOST_DEVICES`` devices, kept beside any other XLA flag already set."""
    environ = os.environ if environ is None else environ
    others = [flag for flag in environ.get("XLA_FLAGS", "").split()
              if flag.split("=", 1)[0] not in OWN_FLAGS]
    own = [f"--xla_force_host_platform_device_count={HOST_DEVICES}",
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
