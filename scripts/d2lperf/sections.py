"""The chapter's sections, once: everything the workflow, the config check, the plots and
the report need to know about a section is one entry of ``SECTIONS`` below.

A section is a pair of scripts, ``scripts/sections/<framework>/<name>.py`` (one per
framework that has it), plus its entry here. The Snakefile makes one rule per entry and
framework and takes each job's SLURM resources from it; the config check takes the
section's preset options from it (so a preset must have an entry for every section,
with the keys it requires); the plots take their titles and kind; the report its order
and headings (``write_csv`` writes the table the report reads).

This module imports nothing but the standard library: the Snakefile, the config check
and the section scripts all read it, and reading it must load nothing else.
"""

from __future__ import annotations

import csv
import importlib.util
import math
import sys
from collections.abc import Iterable, Mapping
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


@dataclass(frozen=True)
class SpeedClaim:
    """A claim declared with its section: ``faster`` takes less time than ``slower``,
    judged by the speed rule (``d2lperf.claims``) on their ratio of medians. ``text``: the
    claim, framework-neutral; ``short``: the report's first screen; ``label``: how the
    evidence names the ratio (default ``faster/slower``); ``document_section``: the
    section whose documents' figures of the same cases the report sets beside it, where
    the documents printed them under another section. Claims with rules of their own
    are written in ``d2lperf.claims``."""

    name: str
    text: str
    short: str
    faster: str
    slower: str
    label: str = ""
    document_section: str = ""


@dataclass(frozen=True)
class Section:
    """One section of the chapter (or the machine's ceilings), as every step sees it.

    ``options`` is the JSON schema of its preset entry: a mapping of property schemas
    (or a whole schema, as ``TRAINING``); ``required`` the keys every preset must set.
    ``document_options``: the workload options with the document's values, which both
    twins' command lines take as defaults (``harness.parser(section=...)``);
    ``document_runs``: a training section's calls of the documents' ``train(num_gpus,
    batch_size, lr)`` and epochs, the defaults of ``training.parser``.
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
    ``scripts/sections/<framework>/<name>.py`` exists).
    ``takes_device``: its scripts take ``--on`` (the ceilings measure every device there is).
    ``runtime`` (minutes) and ``mem_mb``: what each of its jobs asks SLURM for.
    ``claims``: its claims that are one case faster than another (``SpeedClaim``).
    ``documents_code``: the documents' MXNet code has the section, so the documents'
    framework has its script; False for a section of today's APIs (data-parallel
    training with a process per device), which a framework may not have yet.
    ``process_per_device``: its preset's ``device_counts`` are processes, one per device:
    its SLURM job asks for the largest count's GPUs, and over the preset's ``nodes``
    (more than 1) for a task per device spread over that many nodes."""

    name: str
    title: str
    plot_title: str
    document: str = "seeds/000"
    heading: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    document_options: tuple[tuple[str, int, str], ...] = ()
    document_runs: Mapping[str, Any] = field(default_factory=dict)
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

    def options_schema(self) -> dict[str, object]:
        """The JSON schema of this section's entry in a preset."""
        if "$ref" in self.options:
            return dict(self.options)
        return {"type": "object", "additionalProperties": False,
                "required": list(self.required), "properties": dict(self.options)}

    def has(self, framework: str) -> bool:
        """Whether ``framework`` has this section: its script is there."""
        return (SCRIPTS / framework / f"{self.name}.py").is_file()


SCRIPTS = Path(__file__).resolve().parents[1] / "sections"  # a folder per framework


def load_script(framework: str, name: str):
    """A section's script as a module, without running it (its models, for another
    script or a command that uses the same ones: one definition of each)."""
    path = SCRIPTS / framework / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{framework}_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import would: a dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


# In the documents' order: the report shows them so.
SECTIONS: dict[str, Section] = {s.name: s for s in [
    Section(
        "hybridize",
        title="Hybrid imperative and symbolic programming (hybridize)",
        heading="命令式和符号式混合编程",
        plot_title="MLP forward passes before and after hybridize()",
        options={"forward_passes": COUNT, **REPEATED,
                 "compile_runs": {**COUNT, "description": "PyTorch only, cold and warm "
                                  "torch.compile timings in fresh processes"}},
        required=("forward_passes", *REPEATED_REQUIRED),
        document_options=(("--forward-passes", 1000, "MLP forward passes per timed sample"),),
        framework_options={"compile_runs": "pytorch"},
        off_the_plot=("jit_script_compile", "torch_compile_cold", "torch_compile_warm"),
        exports_model=True,
        claims=(SpeedClaim(
            "hybridize_speeds_up_mlp",
            "compiling the MLP into a graph (hybridize) makes its forward passes faster",
            "hybridize() speeds up the MLP", faster="mlp_after_hybridize",
            slower="mlp_before_hybridize", label="after/before"),),
    ),
    Section(
        "async_computation",
        title="Asynchronous computation",
        heading="异步计算",
        plot_title="Asynchronous computation",
        options={"size": SIZE, "loop_iterations": COUNT, **REPEATED},
        required=("size", "loop_iterations", *REPEATED_REQUIRED),
        document_options=(("--size", 2000, "side of the square matrices"),
                          ("--loop-iterations", 1000, "x + 1 operations per timed loop")),
        blas=True,
    ),
    Section(
        "async_memory",
        title="Memory impact of asynchronous computation",
        heading="异步计算对内存的影响",
        plot_title="Memory impact of asynchronous computation",
        options={"batches": COUNT, "batch_size": COUNT, "report_every": COUNT,
                 **TIMING},
        required=("batches", "batch_size", "report_every", *REPEATED_REQUIRED),
        plot="memory",
    ),
    Section(
        "auto_parallelism",
        title="Automatic parallelism: CPU and GPU, computation and communication",
        heading="CPU和GPU的并行计算; 计算和通信的并行计算",
        plot_title="Automatic parallelism: CPU and GPU, compute and copy",
        options={"cpu_size": SIZE, "gpu_size": SIZE, "dots": COUNT, **REPEATED},
        required=("cpu_size", "gpu_size", "dots", *REPEATED_REQUIRED),
        document_options=(("--cpu-size", 2000, "x_cpu is cpu-size x cpu-size"),
                          ("--gpu-size", 6000, "x_gpu is gpu-size x gpu-size"),
                          ("--dots", 10, "matrix products per run(x)")),
        gpus=1,
        blas=True,
    ),
    Section(
        "small_ops_parallel",
        title="Small computations, in parallel",
        heading="简单计算量小，并行计算",
        plot_title="Two small random draws, separately and together",
        options={"size": SIZE, **REPEATED},
        required=("size", *REPEATED_REQUIRED),
        document_options=(("--size", 2000, "X and Y are size x size"),),
    ),
    Section(
        "multi_gpu_scratch",
        title="Multi-device training from scratch (LeNet, allreduce, split_and_load)",
        heading="多GPU并行计算",
        plot_title="LeNet from scratch, 1 vs 2 devices",
        options=TRAINING,
        document_runs={"devices_per_run": [1, 2], "batch_sizes": [256, 256],
                       "learning_rates": [0.2, 0.2], "epochs": 4},
        plot="training",
        gpus=2,
        cpu_stand_in=True,
        data=True,
        blas=True,
        runtime=60,
    ),
    Section(
        "multi_gpu_gluon",
        title="Concise multi-device training with Gluon (ResNet-18)",
        document="seeds/000 and seeds/001",
        heading="多GPU简洁实现; 多 GPU 训练",
        plot_title="ResNet-18, 1 vs 2 devices",
        options=TRAINING,
        document_runs={"devices_per_run": [1, 2], "batch_sizes": [256, 512],
                       "learning_rates": [0.1, 0.2], "epochs": 10},
        plot="training",
        gpus=2,
        data=True,
        runtime=120,
        mem_mb=16000,
    ),
    Section(
        "data_parallel",
        title="Data-parallel training at every device count, a process per device",
        document="seeds/000 and seeds/001, with today's API",
        heading="多GPU并行计算; 多GPU简洁实现",
        plot_title="LeNet and ResNet-18, data-parallel: images/s against devices",
        options={"models": {"type": "array", "minItems": 1, "uniqueItems": True,
                            "items": {"enum": ["lenet", "resnet18"]}},
                 "images": {"type": "array", "minItems": 1, "items": COUNT,
                            "description": "images per timed sample, per model"},
                 "learning_rates": {"type": "array", "minItems": 1,
                                    "items": {"type": "number", "exclusiveMinimum": 0}},
                 "device_counts": {"type": "array", "minItems": 1, "items": DEVICE_COUNT},
                 "nodes": {**COUNT, "description": "nodes of a SLURM job the largest count "
                           "spans, a process per device (default 1)"},
                 "batch_size": COUNT, "train_limit": TRAIN_LIMIT, **REPEATED,
                 "seed": TRAINING_SEED},
        required=("models", "images", "learning_rates", "device_counts", "batch_size",
                  *REPEATED_REQUIRED),
        plot="scaling",
        documents_code=False,
        process_per_device=True,
        data=True,
        runtime=60,
        mem_mb=16000,
        claims=(SpeedClaim(
            "two_devices_train_lenet_faster", "two devices train LeNet faster than one "
            "(data-parallel, one process per device)", "2 devices train LeNet faster",
            # no documents' figure: their LeNet's two devices were cpu(0), cpu(1), two
            # queues on one processor, not two processors
            faster="lenet_2_devices", slower="lenet_1_device", label="2 devices/1 device"),
            SpeedClaim(
            "two_devices_train_resnet_faster", "two devices train ResNet-18 faster than "
            "one (data-parallel, one process per device)",
            "2 devices train ResNet-18 faster", faster="resnet18_2_devices",
            slower="resnet18_1_device", label="2 devices/1 device",
            document_section="multi_gpu_gluon")),
    ),
    # not a section of the chapter: this machine's peak rates, which the report sets the
    # timings against; the best of every framework's libraries (so every framework has it)
    Section(
        "ceilings",
        title="Machine ceilings: peak matrix-multiply rate and memory bandwidth, measured here",
        document="this machine",
        plot_title="Machine ceilings (GFLOP/s for dot, GB/s for copies)",
        options={"dot_sizes": {"type": "array", "minItems": 1, "items": SIZE},
                 "copy_mb": {"type": "integer", "minimum": 1, "maximum": 16384},
                 **TIMING},
        required=("dot_sizes", "copy_mb", *REPEATED_REQUIRED),
        plot="rates",
        blas=True,
        takes_device=False,
    ),
]}

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
