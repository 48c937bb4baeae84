"""The plan of a run: which timing jobs it runs, each with its script, every argument,
its environment, what it asks a cluster for and what it says when it starts. A pure
function of the config (checked), the facts of this machine and run (``Facts``: its
results folder, cores, GPUs, BLAS) and the tables of sections and frameworks; nothing here
looks at the machine or starts a program. The workflow (``workflow/rules/common.smk``)
gathers the facts once per parse and makes one rule of each ``Job``; the tests call
``jobs`` in-process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from d2lperf import sections
from d2lperf.blas import check_coretype, empty_variables, find_system_blas
from d2lperf.frameworks import DOCUMENTS, REGISTRY, rule_name
from d2lperf.presets import cli_args, for_framework
from d2lperf.provenance import PINNED_THREAD_VARIABLES

# Timing jobs take the whole of this resource, every other job one unit of it, so that no
# job ever runs beside a timing (docs/design.md, "Timing jobs run alone").
MACHINE_LOCK = 100


@dataclass(frozen=True)
class Facts:
    """What the plan needs of this machine and run, found once by the workflow.
    ``results``: the run's folder (``results/<machine>``, a BLAS variant's beside it);
    ``machine``: the machine's id; ``threads``: the config's threads, "auto" resolved to
    the cores this run may use; ``gpus``: the NVIDIA GPUs nvidia-smi lists;
    ``system_blas``: the library a system-BLAS variant preloads (else empty);
    ``coretype``: the OpenBLAS kernel a variant forces (else empty); ``empty_blas``: the
    BLAS variables this run inherited set to nothing (a job drops them)."""

    results: str
    machine: str
    threads: int
    gpus: int = 0
    system_blas: str = ""
    coretype: str = ""
    empty_blas: tuple[str, ...] = ()

    @property
    def variant(self) -> bool:
        """A BLAS variant's run: a system BLAS or a forced kernel."""
        return bool(self.system_blas or self.coretype)

    @property
    def blas_reference(self) -> str:
        """The stock BLAS's float64 product a variant is checked against."""
        return f"results/{self.machine}/blas_reference.npz"


@dataclass(frozen=True)
class Job:
    """One timing job: ``section`` in ``framework``, its rule's name (``rule``), the
    script the manager runs, its arguments (``args``, every one explicit), the variables
    it starts with (``environment``, as ``env`` takes them), what it asks SLURM for
    (``resources``, the machine lock included), its console line (``message``), and its
    files. ``needs_blas_reference``: it waits for the stock BLAS's product."""

    section: str
    framework: str
    rule: str
    script: str
    args: list[str]
    environment: list[str]
    resources: dict[str, int | str]
    message: str
    csv: str
    sidecar: str
    log: str
    benchmark: str
    needs_blas_reference: bool


def facts(config: Mapping[str, Any], *, machine: str, cores: int, gpus: int,
          environ: Mapping[str, str] | None = None) -> Facts:
    """The facts of a run on this machine, from the config (checked) and what the
    workflow found once: the machine's id, the cores this process may use, its GPUs.
    A system BLAS (``blas: system``: the configured library or the system's OpenBLAS,
    BlasError where none is usable) or a forced kernel (``blas_coretype``) makes a variant
    of the machine's results, in a folder of its own beside the stock one, which the report
    compares with it (docs/design.md, "Ceilings and BLAS")."""
    system_blas = (str(find_system_blas(config.get("system_blas_path", "")))
                   if config.get("blas", "bundled") == "system" else "")
    coretype = check_coretype(config.get("blas_coretype", ""))
    results = (f"results/{machine}" + ("--system-blas" if system_blas else "")
               + (f"--{coretype.lower()}-kernel" if coretype else ""))
    return Facts(results=results, machine=machine,
                 threads=cores if config["threads"] == "auto" else config["threads"],
                 gpus=gpus, system_blas=system_blas, coretype=coretype,
                 empty_blas=tuple(empty_variables(None if environ is None else dict(environ))))


def frameworks(config: Mapping[str, Any], facts: Facts) -> list[str]:
    """The frameworks whose scripts run, in the config's order. A BLAS variant swaps the
    documents' framework's BLAS only (LD_PRELOAD): any other's run would be the stock
    run's again, so a variant runs the frameworks that have one alone."""
    return [f for f in config.get("frameworks", list(REGISTRY))
            if REGISTRY[f].blas_variant or not facts.variant]


def section_names(config: Mapping[str, Any]) -> list[str]:
    """The sections that run, in the documents' order (``sections`` in the config: some
    of them only)."""
    return [s for s in sections.names() if s in config.get("sections", [s])]


def device_kind(config: Mapping[str, Any], facts: Facts, section: str,
                framework: str = DOCUMENTS) -> str | None:
    """What the section's job runs on in ``framework`` (its ``--on``), or None: the
    table's rule (``sections.device_kind``) on this machine's GPUs and the config."""
    return sections.device_kind(section, REGISTRY[framework].gpu_everywhere, facts.gpus,
                                config.get("gpu_sections_on_cpu", False))


def threads(config: Mapping[str, Any], facts: Facts, section: str | None) -> int:
    """A job's threads: the run's, except one OpenMP thread per engine queue where a
    section written for GPUs runs on CPU contexts (the mxnet wheel's OpenBLAS 0.3.13,
    built with OpenMP, hangs when two queues call its multithreaded sgemm at once)."""
    entry = sections.SECTIONS.get(section or "")
    if entry and entry.gpus and device_kind(config, facts, section) == "cpu":
        return 1
    return facts.threads


def chosen_preset(config: Mapping[str, Any]) -> dict[str, Any]:
    """The preset the config chooses, every section's entry in it: its declaration's with
    the config's keys over it (``sections.complete_presets``)."""
    return sections.complete_presets(config.get("presets"))[config["preset"]]


def arguments(config: Mapping[str, Any], facts: Facts, section: str,
              framework: str = DOCUMENTS) -> list[str]:
    """Every argument a section's script gets, all explicit, all from the config."""
    preset = chosen_preset(config)[section]
    entry = sections.SECTIONS[section]
    options = {"threads": threads(config, facts, section),
               "probe_seconds": config.get("probe_seconds", 0.2),
               **for_framework(preset, framework)}
    if "processes" in preset:  # its stages decide against the report's band
        options["band"] = config.get("practical_band", 0.05)
    on = device_kind(config, facts, section, framework)
    if on:
        options["on"] = on
    if entry.data:
        options["data_dir"] = config.get("data_dir") or None
        options["data_download"] = config.get("data_download", False)
    if entry.exports_model:
        options["export_dir"] = f"{facts.results}/{rule_name(section, framework)}/model"
    if facts.variant and entry.blas:
        options["blas_reference"] = facts.blas_reference
    return cli_args(options)  # one word each


def environment(config: Mapping[str, Any], facts: Facts, section: str | None = None,
                framework: str = DOCUMENTS) -> list[str]:
    """The variables a job starts with, as ``env`` arguments: thread counts set before
    the process starts (a preloaded BLAS reads them when it loads, before any Python
    runs, and Snakemake would otherwise set them to the job's ``threads``), the variant's
    BLAS in place of the bundled one, and unbuffered output, so that a killed job's log
    holds all it printed. A BLAS variable inherited empty is dropped: OpenBLAS reads an
    empty kernel name as one it does not know, and some of its kernels then compute
    wrong."""
    n = threads(config, facts, section)
    unset = [word for name in facts.empty_blas if name not in PINNED_THREAD_VARIABLES
             for word in ("-u", name)]
    variables = [f"{name}={n}" for name in PINNED_THREAD_VARIABLES]
    variables.append("PYTHONUNBUFFERED=1")
    swapped = REGISTRY[framework].blas_variant
    if facts.system_blas and swapped:
        variables.append(f"LD_PRELOAD={facts.system_blas}")
    if facts.coretype and swapped:
        variables.append(f"OPENBLAS_CORETYPE={facts.coretype}")
    return unset + variables


def limit(config: Mapping[str, Any], section: str, framework: str) -> str:
    """How long a timing job may take, in words: its budget of measuring, else the time
    limit its cluster job asks for."""
    preset = chosen_preset(config)[section]
    budget = for_framework(preset, framework).get("budget_seconds")
    return (f"at most {budget} s of measuring" if budget
            else f"under {sections.SECTIONS[section].runtime} min")


def message(config: Mapping[str, Any], facts: Facts, section: str, framework: str) -> str:
    """What a timing job says on the console when it starts: what it times, that nothing
    runs beside it, how long it may take and its log. Paths are written out: a message is
    printed, never run."""
    return (f"{sections.SECTIONS[section].title}, {REGISTRY[framework].label}: timing alone "
            f"on this machine, {limit(config, section, framework)}; log: "
            f"{facts.results}/logs/{rule_name(section, framework)}.log")


def jobs(config: Mapping[str, Any], facts: Facts,
         frameworks_run: Sequence[str] | None = None) -> list[Job]:
    """The run's timing jobs: one per section that runs and framework that runs and has
    it, in the documents' order of sections."""
    preset = chosen_preset(config)
    cluster_gpus = config.get("cluster_gpus", True)
    found = []
    for section in section_names(config):
        for framework in frameworks_run or frameworks(config, facts):
            if not sections.SECTIONS[section].has(framework):
                continue
            rule = rule_name(section, framework)
            folder = f"{facts.results}/{rule}"
            resources = sections.slurm_resources(
                section, REGISTRY[framework].gpu_everywhere, config["threads"],
                for_framework(preset[section], framework), cluster_gpus=cluster_gpus)
            found.append(Job(
                section=section, framework=framework, rule=rule,
                script=f"scripts/sections/{section}/{section}_{framework}.py",
                args=arguments(config, facts, section, framework),
                environment=environment(config, facts, section, framework),
                resources={**resources, "machine_lock": MACHINE_LOCK},
                message=message(config, facts, section, framework),
                csv=f"{folder}/samples.csv", sidecar=f"{folder}/run.json",
                log=f"{facts.results}/logs/{rule}.log",
                benchmark=f"{facts.results}/benchmarks/{rule}.tsv",
                needs_blas_reference=(facts.variant and sections.SECTIONS[section].blas
                                      and REGISTRY[framework].blas_variant)))
    return found
