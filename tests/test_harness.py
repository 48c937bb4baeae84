"""d2lperf.manager and d2lperf.harness: a section's worker in fresh processes, started by
its manager, and a worker run by hand on its own."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO, measure

pytestmark = pytest.mark.slow  # timing jobs (d2lperf measure)

SECTION = textwrap.dedent('''\
    import sys
    from pathlib import Path
    sys.path.insert(0, {scripts!r})
    from d2lperf import harness, timing

    def body(args, rec):
        with open({started!r}, "a") as handle:  # one line per process that ran the body
            handle.write(f"{{args.process}}\\n")
        if {skip!r}:
            raise harness.Skipped("needs 1 GPU, found 0")
        rec.timings(timing.compare({{"case": lambda: None}}, lambda: None, warmup=0,
                                   rounds=1, seed=0, process=args.process))

    if __name__ == "__main__":
        sys.exit(harness.main("toy", "pytorch", harness.parser("toy"), body))
''')


def run_toy(tmp_path: Path, skip: bool, *options: str) -> tuple[dict, list[str]]:
    started = tmp_path / "started.txt"
    script = tmp_path / "toy.py"
    script.write_text(SECTION.format(scripts=str(REPO / "scripts"), started=str(started),
                                     skip=skip))
    done = measure(sys.executable, script, "--csv", str(tmp_path / "s.csv"), "--sidecar",
                   str(tmp_path / "run.json"), "--repeats", "1", "--probe-seconds", "0.01",
                   *options, section="toy", framework="pytorch", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((tmp_path / "run.json").read_text()), started.read_text().split()


def test_a_section_skipped_in_its_first_process_starts_no_other(tmp_path):
    # Skipped in one process means skipped in all (the machine is the same): starting
    # the other three only costs their imports (auto_parallelism without a GPU: 5 s).
    record, started = run_toy(tmp_path, True, "--processes", "4")
    assert started == ["0"]
    assert record["status"] == "skipped" and record["reason"] == "needs 1 GPU, found 0"
    assert len(record["processes"]) == 1
    assert record["parameters"]["processes"] == 4  # what was asked, beside what ran
    assert record["stages"]["stopped"] == "skipped" and record["stages"]["count"] == 1


def test_a_section_that_runs_runs_in_every_process(tmp_path):
    record, started = run_toy(tmp_path, False, "--processes", "3")
    assert started == ["0", "1", "2"]
    assert record["status"] == "ok" and len(record["processes"]) == 3
    # no comparison of its own to decide: one stage, busy machine or not
    assert record["stages"]["stopped"] == "nothing to decide"
    probe = record["steadiness"]
    assert probe["probe_threads"] == 1 and len(probe["before"]["run_queue"]) == 5


def test_the_steadiness_probe_runs_on_the_timings_thread_count(tmp_path):
    record, _ = run_toy(tmp_path, False, "--threads", "2")
    steadiness = record["steadiness"]
    assert steadiness["probe_threads"] == 2 and steadiness["before"]["probe_threads"] == 2
    assert len(steadiness["before"]["probe_s"]) == 5


def test_a_spent_budget_stops_launching_processes_after_the_first_two(tmp_path):
    # the toy has no claims: its processes are what it is run for, but not past its budget
    record, started = run_toy(tmp_path, False, "--processes", "4", "--budget-seconds", "0.001")
    assert started == ["0", "1"] and len(record["processes"]) == 2
    assert record["parameters"]["processes"] == 4  # what was asked, beside what ran
    assert record["stages"]["history"][0]["cut_short"]
