import os
import shlex
import signal
import sys
from pathlib import Path

from snakemake.settings.types import DeploymentMethod

# This workflow's own package (scripts/d2lperf), here and in every job it starts, before any
# d2lperf an environment has installed: a checkout or a copy of the workflow runs its own
# code. Jobs call its steps as `python -m d2lperf <command>` (d2lperf.cli); every shell
# job starts with Snakemake's own prefix (bash's strict mode: pipefail keeps a section's
# exit status through its log's pipe) and this folder first on PYTHONPATH.
SCRIPTS = os.path.join(workflow.basedir, "scripts")
sys.path.insert(0, SCRIPTS)
# (Snakemake formats the prefix as it formats a rule's shell line: its braces are doubled.)
SCRIPTS_FIRST = shlex.quote(SCRIPTS).replace("{", "{{").replace("}", "}}")
shell.prefix(
    "set -euo pipefail; export PYTHONPATH="
    + SCRIPTS_FIRST
    + '"${{PYTHONPATH:+:$PYTHONPATH}}"; '
)

from d2lperf import sections as SECTION_TABLE
from d2lperf import children, hostlock

# A job that Snakemake runs in a process of its own (a `run:` rule's: this file is read
# again there, the frameworks' interpreters asked and all) holds the host's timing lock
# shared from here until it ends, as every job but a timing does (docs/design.md,
# "One timing at a time per host; nothing outlives its section"). Only `run:` (and
# shadow) rules run so; a timing rule must stay a shell rule, or it would wait for itself.
if workflow.subprocess_exec:
    hostlock.share("a `run:` job")

from d2lperf.configcheck import ConfigError, check_config, check_data_dir, check_threads
from d2lperf.blas import BlasError
from d2lperf.machine import MachineIdError, check_machine_id, gpus, machine_id
from d2lperf.frameworks import DOCUMENTS, REGISTRY as FRAMEWORK
from d2lperf.frameworks import problem as framework_problem
from d2lperf.frameworks import rule_name
from d2lperf import plan as PLAN

try:
    check_config(
        config, os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml")
    )
    check_data_dir(config.get("data_dir", ""))
except ConfigError as error:
    raise WorkflowError(f"Invalid configuration:\n{error}") from None

# A cluster job reads this file again on its compute node, whose hardware id need not be
# the submitting host's: there the id must come from the config, as it did for the submitter.
if workflow.remote_exec and not config.get("machine"):
    raise WorkflowError(
        "Invalid configuration:\nconfig key machine is empty in a cluster job; set it when "
        "submitting (--config machine=<id of the compute nodes>), since the id derived from "
        f"this node ({machine_id()}) need not be the submitting host's"
    )
try:
    MACHINE = config.get("machine") or check_machine_id(
        machine_id(), "the machine id derived from this hardware,"
    )
except MachineIdError as error:
    raise WorkflowError(
        f"Invalid configuration:\n{error}; set config key machine to one"
    ) from None
# "auto": one thread per core this process may run on; all of them on a workstation,
# the job's own (cpus_per_task) inside a SLURM job step, which is pinned to them.
AVAILABLE_CORES = (
    len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
)
# Refused, not capped: a timing with more threads than cores measures something else.
# A cluster submitter's own cores say nothing of the nodes': each job checks its own.
if workflow.local_exec or workflow.remote_exec:
    try:
        check_threads(config["threads"], AVAILABLE_CORES)
    except ConfigError as error:
        raise WorkflowError(f"Invalid configuration:\n{error}") from None
# The facts of this machine and run the plan needs, found once per parse (the plan of
# timing jobs is a pure function of them and the config: d2lperf.plan): among them the
# run's results folder, a BLAS variant's (a system BLAS, a forced OpenBLAS kernel) beside
# the stock one.
try:
    FACTS = PLAN.facts(config, machine=MACHINE, cores=AVAILABLE_CORES, gpus=len(gpus()))
except BlasError as error:
    raise WorkflowError(f"Invalid configuration:\n{error}") from None
RESULTS, THREADS = FACTS.results, FACTS.threads
SYSTEM_BLAS, CORETYPE, VARIANT = FACTS.system_blas, FACTS.coretype, FACTS.variant
RESULTS_ID = os.path.basename(RESULTS)
# Imported results are another machine's: never re-run, never mixed with this one's
# (nor written into by a BLAS variant's reference run, which goes to results/<machine>).
for folder in sorted({RESULTS, f"results/{MACHINE}"}):
    if os.path.exists(f"{folder}/imported.json"):
        raise WorkflowError(
            f"Invalid configuration:\nconfig key machine = {MACHINE!r}: {folder} holds "
            "results imported from another machine (it has imported.json), which this "
            "workflow never writes into; choose another machine id"
        )


# One run per checkout, and a host's timing lock that can be used safely, checked before
# any job starts (docs/design.md,
# "One timing at a time per host; nothing outlives its section"). Snakemake calls onstart
# only in a run that executes jobs: not in a dry run, --lint, --unlock, a run with nothing
# to do, nor in a job's own Snakemake (--no-hooks), so no job waits for its own run's lock.
# Told to stop (SIGTERM: `timeout`, a scheduler), Snakemake 9 waits for its running jobs,
# and a job waiting for a neighbour's timing would wait as long as that lasts: its jobs
# get SIGTERM first (d2lperf.children.stopping_children_first).
onstart:
    try:
        hostlock.check()
        hostlock.hold_run(os.getcwd())
    except hostlock.LockError as error:
        raise WorkflowError(f"Refused:\n{error}") from None
    signal.signal(
        signal.SIGTERM,
        children.stopping_children_first(signal.getsignal(signal.SIGTERM)),
    )


def other_machines():
    """Other machines' results (imported archives, earlier runs elsewhere): compared in
    the report, never written by any rule here, since every rule writes under RESULTS.
    Hidden folders (an import's staging folder) are never a machine; any other folder
    name must be a machine id, since it reaches the compare rule's command line."""
    found = []
    for path in sorted(Path("results").glob("*/summary.csv")):
        name = path.parent.name
        if name.startswith(".") or name == RESULTS_ID:
            continue
        try:
            found.append(check_machine_id(name, f"folder results/{name}:"))
        except MachineIdError as error:
            raise WorkflowError(
                f"{error}; rename or remove that folder (results/ holds one folder per machine)"
            ) from None
    return found


OTHER_MACHINES = other_machines()
# Speed-ups are against the configured machine; a BLAS variant's against its stock run.
BASELINE = config.get("baseline_machine") or (
    MACHINE if VARIANT and MACHINE in OTHER_MACHINES else RESULTS_ID
)
if BASELINE not in [RESULTS_ID, *OTHER_MACHINES]:
    raise WorkflowError(
        f"Invalid configuration:\nconfig key baseline_machine = {BASELINE!r}: no results of "
        f"that machine; allowed: {', '.join([RESULTS_ID, *OTHER_MACHINES])}"
    )
# Each framework's interpreter (the config key the framework registry names for it), and
# the workflow environment's (this one). Under --sdm conda each rule's conda environment
# provides `python` instead.
USING_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
INTERPRETER = {
    name: (
        "python"
        if USING_CONDA
        else config.get(f.interpreter_key, f.default_interpreter)
    )
    for name, f in FRAMEWORK.items()
}
CONDA_ENV = {name: f"../../{f.environment}" for name, f in FRAMEWORK.items()}
# The documents' framework's: it also records the stock BLAS's results for a variant.
EXPERIMENT_PY = INTERPRETER[DOCUMENTS]
EXPERIMENT_ENV = CONDA_ENV[DOCUMENTS]
WORKFLOW_PY = "python" if USING_CONDA else sys.executable
# A section's manager (`d2lperf measure`: it starts the framework's interpreter, and
# judges with scipy) runs in Snakemake's own interpreter, under conda too, where `python`
# is the framework's (docs/design.md, "Worker and manager").
MANAGER_PY = sys.executable
WORKFLOW_ENV = "../../envs/workflow.yaml"
# The frameworks whose section scripts run, each in its own interpreter (a BLAS variant:
# those it swaps the BLAS of, alone).
FRAMEWORKS = PLAN.frameworks(config, FACTS)
# Each framework's interpreter answers before any job runs: once per run (a job in a
# process of its own, a `run:` rule's, reads this file again, but its run asked already;
# a cluster job's node was checked by its submitter; conda builds the environments
# itself; a dry run runs none, so it starts no framework's interpreter).
if not (
    USING_CONDA
    or workflow.remote_exec
    or workflow.subprocess_exec
    or workflow.output_settings.dryrun
):
    for framework in FRAMEWORKS:
        wrong = framework_problem(framework, INTERPRETER[framework])
        if wrong:
            raise WorkflowError(f"Invalid configuration:\n{wrong}")
# machine_info records the machine with the first framework's interpreter (numpy, and
# MXNet's build where it runs).
MACHINE_PY = INTERPRETER[FRAMEWORKS[0]]
MACHINE_ENV = CONDA_ENV[FRAMEWORKS[0]]
# The chapter's sections that run, in the documents' order (`sections` in the config runs
# some of them only; the report shows those that ran), and the plan's timing jobs: one per
# section per framework that has it (d2lperf.plan, from the table of sections,
# d2lperf.sections, that the presets' schema, the plots and the report read too).
SECTIONS = PLAN.section_names(config)
TIMING_JOBS = PLAN.jobs(config, FACTS, FRAMEWORKS)
JOBS = [(job.section, job.framework) for job in TIMING_JOBS]
# What the aggregation rules read: every job's raw samples and run record.
SAMPLE_TABLES = [job.csv for job in TIMING_JOBS]
RUN_RECORDS = [job.sidecar for job in TIMING_JOBS]
# Each section's declaration, and its claims where it has claims of its own, in its folder:
# a new or edited one summarises (its claims, A/A pairs and rates), draws and writes the
# table of sections (titles, kinds, order) again.
DECLARATIONS = [
    f"scripts/sections/{name}/{SECTION_TABLE.DECLARATION}"
    for name in SECTION_TABLE.names()
] + [
    f"scripts/sections/{name}/claims.py"
    for name in SECTION_TABLE.names()
    if (SECTION_TABLE.SCRIPTS / name / "claims.py").is_file()
]
# Each section's own tables, in its folder: the documents' figures it reproduces and the
# labels of its other cases (every section's, whether this run runs it or not).
REFERENCE_TABLES = [
    f"scripts/sections/{p.parent.name}/{p.name}"
    for p in SECTION_TABLE.tables("reference")
]
LABEL_TABLES = [
    f"scripts/sections/{p.parent.name}/{p.name}" for p in SECTION_TABLE.tables("labels")
]


BLAS_REFERENCE = FACTS.blas_reference


def comparison_inputs(wildcards):
    """The cross-machine tables, only when other machines' results are present."""
    if not OTHER_MACHINES:
        return {}
    return {
        "comparison": rules.compare.output.table,
        "comparison_verdicts": rules.compare.output.verdicts,
        "comparison_machines": rules.compare.output.machines,
        "comparison_plot": rules.compare.output.plot,
    }


def kept_record(wildcards):
    """What became of the kept archives (`d2lperf import --kept`), so the report
    lists the refused ones; absent when none was ever imported."""
    record = "results/kept-archives.json"
    return {"kept": record} if os.path.exists(record) else {}


def kept_args(wildcards, input):
    return ["--kept", input.kept] if "kept" in input.keys() else []


def comparison_args(wildcards, input):
    if "comparison" not in input.keys():
        return []
    return [
        "--comparison",
        input.comparison,
        "--comparison-verdicts",
        input.comparison_verdicts,
        "--comparison-machines",
        input.comparison_machines,
        "--comparison-plot",
        input.comparison_plot,
    ]
