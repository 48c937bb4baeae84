"""The plan of a run (d2lperf.plan), in-process: which timing jobs a config gives on a
machine's facts, each with its arguments, environment, resources and console line. No
Snakemake, no framework: the workflow makes one rule of each job (its dry runs are tested
in test_workflow.py)."""

import copy

import pytest

from conftest import shipped_config
from d2lperf import plan, sections
from d2lperf.frameworks import REGISTRY, rule_name
from d2lperf.presets import for_framework

CONFIG = shipped_config()
HERE = plan.Facts(results="results/m", machine="m", threads=2)
EIGHT_GPUS = plan.Facts(results="results/m", machine="m", threads=16, gpus=8)


def config(**changes):
    found = copy.deepcopy(CONFIG)
    found.update(changes)
    return found


def by_rule(jobs: list[plan.Job]) -> dict[str, plan.Job]:
    return {job.rule: job for job in jobs}


def option(job: plan.Job, flag: str) -> list[str] | None:
    """The words after ``flag`` in a job's arguments, up to the next flag; None where
    the flag is not there."""
    if flag not in job.args:
        return None
    rest = job.args[job.args.index(flag) + 1:]
    return rest[:next((i for i, w in enumerate(rest) if w.startswith("--")), len(rest))]


def test_one_job_per_section_and_framework_that_has_it_in_the_documents_order():
    jobs = plan.jobs(CONFIG, HERE)
    expected = [(s, f) for s in sections.names() for f in CONFIG["frameworks"]
                if sections.SECTIONS[s].has(f)]
    assert [(j.section, j.framework) for j in jobs] == expected
    hybridize = by_rule(jobs)["hybridize_pytorch"]
    assert hybridize.script == "scripts/sections/hybridize/hybridize_pytorch.py"
    assert hybridize.csv == "results/m/hybridize_pytorch/samples.csv"
    assert hybridize.sidecar == "results/m/hybridize_pytorch/run.json"
    assert hybridize.log == "results/m/logs/hybridize_pytorch.log"
    assert by_rule(jobs)["hybridize"].framework == "mxnet"


def test_the_configs_sections_and_frameworks_choose_the_jobs():
    jobs = plan.jobs(config(sections=["ceilings", "hybridize"], frameworks=["jax"]), HERE)
    assert [j.rule for j in jobs] == ["hybridize_jax", "ceilings_jax"]


def test_every_argument_is_explicit_and_from_the_preset():
    job = by_rule(plan.jobs(CONFIG, HERE))["data_parallel_pytorch"]
    preset = for_framework(CONFIG["presets"]["documents"]["data_parallel"], "pytorch")
    assert option(job, "--threads") == ["2"]
    assert option(job, "--images") == [str(n) for n in preset["images"]]
    assert option(job, "--device-counts") == [str(n) for n in preset["device_counts"]]
    assert option(job, "--band") == [str(CONFIG["practical_band"])]
    assert option(job, "--on") == ["cpu"]
    assert "--data-download" not in job.args  # False: left out
    assert job.resources["machine_lock"] == plan.MACHINE_LOCK


def test_a_budget_per_framework_is_each_frameworks_own_in_its_message():
    jobs = by_rule(plan.jobs(config(frameworks=["mxnet", "pytorch", "jax"]), HERE))
    budgets = CONFIG["presets"]["documents"]["data_parallel"]["budget_seconds"]
    assert f"at most {budgets['jax']} s of measuring" in jobs["data_parallel_jax"].message
    assert (f"at most {budgets['default']} s of measuring"
            in jobs["data_parallel_pytorch"].message)
    assert jobs["data_parallel_jax"].message.endswith(
        "log: results/m/logs/data_parallel_jax.log")


def test_on_eight_gpus_every_frameworks_data_parallel_job_runs_on_them_and_asks_for_them():
    jobs = by_rule(plan.jobs(config(frameworks=list(REGISTRY)), EIGHT_GPUS))
    for framework in REGISTRY:
        job = jobs[rule_name("data_parallel", framework)]
        assert option(job, "--on") == ["gpu"], framework
        assert job.resources["gpu"] == 8, framework
    no_cluster_gpus = by_rule(plan.jobs(config(cluster_gpus=False), EIGHT_GPUS))
    assert "gpu" not in no_cluster_gpus["data_parallel"].resources


def test_a_section_written_for_gpus_on_cpu_contexts_gets_one_thread():
    """Where a section written for GPUs runs its CPU stand-in (cpu(0), cpu(1)): the mxnet
    wheel's OpenBLAS hangs when two engine queues call its sgemm at once."""
    gpu_sections = [s for s, entry in sections.SECTIONS.items()
                    if entry.gpus and entry.cpu_stand_in]
    assert gpu_sections
    jobs = by_rule(plan.jobs(CONFIG, HERE))
    for section in gpu_sections:
        job = jobs[section]
        assert option(job, "--threads") == ["1"], section
        assert "OMP_NUM_THREADS=1" in job.environment, section
    assert "OMP_NUM_THREADS=2" in jobs["hybridize"].environment


def test_a_blas_variant_runs_the_documents_framework_alone_checked_against_the_stock_product():
    variant = plan.Facts(results="results/m--system-blas", machine="m", threads=2,
                         system_blas="/usr/lib/libopenblas.so.0",
                         empty_blas=("OPENBLAS_CORETYPE", "OMP_NUM_THREADS"))
    jobs = plan.jobs(config(frameworks=["mxnet", "pytorch"]), variant)
    assert {j.framework for j in jobs} == {"mxnet"}
    ceilings = by_rule(jobs)["ceilings"]
    assert ceilings.needs_blas_reference
    assert option(ceilings, "--blas-reference") == ["results/m/blas_reference.npz"]
    assert "LD_PRELOAD=/usr/lib/libopenblas.so.0" in ceilings.environment
    # an empty BLAS variable is dropped, a pinned thread count is set instead
    assert ceilings.environment[:2] == ["-u", "OPENBLAS_CORETYPE"]
    assert "-u" not in ceilings.environment[2:]
    assert not by_rule(jobs)["hybridize"].needs_blas_reference
    assert not any(j.needs_blas_reference for j in plan.jobs(CONFIG, HERE))


def test_the_plan_starts_nothing(monkeypatch):
    """A pure function: the plan of every framework on eight GPUs, with no program to
    start (no interpreter, no nvidia-smi)."""
    import subprocess

    def refused(*args, **kwargs):
        pytest.fail(f"the plan started {args[0]!r}")

    monkeypatch.setattr(subprocess, "Popen", refused)
    assert plan.jobs(config(frameworks=list(REGISTRY)), EIGHT_GPUS)


def test_d2lperf_plan_says_the_jobs_in_words_starting_none(capsys):
    """`d2lperf plan`: the jobs the workflow would make rules of, on this machine, with
    every argument; here in-process (a framework or Snakemake started would fail the test:
    tests/conftest.py)."""
    from d2lperf import cli

    assert cli.main(["plan", "--config", "preset=ci", "frameworks=[mxnet,jax]",
                     "sections=[hybridize,data_parallel]"]) == 0
    out = capsys.readouterr().out
    first, *rest = out.splitlines()
    assert first.startswith("4 timing jobs on ") and "one at a time" in first
    assert "- hybridize: " in out and "- data_parallel_jax: " in out
    assert "    scripts/sections/data_parallel/data_parallel_jax.py --threads " in out
    assert "--device-counts 1 2" in out  # the ci preset's
    assert "with OMP_NUM_THREADS=" in out


def test_d2lperf_plan_names_a_wrong_config_key(capsys):
    from d2lperf import cli

    assert cli.main(["plan", "--config", "frameworks=[mxnet,tensorflow]"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("d2lperf plan: invalid configuration:")
    assert "frameworks" in err and "tensorflow" in err
