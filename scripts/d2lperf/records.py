"""The records the pipeline writes and reads, field by field: a section's run record
(run.json) and what it holds (its outputs, its processes, its stages and their looks,
the machine's steadiness), and a row of samples.csv. Types only: ``d2lperf.results``
reads and writes the files, ``workflow/schemas/`` checks what a reader needs of them.

A leaf, standard library only: every layer may name these, a worker's too."""

from __future__ import annotations

from typing import TypedDict


class CpuTimes(TypedDict):
    """``/proc/stat``'s counters, in clock ticks."""

    total: int
    busy: int
    steal: int


class Snapshot(TypedDict):
    """The machine's state at one moment (``snapshot``)."""

    run_queue: list[int] | None
    probe_s: list[float]
    probe_threads: int
    load_average: list[float] | None
    cpu_times: CpuTimes | None


class Steadiness(TypedDict):
    """A section's steadiness, before against after (run.json's ``steadiness``)."""

    before: Snapshot
    after: Snapshot
    probe_threads: int
    probe_before_s: float
    probe_after_s: float
    probe_moved: float
    steal_share: float | None
    flags: list[str]
    steady: bool


class Load(TypedDict):
    """The cores other programs and this process used over a stage (``Window``)."""

    wall_s: float
    own_cores: float | None
    others_cores: float | None
    cores: int


# One row of samples.csv: a column's value, as written (numbers) or as read back (text).
SampleRow = dict[str, str | int | float]


# --- The run record (run.json), field by field: workflow/schemas/run.schema.yaml checks
# what a reader needs of it; these say what the code writes.

class Output(TypedDict, total=False):
    """A printed output: its text as printed, its numbers, and why a framework prints
    something else by its design."""

    text: str
    values: object
    by_design: str


class ProcessFigures(TypedDict, total=False):
    """One fresh process of a section, as the manager lists it."""

    pid: int
    started: str
    finished: str
    wall_seconds: float
    peak_rss_mb: float
    load_average_at_start: list[float] | None
    load_average_at_end: list[float] | None
    status: str


class Answer(TypedDict):
    """A claim or A/A check judged at one look of the stages."""

    question: str
    kind: str
    verdict: str
    effect: str
    ratio: float
    low: float
    high: float
    p_value: float
    decided: bool


class Projection(TypedDict):
    """An undecided claim's interval now, and about where it would be at ``then``."""

    question: str
    ratio: float
    now: list[float]
    then: list[float]


class Reach(TypedDict):
    """Whether more processes could decide what a look left undecided."""

    processes: int
    could_decide: list[str]
    projected: list[Projection]


class StageEntry(TypedDict, total=False):
    """One stage of fresh processes: which ran, how busy the machine was, its look."""

    stage: int
    retry: bool
    processes: list[int]
    cut_short: bool
    load: Load
    probe_s: float | None
    busy: bool
    busy_why: list[str]
    waited_for_quiet: bool
    look: list[Answer]
    reach: Reach
    pooled: bool
    set_aside_rows: list[SampleRow]


class StagesRecord(TypedDict, total=False):
    """How a section's stages went (run.json's ``stages``)."""

    plan: list[int]
    looks_planned: int
    confidence_per_look: float
    correction: str
    budget_seconds: float
    band: float
    count: int
    looks: int
    processes_pooled: int
    stopped: str
    why: str
    all_busy: bool
    seconds: float
    history: list[StageEntry]


class RunRecord(ProcessFigures, total=False):
    """One section's run record (run.json): a process's figures (the section's first
    process's, its wall time all of theirs) and the rest. The framework builds it loaded
    are under their packages' names (``mxnet``, ``torch``: the registry's ``package``).
    ``status``: ok, skipped, refused, failed."""

    format_version: int
    section: str
    framework: str
    reason: str
    needs: str
    parameters: dict[str, object]
    threads: dict[str, str | None]
    code: dict[str, object]
    outputs: dict[str, Output]
    artifacts: list[str]
    notes: dict[str, object]
    execution: dict[str, object]
    blas_probe: dict[str, object]
    steadiness: Steadiness
    stages: StagesRecord
    processes: list[ProcessFigures]
    mxnet: dict[str, object]
    torch: dict[str, object]


class BlasLibrary(TypedDict, total=False):
    """A BLAS library a process has mapped: its path and, for an OpenBLAS, its build
    string, kernel (``core``), the kernel's vector width and its thread count."""

    path: str
    config: str
    core: str
    kernel_bits: int | None
    threads: int
