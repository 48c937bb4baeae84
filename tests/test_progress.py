"""Progress a person can read: each job says in one line what it does and how long it may
take, a long section says how far it is on the console (a line per process or epoch, and
in a long epoch one a minute), and the shell lines stay in the logs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO, measure
from d2lperf import hostlock, progress, training


def test_a_line_goes_to_the_log_and_to_the_console_named(tmp_path):
    """The console is a file descriptor the rule hands over; the log is stdout."""
    program = textwrap.dedent(f'''\
        import sys
        sys.path.insert(0, {str(REPO / "scripts")!r})
        from d2lperf import progress
        progress.introduce("multi_gpu_scratch", "MXNet")
        progress.say("epoch 1, time 3.0 sec", "lenet_1_device")
        progress.say("process 2 (stage of 1-4)")
        ''')
    read, write = os.pipe()
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          pass_fds=(write,), env={**os.environ, progress.VARIABLE: str(write)},
                          timeout=60)
    os.close(write)
    with os.fdopen(read) as console:
        shown = console.read()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "epoch 1, time 3.0 sec\nprocess 2 (stage of 1-4)\n"  # the log's
    assert shown == ("multi_gpu_scratch (MXNet), lenet_1_device: epoch 1, time 3.0 sec\n"
                     "multi_gpu_scratch (MXNet): process 2 (stage of 1-4)\n")
    # run by hand (no console handed over): stdout only, nothing else written anywhere
    bare = {k: v for k, v in os.environ.items() if k != progress.VARIABLE}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env=bare, timeout=60)
    assert done.stdout.count("\n") == 2 and done.stderr == ""


WORKER = textwrap.dedent('''\
    import sys
    sys.path.insert(0, {scripts!r})
    from d2lperf import harness, progress

    def body(args, rec):
        progress.say("epoch 1, time 3.0 sec", "lenet_1_device")

    if __name__ == "__main__":
        parser = harness.parser("toy", repeated=False)
        # a training section's record keeps the images its epochs count (the manager checks)
        parser.add_argument("--train-limit", type=int, default=None)
        sys.exit(harness.main("multi_gpu_scratch", "pytorch", parser, body))
''')


@pytest.mark.slow  # a timing job
def test_a_worker_the_manager_starts_says_its_lines_on_the_console_too(tmp_path):
    """The manager hands the console on to the worker it starts (a child gets no descriptor
    it is not given): an epoch's line reaches the console from the worker's process."""
    script = tmp_path / "toy.py"
    script.write_text(WORKER.format(scripts=str(REPO / "scripts")))
    read, write = os.pipe()
    done = measure(sys.executable, script, "--csv", str(tmp_path / "s.csv"), "--sidecar",
                   str(tmp_path / "run.json"), "--probe-seconds", "0.01",
                   section="multi_gpu_scratch", framework="pytorch", pass_fds=(write,),
                   env={**os.environ, progress.VARIABLE: str(write),
                        # a lock of its own: a wait for another's would be said here too
                        hostlock.LOCK_VARIABLE: str(tmp_path / "host.lock")}, timeout=120)
    os.close(write)
    with os.fdopen(read) as console:
        shown = console.read()
    assert done.returncode == 0, done.stderr
    assert shown == "multi_gpu_scratch (PyTorch), lenet_1_device: epoch 1, time 3.0 sec\n"


def test_a_long_epoch_says_how_far_it_is_once_a_minute(monkeypatch, capsys):
    clock = iter(range(0, 1000, 25))  # each batch takes 25 s
    monkeypatch.setattr(training.time, "monotonic", lambda: next(clock))
    monkeypatch.delenv(progress.VARIABLE, raising=False)
    assert list(training.progress(list(range(10)), 3, 10)) == list(range(10))
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["epoch 3/10: 3 of 10 batches", "epoch 3/10: 6 of 10 batches",
                     "epoch 3/10: 9 of 10 batches"]  # one a minute or more, never silent


def test_make_reports_console_shows_what_each_job_does_not_its_shell_line(ci_run):
    work, _ = ci_run
    console = (work / "console.log").read_text(encoding="utf-8")
    assert "scripts/sections/" not in console and " --csv " not in console  # no shell line
    jobs = re.findall(r"^Job \d+: (.*)$", console, flags=re.MULTILINE)
    timing = [j for j in jobs if "timing alone on this machine" in j]
    assert len(timing) >= 8 and all(re.search(r"(at most \d+ s of measuring|under \d+ min); "
                                              r"log: results/", j) for j in timing), timing
    assert any(j.startswith("Writing the report") for j in jobs)
    # a section in fresh processes says each one on the console, named
    assert re.search(r"^hybridize \(MXNet\): process 2 \(stage of 1-2\)$", console, re.M)
    assert re.search(r"^multi_gpu_scratch \(PyTorch\), lenet_2_devices: epoch 1, time ",
                     console, re.M)
    # a section of runs in fresh processes one after the other says each run
    assert re.search(r"^async_memory \(MXNet\): async, repeat 1:$", console, re.M)
