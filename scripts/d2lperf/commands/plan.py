"""The timing jobs a run would start on this machine, in plain words, starting none of
them (no Snakemake, no framework's interpreter)::

    .venv/bin/d2lperf plan                                  # config/config.yaml
    .venv/bin/d2lperf plan --config preset=ci 'frameworks=[mxnet,jax]'

The config is checked as the workflow checks it (``--config KEY=VALUE`` as Snakemake's:
each value read as YAML), this machine's facts are found once (its id, its cores, its
GPUs, a BLAS variant's library), and ``d2lperf.plan`` makes the jobs: the same jobs the
workflow makes its rules of. A wrong config key is named, with what is allowed (exit 2).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from d2lperf import plan, sections
from d2lperf.blas import BlasError
from d2lperf.configcheck import ConfigError, check_config, check_threads
from d2lperf.frameworks import REGISTRY
from d2lperf.machine import MachineIdError, check_machine_id, gpus, machine_id

REPO = Path(__file__).resolve().parents[3]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def overridden(config: dict, items: Sequence[str]) -> dict:
    """The config with Snakemake's ``--config KEY=VALUE`` items applied."""
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--config {item!r}: expected KEY=VALUE")
        config[key] = yaml.safe_load(value)
    return config


def describe(config: dict, facts: plan.Facts, jobs: list[plan.Job]) -> str:
    """The plan in words: what runs, with what, one after the other."""
    devices = f"{facts.gpus} GPU{'s' if facts.gpus != 1 else ''}" if facts.gpus else "no GPU"
    lines = [f"{len(jobs)} timing jobs on {facts.machine} ({facts.threads} threads, "
             f"{devices}), one at a time, nothing beside them; results in {facts.results}/"]
    for job in jobs:
        lines += [f"- {job.rule}: {sections.SECTIONS[job.section].title}, "
                  f"{REGISTRY[job.framework].label}; "
                  f"{plan.limit(config, job.section, job.framework)}",
                  f"    {job.script} {' '.join(job.args)}",
                  f"    with {' '.join(job.environment)}; log {job.log}"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="d2lperf plan", description=__doc__.split("\n")[0])
    parser.add_argument("--configfile", type=Path, default=REPO / "config" / "config.yaml",
                        help="the config (default: config/config.yaml)")
    parser.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                        help="config keys set as Snakemake's --config sets them")
    args = parser.parse_args(argv)
    try:
        config = overridden(yaml.safe_load(args.configfile.read_text(encoding="utf-8")),
                            args.config)
        check_config(config, SCHEMA)
        machine = config.get("machine") or check_machine_id(
            machine_id(), "the machine id derived from this hardware,")
        cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                 else os.cpu_count() or 1)
        check_threads(config["threads"], cores)
        facts = plan.facts(config, machine=machine, cores=cores, gpus=len(gpus()))
    except OSError as error:
        print(f"d2lperf plan: {error}", file=sys.stderr)
        return 2
    except (ConfigError, MachineIdError, BlasError) as error:
        print(f"d2lperf plan: invalid configuration:\n{error}", file=sys.stderr)
        return 2
    print(describe(config, facts, plan.jobs(config, facts)))
    return 0
