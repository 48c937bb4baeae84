"""Where a claim applies, decided from the fields of a run record, never from its text.

A run record's ``execution`` field (written by each framework's module: MXNet and JAX
queue work on every device, eager PyTorch only on CUDA) says what the framework did where the
run ran; a claim's ``Where`` says what it needs there. d2lperf.claims judges a claim
only where the two agree and otherwise keeps the measurement as a finding.
"""

from __future__ import annotations

from dataclasses import dataclass

from d2lperf import frameworks
from d2lperf.frameworks import REGISTRY
from d2lperf.records import RunRecord


def running_as(framework: str) -> str:
    """The framework's name by the way it runs work (``eager PyTorch``)."""
    entry = REGISTRY.get(framework)
    return (entry.runs_as or entry.label) if entry else framework


# What a framework does not do on a device, in words, by the execution field it lacks.
LACKS = {"queues_work": "each op finishes before it returns (nothing is queued)",
         "separate_devices": "its devices there are one device under several names"}


@dataclass(frozen=True)
class Where:
    """Where a claim applies, as fields of the run record: the frameworks, the device
    kinds (``execution.device_kind``) and what must be true there (``requires``: names
    of ``execution``'s true/false fields, e.g. ``queues_work``)."""

    frameworks: tuple[str, ...] | None = None  # None: every framework
    device_kinds: tuple[str, ...] = ("cpu", "gpu")
    requires: tuple[str, ...] = ()

    def why_not(self, framework: str, run: RunRecord | None) -> str | None:
        """Why the claim does not apply to this run, in words; None where it applies
        (or where the section did not run: that has its own verdict)."""
        if run is None or run.get("status") != "ok":
            return None
        name = running_as(framework)
        if self.frameworks is not None and framework not in self.frameworks:
            return f"the claim is not about {name}"
        found = execution(framework, run)
        kind = found["device_kind"]
        if kind not in self.device_kinds:
            return f"the claim is about {' or '.join(self.device_kinds)} work; this ran on {kind}"
        missing = [LACKS.get(r, r) for r in self.requires if not found.get(r)]
        if missing:
            return f"{name} on a {kind.upper()}: {'; '.join(missing)}"
        return None


EVERYWHERE = Where()
WHERE_WORK_IS_QUEUED = Where(requires=("queues_work",))


def execution(framework: str, run: RunRecord) -> dict[str, object]:
    """The run record's ``execution`` field; for records written before it existed, what
    the framework's module says of the device kind the run was given (``--on``)."""
    found = run.get("execution")
    if found:
        return found
    kind = (run.get("parameters") or {}).get("on") or "cpu"
    return frameworks.module(framework).execution(kind)


def listed(names: list[str]) -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# How a device-kind set reads after a framework's name ("PyTorch on CUDA").
KIND_WORDS = {("cpu", "gpu"): "on any device", ("gpu",): "on CUDA", ("cpu",): "on a CPU"}


def doing(field: str, names: tuple[str, ...] | None = None) -> str:
    """Where each framework does ``field`` (an ``execution`` field: ``queues_work``,
    ``separate_devices``), as its module says: "MXNet on any device, PyTorch on CUDA"."""
    parts = []
    for name in names or REGISTRY:
        module = frameworks.module(name)
        kinds = tuple(k for k in ("cpu", "gpu") if module.execution(k).get(field))
        if kinds:
            parts.append(f"{REGISTRY[name].label} {KIND_WORDS[kinds]}")
    return ", ".join(parts)


def where_words(where: Where) -> str:
    parts = [listed([running_as(f) for f in where.frameworks or REGISTRY])]
    if where.requires == ("queues_work",):
        parts.append(f"where the framework queues work ({doing('queues_work', where.frameworks)})")
    elif where.requires == ("separate_devices",):
        parts.append("where the devices are separate "
                     f"({doing('separate_devices', where.frameworks)})")
    return ", ".join(parts)
