"""The chapter's sections: what a section declares, the words it declares it in, and
``SECTIONS``, every folder of ``scripts/sections/`` that declares one, in the report's order.

A section is one folder, ``scripts/sections/<name>/``: ``section.py`` declares it once
(``SECTION = Section(...)``: its titles, its options as JSON-schema pieces with the
documents' values, from which its scripts' command lines are made, its speed claims, what
it needs), and beside it each framework's script, ``<name>_<framework>.py``. ``discover``
finds the folders: nothing lists the sections by hand. The Snakefile makes one rule per
section and framework and takes each job's SLURM resources from here; the config check
takes the section's preset options from here (so a preset must have an entry for every
section, with the keys it requires), and the scripts their command lines
(``arguments.add_options``); the plots take their titles and kind; the report its order
and headings (``write_csv`` writes the table the report reads).

This module, and the declarations, import nothing but the standard library (a
declaration imports its words from here): the Snakefile, the config check and the section
scripts all read it, and reading it must load nothing else.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# JSON-schema pieces of the preset options, defined once in the config schema's $defs.
COUNT = {"$ref": "#/$defs/count"}
WARMUP = {"$ref": "#/$defs/warmup"}
REPEATS = {"$ref": "#/$defs/repeats"}
PROCESSES = {"$ref": "#/$defs/processes"}
SIZE = {"$ref": "#/$defs/size"}
SEED = {"type": "integer", "minimum": 0}
# A training seed and training-image limit, as the training sections bound them (the seed
# reaches numpy's and the frameworks' generators, which take 32 bits).
TRAINING_SEED = {"$ref": "#/$defs/training_seed"}
TRAIN_LIMIT = {"$ref": "#/$defs/train_limit"}
# A data-parallel device count: a process per device, on a CPU a core each (the config's
# threads are at most 1024 too), on GPUs 128 nodes of 8.
DEVICE_COUNT = {"type": "integer", "minimum": 1, "maximum": 1024,
                "description": "processes, one per device: a core each on a CPU (threads are "
                               "at most 1024 too), a GPU each on GPUs (128 nodes of 8)"}
TRAINING = {"$ref": "#/$defs/training"}
BUDGET = {"$ref": "#/$defs/budget_seconds"}


DEFAULT = "default"  # in a value per framework: the value of every framework not named


def per_framework(schema: Mapping[str, object]) -> dict[str, object]:
    """An option that takes one value, or one per framework (``repeats: {mxnet: 10,
    pytorch: 30}``): how much is measured may differ by framework, a round of one
    framework's work costing a fraction of another's; what is measured may not. A
    framework it does not name takes its ``default`` entry, else the documents'
    framework's (``presets.for_framework``): a framework added later needs no edit."""
    names = {"anyOf": [{"$ref": "#/$defs/framework"}, {"const": DEFAULT}]}
    return {"anyOf": [dict(schema), {"type": "object", "minProperties": 1,
                                     "propertyNames": names,
                                     "additionalProperties": dict(schema)}]}


# How much a side-by-side timing measures (harness.parser's "timing" group): the options
# that may take a value per framework.
TIMING = {"warmup": per_framework(WARMUP), "repeats": per_framework(REPEATS)}
REPEATED = {**TIMING, "processes": per_framework(PROCESSES),
            "budget_seconds": per_framework(BUDGET), "seed": SEED}
PER_FRAMEWORK = ("budget_seconds", "processes", "repeats", "warmup")
REPEATED_REQUIRED = ("warmup", "repeats")
# Preset keys that are no section's own flags: the timing options every side-by-side
# script shares (``arguments.parser``; the training sections' seed, ``training.parser``)
# and the manager's (``d2lperf.manager``). Every other key is a workload option, whose
# flag ``arguments.add_options`` makes from the declaration.
SHARED = ("warmup", "repeats", "seed", "processes", "budget_seconds")


@dataclass(frozen=True)
class Matrices:
    """The work one sample of a case performs on square float32 matrices, for its rate:
    ``count`` of them (a number, or the name of the parameter that holds it) of side
    ``side`` (the name of the parameter that holds it)."""

    side: str
    count: int | str = 1

    def parameters(self) -> list[str]:
        """The parameters its amount is computed from."""
        return [self.side, *([self.count] if isinstance(self.count, str) else [])]

    def times(self, parameters: Mapping[str, Any]) -> int:
        return int(parameters[self.count]) if isinstance(self.count, str) else self.count


class Dots(Matrices):
    """Matrix products: 2 n³ FLOPs each (its rate in GFLOP/s)."""


class Copies(Matrices):
    """Copies of a matrix: 4 n² bytes each (its rate in GB/s)."""


@dataclass(frozen=True)
class AAPair:
    """An A/A check declared with its section: the same work under two labels, ``case``
    and ``other``, measured side by side (``d2lperf.checks`` judges it). ``swapped``: two
    copies that swap labels in every other process (``timing.aa_roles``), judged as a
    crossover (``stats.crossover_estimate``)."""

    name: str
    case: str
    other: str
    swapped: bool = False


@dataclass(frozen=True)
class SpeedClaim:
    """A claim declared with its section: ``faster`` takes less time than ``slower``,
    judged by the speed rule (``d2lperf.claims``) on their ratio of medians. ``text``: the
    claim, framework-neutral; ``short``: the report's first screen; ``label``: how the
    evidence names the ratio (default ``faster/slower``); ``document_section``: the
    section whose documents' figures of the same cases the report sets beside it, where
    the documents printed them under another section; ``site``: the heading of a column of
    the site's index that shows, per machine and framework, how many times faster
    ``faster`` ran (a headline figure; empty: no column). Claims with rules of their own
    are written in the section's ``claims.py``, beside this declaration (``d2lperf.claims``
    loads it: a rule judges, and the workers that read the declaration judge nothing)."""

    name: str
    text: str
    short: str
    faster: str
    slower: str
    label: str = ""
    document_section: str = ""
    site: str = ""


@dataclass(frozen=True, kw_only=True)
class Section:
    """One section of the chapter (or the machine's ceilings), as every step sees it: a
    folder's ``section.py`` declares ``SECTION = Section(...)``, and ``name`` is the
    folder's (``d2lperf.sections`` fills it in).

    ``order``: its place in the report, the documents' order (ceilings, not a section of
    the chapter, last); ``title``: the report's heading; ``plot_title``: its plot's;
    ``document``: the documents that print its figures; ``heading``: their heading.

    ``options`` is the JSON schema of its preset entry: a mapping of property schemas
    (or a whole schema, as ``TRAINING``); ``required`` the keys every preset must set.
    With ``presets["documents"]`` it is the one declaration of its options: the config
    check checks a preset by it, and its scripts' command lines are made from it
    (``arguments.add_options``): a flag per workload option (every key but the shared
    ones, ``SHARED``), typed and bounded by the option's schema, its help the schema's
    ``description``, its default the documents' value (or the schema's own ``default``,
    where leaving the option out means something of its own).
    ``framework_options``: preset keys that only one framework's script takes.
    ``plot``: how plots.py draws it (``timing``, ``memory``, ``training``, ``rates``,
    ``scaling``: images/s and efficiency against devices);
    ``off_the_plot``: cases kept in its table but off its timing plot.
    ``gpus``: GPUs the section was written for; ``cpu_stand_in``: where the machine has
    fewer, it runs on CPU contexts as the document did (else it is skipped, unless the
    config's gpu_sections_on_cpu says otherwise); ``data``: trains on Fashion-MNIST;
    ``blas``: its timings rest on BLAS calls (a BLAS variant checks its numerics);
    ``exports_model``: its script writes a model folder beside its results.
    Which frameworks have it follows from their scripts (``has``: a
    ``scripts/sections/<name>/<name>_<framework>.py`` exists).
    ``takes_device``: its scripts take ``--on`` (the ceilings measure every device there is).
    ``runtime`` (minutes) and ``mem_mb``: what each of its jobs asks SLURM for.
    ``claims``: its claims that are one case faster than another (``SpeedClaim``).
    ``documents_code``: the documents' MXNet code has the section, so the documents'
    framework has its script; False for a section of today's APIs (data-parallel
    training with a process per device), which a framework may not have yet.
    ``process_per_device``: its preset's ``device_counts`` are processes, one per device:
    its SLURM job asks for the largest count's GPUs, and over the preset's ``nodes``
    (more than 1) for a task per device spread over that many nodes; and a sample is a
    fixed number of images (``images``), not an epoch.
    ``models``: the models a training section trains (``d2lperf.flops`` counts their
    FLOPs); its cases are ``<model>_<n>_device(s)``. ``defines``: the models its scripts
    define, the book's code of each, which another section's scripts and the commands
    load from there (``model_script``): one definition of each net.
    ``aa_pairs``: its A/A checks (``AAPair``), judged beside its claims.
    ``presets``: its entry in each preset it declares (``documents``: the documents'
    workloads, ``ci``: small ones), each key its scripts' option of the same name; the
    config's ``presets`` may set any of them over it (``complete_presets``).
    ``work``: what one sample of a case performs, ``{case: Dots(...) or Copies(...)}``,
    from which summarise gives its rate (GFLOP/s, GB/s) and its share of the ceilings."""

    order: int
    title: str
    plot_title: str
    name: str = ""
    document: str = "seeds/000"
    heading: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    framework_options: Mapping[str, str] = field(default_factory=dict)
    plot: str = "timing"
    off_the_plot: tuple[str, ...] = ()
    gpus: int = 0
    cpu_stand_in: bool = False
    data: bool = False
    blas: bool = False
    exports_model: bool = False
    takes_device: bool = True
    runtime: int = 30
    mem_mb: int = 8000
    claims: tuple[SpeedClaim, ...] = ()
    documents_code: bool = True
    process_per_device: bool = False
    models: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    work: Mapping[str, Matrices] = field(default_factory=dict)
    aa_pairs: tuple[AAPair, ...] = ()
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def options_schema(self) -> dict[str, object]:
        """The JSON schema of this section's entry in a preset."""
        if "$ref" in self.options:
            return dict(self.options)
        return {"type": "object", "additionalProperties": False,
                "required": list(self.required), "properties": dict(self.options)}

    def rate_parameters(self) -> list[str]:
        """The parameters a good run keeps because its rates are computed from them (the
        run record's schema requires them, ``results.rate_rules``): the sides and counts of
        its work; a training section's images (``train_limit`` for an epoch; ``models`` and
        ``images`` for a sample of a section with a process per device)."""
        names = [name for work in self.work.values() for name in work.parameters()]
        if self.models:
            names += ["models", "images"] if self.process_per_device else ["train_limit"]
        return list(dict.fromkeys(names))

    def takes(self, key: str, framework: str | None = None) -> bool:
        """Whether ``framework``'s script takes option ``key`` as a workload flag of its
        own: not a shared one (``SHARED``), nor one only another framework's script takes
        (``framework_options``; None: a key every framework's script takes)."""
        return key not in SHARED and self.framework_options.get(key, framework) == framework

    def has(self, framework: str) -> bool:
        """Whether ``framework`` has this section: its script is there."""
        return script(self.name, framework).is_file()


SCRIPTS = Path(__file__).resolve().parents[1] / "sections"  # a folder per section


def script(section: str, framework: str) -> Path:
    """A framework's script of a section: ``scripts/sections/<section>/<section>_<framework>.py``
    (named after both: a ``mxnet.py`` would stand in for MXNet where it is run)."""
    return SCRIPTS / section / f"{section}_{framework}.py"


DECLARATION = "section.py"  # in a section's folder: SECTION = Section(...)


def load_module(path: Path, name: str):
    """The Python file at ``path`` as a module named ``name``, without running it as a
    program (its ``__main__`` block does not run)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import would: a dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def load_script(framework: str, name: str):
    """A section's script as a module, without running it (its models, for another
    script or a command that uses the same ones: one definition of each)."""
    return load_module(script(name, framework), f"{framework}_{name}")


def model_script(framework: str, model: str):
    """The script of ``framework`` that defines ``model`` (the book's code of that net, in
    the section whose declaration ``defines`` it), as a module."""
    owner = next((s.name for s in SECTIONS.values() if model in s.defines), None)
    if owner is None:
        raise KeyError(f"no section defines the model {model!r}")
    return load_script(framework, owner)


def discover(folder: Path = SCRIPTS) -> dict[str, Section]:
    """Every section declared under ``folder`` (a ``<name>/section.py`` each), named by
    its folder, in the report's order (``Section.order``, then name)."""
    found = []
    for declaration in sorted(folder.glob(f"*/{DECLARATION}")):
        name = declaration.parent.name
        module = load_module(declaration, f"{name}_section")
        entry = getattr(module, "SECTION", None)
        if not isinstance(entry, Section):
            raise TypeError(f"{declaration}: declares no SECTION = Section(...)")
        found.append(dataclasses.replace(entry, name=name))
    return {s.name: s for s in sorted(found, key=lambda s: (s.order, s.name))}


SECTIONS: dict[str, Section] = discover()

# What the jobs that are not sections ask SLURM for (minutes, MB): machine_info records
# the compute node, with the GPUs the sections use so that it sees them where SLURM
# confines devices; blas_reference (only with blas: system) the stock BLAS's results.
OTHER_JOBS: dict[str, dict[str, int]] = {
    "machine_info": {"cpus_per_task": 1, "mem_mb": 2000, "runtime": 10,
                     "gpu": max(s.gpus for s in SECTIONS.values())},
    "blas_reference": {"cpus_per_task": 2, "mem_mb": 4000, "runtime": 10},
}
# Cores of a timing job's SLURM allocation when config key threads is "auto" (one thread
# per core of the job): the test cluster's. Set threads to a number to ask for that many.
TIMING_CPUS = 2
# Quoted twice: Snakemake evaluates resource strings, the SLURM plugin passes this to
# sbatch. A timing job has its node to itself: nothing shares its cores, memory bandwidth
# or GPUs while it times.
EXCLUSIVE = "'--exclusive'"

CSV_COLUMNS = ("section", "document", "heading", "title")


def tables(kind: str) -> list[Path]:
    """Each section's own table of ``kind``, in the report's order, where it has one:
    ``scripts/sections/<section>/<kind>.csv`` (``reference``: the documents' figures it
    reproduces; ``labels``: the labels of its other cases). Each row names its section,
    so that the tables read as one (``d2lperf.tables``, ``d2lperf.labels``)."""
    return [path for path in (SCRIPTS / s / f"{kind}.csv" for s in SECTIONS) if path.is_file()]


def complete_presets(given: Any) -> Any:
    """Every preset, a section's entry in it its declaration's (``Section.presets``) with
    the entry the config gives (``given``: the config's ``presets``) over it, key by key:
    the config sets only what it changes, and a key it sets to null is left out (the
    script's default). A preset the config alone names has the entries it gives. What is
    not a mapping is left as given, for the config's schema to refuse."""
    if given is not None and not isinstance(given, Mapping):
        return given
    given = given or {}
    declared = [name for s in SECTIONS.values() for name in s.presets]
    completed: dict[Any, Any] = {}
    for name in dict.fromkeys([*declared, *given]):
        over = given.get(name) or {}
        if not isinstance(over, Mapping):
            completed[name] = over
            continue
        entries: dict[Any, Any] = {}
        for section, entry in SECTIONS.items():
            mine, theirs = entry.presets.get(name), over.get(section)
            if mine is None or not isinstance(theirs, Mapping | None):
                if theirs is not None:
                    entries[section] = theirs
                continue
            merged = {**mine, **(theirs or {})}
            entries[section] = {k: v for k, v in merged.items() if v is not None}
        entries |= {k: v for k, v in over.items() if k not in SECTIONS}  # the schema says
        completed[name] = entries
    return completed


def names() -> list[str]:
    """Every section, in the report's order."""
    return list(SECTIONS)


def framework_options() -> dict[str, str]:
    """Preset keys only one framework's script takes, over every section."""
    return {k: v for s in SECTIONS.values() for k, v in s.framework_options.items()}


def preset_schema() -> dict[str, object]:
    """The JSON schema of one preset: an entry per section, each with its options."""
    return {"type": "object", "additionalProperties": False, "required": names(),
            "properties": {name: s.options_schema() for name, s in SECTIONS.items()}}


def flag(key: str) -> str:
    """A preset key's command-line flag: ``batch_size`` -> ``--batch-size`` (the flags
    made from a declaration and the arguments made from a preset alike)."""
    return "--" + key.replace("_", "-")


def models_outside(models: Sequence[str], cpu_models: Iterable[str] | None) -> list[str]:
    """The nets a process-per-device section's ``cpu_models`` names that are not among
    its ``models`` (refused by the config check and the worker alike)."""
    return [m for m in cpu_models or () if m not in models]


def images_step(batch_size: int, device_counts: Iterable[int]) -> int:
    """What a section with a process per device needs its images per sample to be a
    multiple of: whole steps of ``batch_size`` on every device count alike, so that a
    sample is the same work on every machine (the config check and the worker both ask)."""
    return batch_size * math.lcm(*device_counts)


def device_kind(section: str, gpu_everywhere: bool, gpu_count: int,
                gpu_sections_on_cpu: bool = False) -> str | None:
    """What a section's job runs on (its scripts' ``--on``: "gpu" or "cpu"), or None where
    they take no ``--on``, given the framework (``gpu_everywhere``: it queues work only on
    a GPU, so every section runs there where the machine has one), the machine's GPUs and
    the config's ``gpu_sections_on_cpu``.
    - A section written for GPUs (``gpus``) runs on them where the machine has as many;
      with fewer, its CPU stand-in (``cpu_stand_in``: the documents' own from-scratch code
      ran on cpu(0), cpu(1)) or, without one, GPU contexts (it skips, saying why) unless
      the config says to run it on the CPU.
    - A section with a process per device runs on the machine's GPUs wherever it has any,
      in every framework, as its users run it (and on cores where it has none).
    - Any other section runs on a GPU where the framework queues work only there and the
      machine has one, else on the CPU (the documents' default context)."""
    entry = SECTIONS[section]
    if entry.gpus:
        if gpu_everywhere and gpu_count:
            return "gpu"
        if entry.cpu_stand_in:
            return "gpu" if gpu_count >= entry.gpus else "cpu"
        return "cpu" if gpu_sections_on_cpu else "gpu"
    if not entry.takes_device:
        return None
    if entry.process_per_device or gpu_everywhere:
        return "gpu" if gpu_count else "cpu"
    return None


def slurm_resources(section: str, framework_gpus: bool, threads: int | str,
                    options: Mapping[str, Any] | None = None,
                    cluster_gpus: bool = True) -> dict[str, int | str]:
    """What one timing job asks SLURM for: its nodes exclusively, the section's time and
    memory (a node's), its GPUs (at least one for a framework that runs every section on
    a GPU where there is one: ``framework_gpus``; none asked for where it needs none), and
    a core per thread. A section with a process per device (``options``: its preset
    entry) asks for a GPU per device of its largest count; over several ``nodes``, for a
    task per device on that many nodes, which its script starts with srun (the plugin's
    ``mpi`` jobs run the rule's command in the job's first node, not in a job step).
    ``cluster_gpus`` false (config key cluster_gpus: a cluster without GPUs): no GPU at
    all, since SLURM refuses a job that asks for GPUs no node has."""
    entry = SECTIONS[section]
    gpus = max(entry.gpus, 1) if framework_gpus else entry.gpus
    wanted: dict[str, int | str] = {
        "cpus_per_task": TIMING_CPUS if threads == "auto" else int(threads),
        "mem_mb": entry.mem_mb, "runtime": entry.runtime, "slurm_extra": EXCLUSIVE}
    if entry.process_per_device and options:
        devices = max(options["device_counts"])
        gpus = devices  # a GPU per device, in every framework (``device_kind``)
        if options.get("nodes", 1) > 1:
            # a task per device: --ntasks (the plugin turns a GPU job's `tasks` into
            # --ntasks-per-gpu, so that is said apart); the job's nodes are whole
            # (--exclusive), so one core a task is only what SLURM counts
            wanted.update(nodes=options["nodes"], tasks=devices, mpi="srun", cpus_per_task=1,
                          **({"tasks_per_gpu": 1} if gpus else {}))
    if not cluster_gpus:
        wanted.pop("tasks_per_gpu", None)
        return wanted
    return {**wanted, "gpu": gpus} if gpus else wanted


def other_job_resources(name: str, cluster_gpus: bool = True) -> dict[str, int]:
    """What a job that is not a section's asks SLURM for (``OTHER_JOBS``): without its GPUs
    where ``cluster_gpus`` is false (config key cluster_gpus)."""
    wanted = dict(OTHER_JOBS[name])
    if not cluster_gpus:
        wanted.pop("gpu", None)
    return wanted


def write_csv(path: str | Path) -> None:
    """The report's table of sections: order, document, the document's heading, title."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for s in SECTIONS.values():
            writer.writerow((s.name, s.document, s.heading, s.title))
