"""The workflow on a real SLURM cluster, through Snakemake's SLURM executor plugin.

scripts/slurm/start.sh starts a two-node cluster from Debian's slurm-wlm and munge (two
slurmd on this host, each node with this machine's real CPUs and memory and two
placeholder GPUs so that the GPU requests are scheduled); one section of each shape the
table of sections gives, at the CI preset, runs through `--workflow-profile
profiles/slurm` on the first node, and the data-parallel section across both (`nodes: 2`:
one task per device, its two-device group a rank on each node). Its results must have the
schema of a local run's, no two timing jobs may overlap, each job must get what the table
asks for, and bad requests must fail with SLURM's own message. Every daemon is stopped at
the end. Where SLURM cannot be started (not root, packages missing) the tests are skipped
with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from hang_guard import run_until_quiet

from conftest import (
    CI_CONFIG,
    CI_MACHINE,
    REPO,
    SNAKEMAKE,
    ci_preset,
    copy_workflow,
    shipped_config,
)

START = REPO / "scripts/slurm/start.sh"
STOP = REPO / "scripts/slurm/stop.sh"
# GPUs each section was written for (the table of sections).
SECTION_GPUS = {"hybridize": 0, "async_computation": 0, "async_memory": 0, "auto_parallelism": 1,
                "small_ops_parallel": 0, "multi_gpu_scratch": 2, "multi_gpu_gluon": 2,
                "ceilings": 0}
# The PyTorch twins' rules: on a GPU node each runs on a GPU, so each asks for one at least.
TWIN_GPUS = {f"{section}_pytorch": max(gpus, 1) for section, gpus in SECTION_GPUS.items()}
TIMING_MINUTES = {"multi_gpu_scratch": 60, "multi_gpu_gluon": 120}  # the others: 30
TIMING_MB = {"multi_gpu_gluon": 16000}  # the others: 8000
TIMING_RULES = {**SECTION_GPUS, **TWIN_GPUS}
# What runs through SLURM here: one rule of each shape the table gives (a CPU section, as
# the ceilings are too, and its PyTorch twin on a GPU; two GPUs with the longest time and
# the most memory) and machine_info, not every section: each job costs the cluster's
# scheduling, a Snakemake start on the node and 14 s or more of the executor's status
# polls, and what every rule asks for is checked against the table without a cluster
# (test_the_table_asks_what_the_cluster_expects).
SLURM_TIMING_RULES = ["small_ops_parallel", "small_ops_parallel_pytorch", "multi_gpu_gluon",
                      "data_parallel_pytorch"]
# The data-parallel section spans the cluster's two nodes (partition "multi"); the others
# stay on the first (the default partition), so no two timing jobs share a node.
ACROSS_NODES = "data_parallel_pytorch"
NODES = 2
# Rules that run a framework on the compute nodes; everything else is a localrule.
CLUSTER_RULES = {*SLURM_TIMING_RULES, "machine_info"}


def result_folder(results: Path, rule: str) -> Path:
    """Where a timing rule's raw results are: a folder named like the rule."""
    return results / rule


SLURM_ARGS = [
    "--workflow-profile", "profiles/slurm",
    # The first status check after 2 s, not 40: the CI jobs take seconds, not hours.
    "--slurm-init-seconds-before-status-checks", "2",
    # No slurmdbd here, so no sacct; squeue knows finished jobs for MinJobAge (600 s).
    "--slurm-status-command", "squeue",
    "--slurm-keep-successful-logs",
]
# Not a time limit: the run may take as long as it needs while it makes progress (output,
# job logs, results). Only this long without any sign of life counts as a hang.
QUIET_SECONDS = 300
BAD_INPUT_SECONDS = 60  # a refused submission is reported at once, not after a status poll


def what_slurm_says(work: Path, env: dict) -> str:
    """squeue's view of every job, and the tail of each job log: printed on a hang."""
    parts = []
    for command in (["squeue", "--states=all"], ["sinfo"]):
        try:
            shown = subprocess.run(command, env=env, capture_output=True, text=True, timeout=30)
            parts.append(f"$ {' '.join(command)}\n{shown.stdout}{shown.stderr}")
        except (OSError, subprocess.SubprocessError) as error:
            parts.append(f"$ {' '.join(command)}: {error}")
    for log in sorted((work / ".snakemake" / "slurm_logs").rglob("*.log")):
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        parts.append(f"--- {log.relative_to(work)}\n{tail}")
    return "\n".join(parts)


def run_snakemake(work: Path, env: dict, *args: str, quiet_seconds: float = QUIET_SECONDS):
    done = run_until_quiet([str(SNAKEMAKE), *args], cwd=work, env=env,
                           quiet_seconds=quiet_seconds,
                           watched=[work / "results", work / ".snakemake"],
                           diagnose=lambda: what_slurm_says(work, env))
    if done.hung:
        pytest.fail(f"no progress for {quiet_seconds:.0f} s: a hang.\n{done.diagnosis}\n"
                    f"snakemake's output:\n{done.stderr[-4000:]}")
    return done, done.seconds


def slurm_jobs(env: dict, run_id: str) -> list[dict[str, str]]:
    """Every job of one Snakemake run (its jobs are named after the run id), as SLURM saw it."""
    listed = subprocess.run(["squeue", "--states=all", "--noheader", "--name", run_id,
                             "--format=%i"], env=env, capture_output=True, text=True,
                            timeout=30, check=True)
    jobs = []
    for job_id in listed.stdout.split():
        shown = subprocess.run(["scontrol", "show", "job", "--oneliner", job_id], env=env,
                               capture_output=True, text=True, timeout=30, check=True)
        jobs.append(dict(re.findall(r"(\S+?)=(\S*)", shown.stdout)))
    return jobs


def minutes(limit: str) -> int:
    """SLURM's TimeLimit ([D-]HH:MM:SS) in minutes."""
    days, _, clock = limit.rpartition("-")
    hours, mins, secs = (int(part) for part in clock.split(":"))
    return int(days or 0) * 1440 + hours * 60 + mins + (secs > 0)


def daemon_pids(state: Path) -> list[int]:
    """The daemons start.sh started (by their pid files) and their children."""
    pids = [int(path.read_text()) for path in state.rglob("*.pid") if path.read_text().strip()]
    for pid in list(pids):
        children = Path(f"/proc/{pid}/task/{pid}/children")
        if children.exists():
            pids += [int(child) for child in children.read_text().split()]
    return pids


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture(scope="module")
def slurm():
    """A running two-node SLURM: the environment its clients need. Stopped, and checked
    stopped, after the module's tests."""
    # Not pytest's tmp_path: munged wants every folder above its socket searchable by all.
    state = Path(tempfile.mkdtemp(prefix="d2lperf-slurm-"))
    env = {**os.environ, "SLURM_CONF": str(state / "slurm.conf")}
    etc_conf = Path("/etc/slurm/slurm.conf")

    def stop():
        pids = daemon_pids(state)
        stopped = subprocess.run([str(STOP), str(state)], capture_output=True, text=True,
                                 timeout=180)
        left = [pid for pid in pids if running(pid)]
        link_left = etc_conf.is_symlink() and os.readlink(etc_conf) == env["SLURM_CONF"]
        shutil.rmtree(state, ignore_errors=True)
        return stopped, left, link_left

    try:
        started = subprocess.run([str(START), str(state)], capture_output=True, text=True,
                                 timeout=120, env={**os.environ, "NODES": str(NODES)})
    except subprocess.TimeoutExpired:
        stop()
        pytest.fail("scripts/slurm/start.sh did not finish within 120 s")
    if started.returncode != 0:
        stop()
        if started.returncode == 2:  # SLURM cannot run here; start.sh says why
            pytest.skip(started.stderr.strip())
        pytest.fail(f"SLURM did not start:\n{started.stderr[-4000:]}")
    yield env
    stopped, left, link_left = stop()
    assert stopped.returncode == 0, stopped.stderr
    assert left == [], f"still running after stop.sh: {left}"
    assert not link_left, f"stop.sh left {etc_conf}"


@pytest.fixture(scope="module")
def slurm_run(slurm, tmp_path_factory, experiment_python):
    """The CI preset through the SLURM executor in a copy of the workflow.
    Returns (copy, results folder, SLURM's record of each job by rule)."""
    work = copy_workflow(tmp_path_factory.mktemp("slurm") / "wf")
    across_nodes(work / "config" / "config.yaml")
    targets = [f"results/{CI_MACHINE}/machine.json",
               *(f"results/{CI_MACHINE}/{rule}/run.json" for rule in SLURM_TIMING_RULES)]
    done, seconds = run_snakemake(work, slurm, *SLURM_ARGS, *targets,
                                  "--set-resources", f"{ACROSS_NODES}:slurm_partition=multi",
                                  *CI_CONFIG, f"experiment_python={experiment_python}")
    assert done.returncode == 0, done.stderr[-6000:]
    print(f"CI preset through SLURM: {seconds:.0f} s")
    run_id = re.search(r"SLURM run ID: (\S+)", done.stderr).group(1)
    jobs = {job["Comment"].removeprefix("rule_"): job for job in slurm_jobs(slurm, run_id)}
    return work, work / "results" / CI_MACHINE, jobs


def across_nodes(config: Path) -> None:
    """The copy's CI preset: the data-parallel section over the cluster's two nodes, set in
    the config over the section's own entry, as a user sets it."""
    text = config.read_text()
    assert text.count("\npresets: {}\n") == 1
    config.write_text(text.replace(
        "\npresets: {}\n", f"\npresets:\n  ci:\n    data_parallel: {{nodes: {NODES}}}\n"))


def schema(path: Path):
    """What a result file's schema is: columns of a table, keys of a record, else nothing."""
    if path.suffix == ".csv":
        return list(pd.read_csv(path, nrows=0).columns)
    if path.suffix == ".tsv":
        return list(pd.read_csv(path, sep="\t", nrows=0).columns)
    if path.suffix == ".json":
        def keys(value):  # the nesting of the keys; values (and their types) vary by run
            if isinstance(value, dict):
                return {key: keys(item) for key, item in value.items()}
            return None
        return keys(json.loads(path.read_text()))
    return None


def test_results_have_the_schema_of_a_local_run(slurm_run, ci_run):
    _, results, _ = slurm_run
    _, local = ci_run
    files = sorted(p.relative_to(results) for p in results.rglob("*") if p.is_file())
    local_files = {p.relative_to(local) for p in local.rglob("*") if p.is_file()}
    assert set(files) <= local_files, sorted(set(files) - local_files)
    for name in files:
        assert schema(results / name) == schema(local / name), name
    for rule in SLURM_TIMING_RULES:
        ran_in, local_in = result_folder(results, rule), result_folder(local, rule)
        assert sorted(p.relative_to(ran_in) for p in ran_in.rglob("*") if p.is_file()) == \
            sorted(p.relative_to(local_in) for p in local_in.rglob("*") if p.is_file()), rule
        run = json.loads((ran_in / "run.json").read_text())
        assert run["status"] == "ok", (rule, run.get("log_tail"))
        cases = ["section", "framework", "case", "metric", "unit"]
        ran = pd.read_csv(ran_in / "samples.csv")[cases].drop_duplicates()
        reference = pd.read_csv(local_in / "samples.csv")[cases].drop_duplicates()
        assert sorted(map(tuple, ran.values)) == sorted(map(tuple, reference.values)), rule


def test_only_the_framework_rules_became_slurm_jobs(slurm_run):
    _, _, jobs = slurm_run
    assert set(jobs) == CLUSTER_RULES  # nothing else asked for became a job
    assert {rule: job["JobState"] for rule, job in jobs.items()} == dict.fromkeys(
        CLUSTER_RULES, "COMPLETED")


def test_no_two_timing_jobs_overlapped(slurm_run):
    _, results, jobs = slurm_run
    # As SLURM ran them (whole seconds): nothing, machine_info included, beside a timing job.
    spans = sorted((job["StartTime"], job["EndTime"], rule) for rule, job in jobs.items())
    for (_, end, before), (start, _, after) in zip(spans, spans[1:]):
        assert start >= end, f"{after} started at {start}, before {before} ended at {end}"
    # As the sections themselves recorded their timed work.
    runs = sorted(
        (datetime.fromisoformat(run["started"]), datetime.fromisoformat(run["finished"]), name)
        for name in SLURM_TIMING_RULES
        for run in [json.loads((result_folder(results, name) / "run.json").read_text())]
    )
    for (_, end, before), (start, _, after) in zip(runs, runs[1:]):
        assert start >= end, f"{after} started at {start}, before {before} finished at {end}"


# The data-parallel job over two nodes, CI preset (device counts 1 and 2): a task per
# device of its largest count, each with a GPU (placeholders here; the run itself is on
# CPUs) and one core, both nodes whole; the plugin's `mpi` job runs the rule's command on
# the first node, where the section starts its groups with srun.
ACROSS_NODES_ASKS = {"cpus_per_task": 1, "runtime": 60, "mem_mb": 16000,
                     "slurm_extra": "'--exclusive'", "gpu": 2, "nodes": NODES, "tasks": 2,
                     "mpi": "srun", "tasks_per_gpu": 1}


def asked_for(rule: str) -> dict:
    """What a rule asks SLURM for, as the table of sections says, written out here."""
    if rule == ACROSS_NODES:
        return ACROSS_NODES_ASKS
    if rule in TIMING_RULES:
        section = rule.removesuffix("_pytorch")
        wanted = {"cpus_per_task": 2, "runtime": TIMING_MINUTES.get(section, 30),
                  "mem_mb": TIMING_MB.get(section, 8000), "slurm_extra": "'--exclusive'"}
        return {**wanted, "gpu": TIMING_RULES[rule]} if TIMING_RULES[rule] else wanted
    return {"machine_info": {"cpus_per_task": 1, "mem_mb": 2000, "runtime": 10, "gpu": 2},
            "blas_reference": {"cpus_per_task": 2, "mem_mb": 4000, "runtime": 10}}[rule]


def test_the_table_asks_what_the_cluster_expects():
    """The table of sections gives each rule the resources written out above."""
    from d2lperf import sections

    for rule in TIMING_RULES:
        section = rule.removesuffix("_pytorch")
        assert sections.slurm_resources(section, rule != section, "auto") == asked_for(rule)
    for rule, wanted in sections.OTHER_JOBS.items():
        assert wanted == asked_for(rule), rule
    assert sections.slurm_resources("hybridize", False, 8)["cpus_per_task"] == 8
    preset = ci_preset("data_parallel")
    assert sections.slurm_resources("data_parallel", True, "auto",
                                    {**preset, "nodes": NODES}) == ACROSS_NODES_ASKS
    # on one node: the node exclusively, a GPU per device of the largest count
    assert sections.slurm_resources("data_parallel", True, "auto", preset) == {
        "cpus_per_task": 2, "runtime": 60, "mem_mb": 16000, "slurm_extra": "'--exclusive'",
        "gpu": 2}


def every_rules_resources(cluster_gpus: bool) -> dict[str, dict]:
    """What each rule the workflow generates asks SLURM for, as its `resources:` compute
    it (workflow/rules/sections.smk), at each shipped preset, the data-parallel section
    also over several nodes; keyed by rule (and preset)."""
    from d2lperf import sections
    from d2lperf.frameworks import REGISTRY, rule_name
    from d2lperf.presets import for_framework

    config = shipped_config()
    asks = {name: sections.other_job_resources(name, cluster_gpus=cluster_gpus)
            for name in sections.OTHER_JOBS}
    for preset_name, preset in config["presets"].items():
        for section, entry in sections.SECTIONS.items():
            for framework, info in REGISTRY.items():
                if not entry.has(framework):
                    continue
                options = for_framework(preset[section], framework)
                shapes = {"": options}
                if entry.process_per_device:
                    shapes[" over nodes"] = {**options, "nodes": max(options["device_counts"])}
                for shape, given in shapes.items():
                    asks[f"{rule_name(section, framework)} ({preset_name}{shape})"] = \
                        sections.slurm_resources(section, info.gpu_everywhere, "auto", given,
                                                 cluster_gpus=cluster_gpus)
    return asks


def test_a_cluster_without_gpus_is_one_setting():
    """Config key cluster_gpus: False, given once, and no rule asks SLURM for a GPU (nor
    a task per GPU); left at its default, the rules of the sections written for GPUs, the
    PyTorch twins and machine_info do. A value that is not a boolean is refused, named."""
    from d2lperf import sections
    from d2lperf.configcheck import ConfigError, check_config

    without = every_rules_resources(cluster_gpus=False)
    assert {rule: asks for rule, asks in without.items()
            if "gpu" in asks or "tasks_per_gpu" in asks} == {}
    with_gpus = every_rules_resources(cluster_gpus=True)
    assert set(with_gpus) == set(without)
    asking = {rule for rule, asks in with_gpus.items() if asks.get("gpu")}
    for section in ("auto_parallelism", "multi_gpu_scratch", "multi_gpu_gluon"):
        assert f"{section} (documents)" in asking, section
    assert "machine_info" in asking and "hybridize_pytorch (ci)" in asking
    assert "hybridize (ci)" not in asking
    # otherwise the same request: time, memory, cores, nodes and tasks
    for rule, asks in with_gpus.items():
        assert {k: v for k, v in asks.items() if k not in ("gpu", "tasks_per_gpu")} == \
            without[rule], rule
    assert with_gpus["data_parallel_pytorch (ci over nodes)"]["tasks_per_gpu"] == 1
    assert sections.slurm_resources("multi_gpu_gluon", False, "auto") == asked_for(
        "multi_gpu_gluon")  # the default is a cluster with GPUs

    # every rule's resources go through the setting: none reads the table around it (the
    # timing jobs' through the plan, which reads the same key)
    rules = "".join(p.read_text() for p in (REPO / "workflow/rules").glob("*.smk"))
    rules += (REPO / "Snakefile").read_text()
    assert rules.count("resources:") == 3
    assert rules.count("cluster_gpus=CLUSTER_GPUS") == 2
    assert rules.count("**job.resources") == 1
    assert 'CLUSTER_GPUS = config.get("cluster_gpus", True)' in rules
    assert 'cluster_gpus = config.get("cluster_gpus", True)' in (
        REPO / "scripts/d2lperf/plan.py").read_text()

    config = shipped_config()
    schema = REPO / "workflow/schemas/config.schema.yaml"
    assert config["cluster_gpus"] is True
    check_config({**config, "cluster_gpus": False}, schema)
    with pytest.raises(ConfigError) as error:
        check_config({**config, "cluster_gpus": "false"}, schema)
    assert "cluster_gpus = 'false': must be true or false (on Snakemake's command line: " \
        "True or False)" in str(error.value)


class Resources(dict):
    """A job's resources as the SLURM plugin reads them: ``.get`` and attributes."""

    def __getattr__(self, name):
        return self[name]


def test_the_plugins_sbatch_line_for_data_parallel_training_on_two_8_gpu_nodes():
    """The line snakemake-executor-plugin-slurm writes for the section over two nodes of 8
    GPUs: 16 tasks, a GPU each, on exactly 2 whole nodes. Its traps stay caught: a GPU
    job's `tasks` would become --ntasks-per-gpu=16, and without `mpi` the plugin would
    run the rule in a one-task job step that has none of the other tasks' resources."""
    from types import SimpleNamespace

    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    from d2lperf import sections

    options = {**ci_preset("data_parallel"), "device_counts": [1, 2, 4, 8, 16], "nodes": 2}
    job = SimpleNamespace(threads=1, resources=Resources(
        sections.slurm_resources("data_parallel", True, "auto", options)))
    params = {"run_uuid": "run", "slurm_logfile": "log", "comment_str": "rule_data_parallel",
              "account": "", "partition": "-p gpu", "workdir": "/work"}
    line = shlex.split(get_submit_command(job, params) + set_gres_string(job))
    flags = [word for word in line if word.startswith("-")]
    for wanted in ("--nodes=2", "--ntasks=16", "--ntasks-per-gpu=1", "--gpus=16",
                   "--cpus-per-task=1", "--exclusive"):
        assert wanted in flags, (wanted, line)
    assert [f for f in flags if f.startswith("--ntasks-per-gpu")] == ["--ntasks-per-gpu=1"]
    # an `mpi` job: the plugin's job step runs the rule's command itself, not under srun
    assert job.resources["mpi"] == "srun"


def test_each_job_got_what_the_table_asks_for(slurm_run):
    _, _, jobs = slurm_run
    for rule, job in jobs.items():
        wanted = asked_for(rule)
        assert minutes(job["TimeLimit"]) == wanted["runtime"], rule
        assert job["MinMemoryNode"] == f"{wanted['mem_mb']}M", rule
        assert int(job["CPUs/Task"]) == wanted["cpus_per_task"], rule
        gpus = re.fullmatch(r"gres:gpu:(\d+)", job.get("TresPerJob", ""))
        assert (int(gpus.group(1)) if gpus else 0) == wanted.get("gpu", 0), rule
        # SLURM's OverSubscribe=NO: the job has its node to itself (sbatch --exclusive)
        assert (job["OverSubscribe"] == "NO") == (rule in {*TIMING_RULES, ACROSS_NODES}), rule
        assert int(job["NumNodes"]) == wanted.get("nodes", 1), rule
        if "tasks" in wanted:
            assert int(job["NumTasks"]) == wanted["tasks"], rule


def test_data_parallel_training_spans_both_nodes_a_rank_on_each(slurm_run):
    """The two-device group ran as one srun step over the job's two nodes, a rank on
    each; the one-device group on one node."""
    _, results, jobs = slurm_run
    run = json.loads((result_folder(results, ACROSS_NODES) / "run.json").read_text())
    assert run["status"] == "ok", run.get("log_tail")
    assert run["notes"]["node_of_each_rank"] == {"lenet_1_device": [0],
                                                 "lenet_2_devices": [0, 1]}
    assert run["notes"]["placement"] == "this SLURM job has 2 nodes of 1 device"
    assert int(jobs[ACROSS_NODES]["NumNodes"]) == NODES


def bad_run(work: Path, env: dict, target: str, *args: str):
    """A run of one target that SLURM must refuse: it fails at once, with SLURM's message."""
    done, seconds = run_snakemake(work, env, *SLURM_ARGS, target, *args,
                                  quiet_seconds=BAD_INPUT_SECONDS * 3)
    assert done.returncode != 0, done.stderr[-3000:]
    assert seconds < BAD_INPUT_SECONDS, f"took {seconds:.0f} s to fail"
    assert "SLURM sbatch failed" in done.stderr, done.stderr[-3000:]
    return done.stderr


def test_more_gpus_than_a_node_has_fails_with_slurms_message(slurm, tmp_path, experiment_python):
    """multi_gpu_gluon asking for 3 GPUs where the nodes (like the sections) have 2."""
    work = copy_workflow(tmp_path / "wf")
    stderr = bad_run(work, slurm, f"results/{CI_MACHINE}/multi_gpu_gluon/run.json",
                     "--set-resources", "multi_gpu_gluon:gpu=3", *CI_CONFIG,
                     f"experiment_python={experiment_python}")
    assert "Requested node configuration is not available" in stderr, stderr[-3000:]


@pytest.mark.slow  # SLURM and Snakemake
def test_a_cluster_without_gpus_asks_slurm_for_none(slurm, tmp_path, experiment_python):
    """With `--config cluster_gpus=False` alone, machine_info (which asks for the sections'
    2 GPUs otherwise) is submitted, runs and asks SLURM for no GPU: no per-rule
    --set-resources."""
    work = copy_workflow(tmp_path / "wf")
    done, _ = run_snakemake(work, slurm, *SLURM_ARGS, f"results/{CI_MACHINE}/machine.json",
                            *CI_CONFIG, f"experiment_python={experiment_python}",
                            "cluster_gpus=False")
    assert done.returncode == 0, done.stderr[-6000:]
    run_id = re.search(r"SLURM run ID: (\S+)", done.stderr).group(1)
    jobs = {job["Comment"].removeprefix("rule_"): job for job in slurm_jobs(slurm, run_id)}
    assert set(jobs) == {"machine_info"}
    assert jobs["machine_info"]["JobState"] == "COMPLETED"
    assert "gpu" not in jobs["machine_info"].get("TresPerJob", ""), jobs["machine_info"]
    assert "gpu" not in jobs["machine_info"].get("TresPerNode", ""), jobs["machine_info"]


def test_unknown_partition_fails_with_slurms_message(slurm, tmp_path, experiment_python):
    work = copy_workflow(tmp_path / "wf")
    stderr = bad_run(work, slurm, f"results/{CI_MACHINE}/hybridize/run.json",
                     "--default-resources", "slurm_partition=no_such_partition",
                     *CI_CONFIG, f"experiment_python={experiment_python}")
    assert "invalid partition specified: no_such_partition" in stderr, stderr[-3000:]
