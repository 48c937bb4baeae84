"""The numpy names MXNet 1.9.1 still uses, put back where the numpy installed lacks them.

MXNet 1.9.1 was built against numpy < 1.24. Python 3.12 has no numpy 1.23 wheel (numpy
1.26 there) and Python 3.13 none before 2.x (the pins: envs/mxnet.lock.txt); those
dropped names MXNet reads when it loads: ``np.bool`` (1.24), the constants, the aliases
and the financial functions (2.0; ``in1d`` and ``trapz`` in 2.4). Each name is set only
where numpy has none of its own (a name numpy still has, deprecated or not, is never
touched), to what numpy 1.23 gave: the same value or the function it was an alias of.
The financial functions were stubs in numpy 1.20-1.23 already (NEP 32); MXNet only
registers them, and calling one still fails, naming numpy-financial.

Loaded only in MXNet's environment: ``d2lperf mxnet-build install-shim`` writes a .pth
file there whose one line calls ``install()``, so that this runs before any
``import mxnet`` in that interpreter (a section, machine_info, a ``python -c 'import
mxnet'`` of a ps-lite role) without importing numpy until mxnet is asked for.
Standard library only until then.
"""

from __future__ import annotations

import builtins
import importlib.abc
import sys
import warnings

# What MXNet's own import pulls in before it reads numpy: the first of these imported.
TRIGGERS = ("mxnet",)
PTH_NAME = "d2lperf-mxnet-compat.pth"
PTH_LINE = "import d2lperf.mxnet_compat as c; c.install()\n"
FINANCIAL = ("fv", "ipmt", "irr", "mirr", "nper", "npv", "pmt", "ppmt", "pv", "rate")


def _expired(name: str):
    def expired(*args, **kwargs):
        raise RuntimeError(
            f"In accordance with NEP 32, the function {name} was removed from NumPy version "
            "1.20. A replacement for this function is available in the numpy_financial "
            "library: https://pypi.org/project/numpy-financial")
    expired.__name__ = name
    return expired


def replacements(np) -> dict[str, object]:
    """Each name MXNet reads, as numpy 1.23 defined it (computed from ``np``'s own
    functions)."""

    def in1d(ar1, ar2, assume_unique=False, invert=False, **options):
        return np.isin(np.asarray(ar1).ravel(), ar2, assume_unique=assume_unique,
                       invert=invert, **options)

    def msort(a):
        return np.sort(a, axis=0)

    trapezoid = getattr(np, "trapezoid", None)
    names: dict[str, object] = {
        "bool": builtins.bool,
        "PZERO": 0.0, "NZERO": -0.0, "PINF": float("inf"), "NINF": float("-inf"),
        "Inf": float("inf"), "NAN": float("nan"), "NaN": float("nan"),
        "alltrue": np.all, "sometrue": np.any, "in1d": in1d, "round_": np.round,
        "product": np.prod, "cumproduct": np.cumprod, "msort": msort,
        **{name: _expired(name) for name in FINANCIAL},
    }
    if trapezoid is not None:  # numpy 2.0's name for it; before, trapz is there itself
        names["trapz"] = trapezoid
    return names


def has(np, name: str) -> bool:
    """Whether numpy has ``name`` itself (a deprecated alias counts: it is there)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            getattr(np, name)
        except AttributeError:
            return False
        return True


def restore(np=None) -> list[str]:
    """Set on ``np`` (numpy, by default) each name it lacks; returns those set."""
    if np is None:
        import numpy as np
    restored = []
    for name, value in replacements(np).items():
        if not has(np, name):
            setattr(np, name, value)
            restored.append(name)
    return restored


class _BeforeMXNet(importlib.abc.MetaPathFinder):
    """Restores numpy's names the first time mxnet is imported, then steps aside."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in TRIGGERS:
            uninstall()
            restore()
        return None  # the import itself goes on as it would


def install() -> None:
    """Restore numpy's names just before mxnet is first imported (at once if it is)."""
    if any(name in sys.modules for name in TRIGGERS):
        restore()
    elif not any(isinstance(f, _BeforeMXNet) for f in sys.meta_path):
        sys.meta_path.insert(0, _BeforeMXNet())


def uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _BeforeMXNet)]
