"""The aggregate steps' wrapper (`d2lperf run-step`): a capped log, one line on the console
when a step fails, and a failed step's restored outputs never taken as up to date."""

import errno
import io
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, WORKFLOW_PYTHON
from d2lperf import logcap, steps


def run_step(tmp_path, code: str, *outputs) -> subprocess.CompletedProcess:
    """`d2lperf run-step` around ``python -c code``, its log in tmp_path/logs/step.log."""
    log = tmp_path / "logs/step.log"
    log.parent.mkdir(exist_ok=True)
    return subprocess.run(
        [str(WORKFLOW_PYTHON), "-m", "d2lperf", "run-step", "--step", "report", "--log", str(log),
         "--outputs", *map(str, outputs), "--", sys.executable, "-c", code],
        capture_output=True, text=True, timeout=300)


def test_a_log_keeps_its_head_and_tail_and_says_what_was_cut():
    out = io.BytesIO()
    with logcap.CappedLog(out, limit=100) as log:
        for i in range(1000):
            log.write(f"line {i}\n".encode())
    text = out.getvalue().decode()
    written = sum(len(f"line {i}\n") for i in range(1000))
    assert text.startswith("line 0\nline 1\n") and text.endswith("line 999\n")
    assert f"[... {written - 100} bytes cut here" in text
    assert log.last_line() == "line 999"


def test_a_short_log_is_written_whole():
    out = io.BytesIO()
    with logcap.CappedLog(out, limit=100) as log:
        log.write(b"all of it\n")
    assert out.getvalue() == b"all of it\n"


@pytest.mark.slow  # over a second on 2 cores
def test_a_step_printing_without_end_leaves_a_capped_log(tmp_path):
    """A worker printing 200 MB in each of its two processes made a 400 MB log."""
    done = run_step(tmp_path, "import sys\nfor _ in range(400): sys.stdout.write('x' * 999 + "
                              "'\\n')\nfor _ in range(200): sys.stdout.write('y' * (1 << 20))"
                              "\nprint('\\nthe end')")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    log = (tmp_path / "logs/step.log").read_bytes()
    assert len(log) < logcap.MAX_LOG_BYTES + 200
    assert log.startswith(b"x" * 999) and log.endswith(b"\nthe end\n")
    assert b"bytes cut here" in log


def test_a_failed_step_says_why_on_the_console_and_is_marked(tmp_path):
    """A full disk during the report showed only in the job's log: the console gets the
    step's last line (the error, naming the file and what to do) and where its log is."""
    out = tmp_path / "report.html"
    out.write_text("the last good report")
    said = steps.cannot_write(out, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    done = run_step(tmp_path, f"import sys\nprint('working')\nprint({said!r}, file=sys.stderr)"
                              "\nsys.exit(1)", out)
    assert done.returncode == 1
    log = tmp_path / "logs/step.log"
    assert done.stderr == f"report failed (exit code 1): {said} [its log: {log}]\n"
    assert said == (f"error: cannot write {out}: No space left on device; the disk holding "
                    f"{tmp_path} is full: free space there (df -h {tmp_path}) and run again. "
                    "Earlier outputs are left as they were.")
    marker = json.loads(steps.marker(log).read_text())
    assert marker["step"] == "report" and marker["outputs"] == [str(out)]
    # the next reading of the Snakefile makes the restored output older than any input
    assert steps.age_failed([log]) == [str(out)]
    assert out.stat().st_mtime == steps.FAILED_MTIME
    assert out.read_text() == "the last good report"
    # a step that then succeeds clears its mark
    assert run_step(tmp_path, "print('fine')", out).returncode == 0
    assert not steps.marker(log).exists() and steps.age_failed([log]) == []


def test_a_step_killed_by_a_signal_is_marked_too(tmp_path):
    done = run_step(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert done.returncode == 137
    assert "report failed (killed by SIGKILL): it printed nothing" in done.stderr
    assert steps.marker(tmp_path / "logs/step.log").exists()


@pytest.mark.parametrize("script, args", [
    ("d2lperf report", ["--machine", "m", "--summary", "s", "--outputs", "o", "--verdicts",
                          "v", "--runs", "r", "--sections", "c", "--template", "t",
                          "--preset", "ci", "--out", "{out}"]),
])
def test_a_full_disk_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys, script, args):
    """`d2lperf report` writing its page on a full disk: one line, the file and what to do."""
    sys.path.insert(0, str(REPO / "scripts"))
    from d2lperf.commands import render_report

    out = tmp_path / "report.html"

    def full(path, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(render_report, "render", lambda args: "<html>")
    monkeypatch.setattr(render_report, "write_text", full)
    monkeypatch.setattr(render_report.hostlock, "share", lambda name: None)
    monkeypatch.setattr(sys, "argv", [script, *(a.format(out=out) for a in args)])
    with pytest.raises(SystemExit) as ended:
        render_report.main()
    assert ended.value.code == 1
    err = capsys.readouterr().err
    assert err == (f"error: cannot write {out}: No space left on device; the disk holding "
                   f"{tmp_path} is full: free space there (df -h {tmp_path}) and run again. "
                   "Earlier outputs are left as they were.\n")


def test_logcap_as_a_filter_caps_what_a_rule_pipes_into_its_log(tmp_path):
    """The hook for rules that send their output to a log: COMMAND 2>&1 | d2lperf logcap LOG."""
    log = tmp_path / "section.log"
    done = subprocess.run(
        f"set -o pipefail; {sys.executable} -c \"import sys; sys.stdout.write('z' * (5 << 20)); "
        f"print('last'); sys.exit(3)\" 2>&1 | {WORKFLOW_PYTHON} "
        f"-m d2lperf logcap {log}", shell=True, executable="/bin/bash",
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    kept = log.read_bytes()
    assert len(kept) < logcap.MAX_LOG_BYTES + 200 and kept.endswith(b"last\n")
