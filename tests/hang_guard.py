"""A hang guard that catches a hang, not a slow machine.

``run_until_quiet`` runs a command and lets it take as long as it keeps making
progress: new output on stdout/stderr, or a file changed under one of the
``watched`` folders. Only when nothing moved for ``quiet_seconds`` is it killed,
and then ``diagnose()`` says what the outside world knows (for SLURM: squeue and
the job logs), so the failure explains itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    hung: bool = False
    diagnosis: str = ""


def _newest_change(folders: Sequence[Path]) -> float:
    newest = 0.0
    for folder in folders:
        for root, _, files in os.walk(folder):
            for name in files:
                try:
                    newest = max(newest, os.stat(os.path.join(root, name)).st_mtime)
                except OSError:
                    continue
    return newest


def run_until_quiet(command: Sequence[str], *, cwd: Path, env: dict | None = None,
                    quiet_seconds: float, watched: Sequence[Path] = (),
                    diagnose: Callable[[], str] = lambda: "", poll_seconds: float = 1.0,
                    ) -> Finished:
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(list(command), cwd=cwd, env=env, stdout=out, stderr=err,
                                   text=True, start_new_session=True)
        seen = (-1, -1, -1.0)
        last_progress = time.monotonic()
        hung = False
        while process.poll() is None:
            time.sleep(poll_seconds)
            state = (os.fstat(out.fileno()).st_size, os.fstat(err.fileno()).st_size,
                     _newest_change(watched))
            if state != seen:
                seen, last_progress = state, time.monotonic()
            elif time.monotonic() - last_progress > quiet_seconds:
                hung = True
                break
        diagnosis = ""
        if hung:
            diagnosis = diagnose()
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        out.seek(0)
        err.seek(0)
        return Finished(process.returncode, out.read(), err.read(),
                        time.monotonic() - started, hung, diagnosis)
