import os
import sys

from snakemake.settings.types import DeploymentMethod

sys.path.insert(0, os.path.join(workflow.basedir, "scripts"))

from d2lperf.configcheck import ConfigError, check_config
from d2lperf.machine import machine_id

try:
    check_config(
        config, os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml")
    )
except ConfigError as error:
    raise WorkflowError(f"Invalid configuration:\n{error}") from None

MACHINE = config.get("machine") or machine_id()
RESULTS = f"results/{MACHINE}"
PRESET = config["presets"][config["preset"]]
THREADS = os.cpu_count() if config["threads"] == "auto" else config["threads"]
# The experiment environment's interpreter, and the workflow environment's (this
# one). Under --sdm conda each rule's conda environment provides `python` instead.
USING_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
EXPERIMENT_PY = "python" if USING_CONDA else config["experiment_python"]
WORKFLOW_PY = "python" if USING_CONDA else sys.executable
EXPERIMENT_ENV = "../../envs/mxnet.yaml"
WORKFLOW_ENV = "../../envs/workflow.yaml"
# Timing jobs take the whole of this resource, every other job one unit of it, so
# no job ever runs beside a timing (DESIGN.md decision 5; set in the default profile).
MACHINE_LOCK = 100

EXPERIMENTS = ["hybridize"]


def timing_args(section):
    """The harness arguments every experiment script takes, from the preset."""
    p = PRESET[section]
    return f"--threads {THREADS} --warmup {p['warmup']} --repeats {p['repeats']}"


def experiment_outputs(section):
    return {
        "csv": f"{RESULTS}/{section}/samples.csv",
        "sidecar": f"{RESULTS}/{section}/run.json",
    }


def on_failure(section):
    """Shell fallback: a failed experiment still leaves a run record the report can show."""
    return (
        f"|| {WORKFLOW_PY} scripts/record_failure.py --experiment {section} "
        f"--exit-code $? --log {{log}} --csv {{output.csv}} --sidecar {{output.sidecar}}"
    )
