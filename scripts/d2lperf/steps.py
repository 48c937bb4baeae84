"""The aggregate steps (summarise, plots, compare, report, archive): how a failed one is
never taken as done, and how a file it cannot write is said in one line.

Their outputs are ``update()``: when a step fails, Snakemake restores the last good
outputs, with a fresh time (a copy), so the next run would take the failed step as done
and build on its old outputs beside new inputs. So the step's wrapper (d2lperf run-step)
leaves a marker beside its log when the step fails, listing its outputs, and removes it when
the step succeeds; the Snakefile, as it is read, makes the outputs a marker lists older
than any input (``age_failed``): the next run runs the step again (and fails again,
visibly, while its cause lasts), and the last good outputs stay readable meanwhile.

Standard library only: the Snakefile reads it.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

# The time a failed step's restored outputs are given: older than any input (a day after
# the epoch, not the epoch itself, which some tools take for "no time").
FAILED_MTIME = 86400
FULL = (errno.ENOSPC, errno.EDQUOT)


def marker(log: str | Path) -> Path:
    """Where the failure of the step writing ``log`` is marked: a hidden file beside it
    (the archive leaves hidden files out)."""
    log = Path(log)
    return log.with_name(f".{log.name}.failed")


def mark_failed(log: str | Path, step: str, exit_code: int, outputs: Iterable[str]) -> None:
    """Record that ``step`` failed: its outputs, as restored, are not its inputs' tables."""
    path = marker(log)
    record = {"step": step, "exit_code": exit_code, "outputs": list(outputs),
              "failed": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    with contextlib.suppress(OSError):  # a full disk: said on the console all the same
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def clear_failed(log: str | Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        marker(log).unlink()


def age_failed(logs: Iterable[str | Path]) -> list[str]:
    """Make the outputs of every failed step (a marker beside its log) older than any
    input, so that Snakemake runs the step again; the step's outputs, as failed."""
    aged = []
    for log in logs:
        try:
            outputs = json.loads(marker(log).read_text(encoding="utf-8"))["outputs"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # no marker (the usual case), or one cut short by a full disk
        for output in outputs:
            with contextlib.suppress(OSError):
                os.utime(output, (FAILED_MTIME, FAILED_MTIME), follow_symlinks=False)
                aged.append(str(output))
            forget(output)
    return aged


# Snakemake's record of the job that last wrote an output (Snakemake 9's layout, pinned in
# envs/workflow.lock.txt: .snakemake/metadata/<the path, URL-safe base64>). It keeps the
# checksums of that job's small inputs, and an input whose checksum matches is not taken as
# changed, however new: a failed step's record holds the very inputs it failed on, so the
# next run, seeing the same ones, would skip it. tests/test_faults.py fails if this changes.
METADATA = Path(".snakemake/metadata")


def forget(output: str | Path) -> None:
    """Remove Snakemake's record of the job that wrote ``output`` (none is fine)."""
    name = base64.urlsafe_b64encode(str(output).encode()).decode()
    with contextlib.suppress(OSError):
        (METADATA / name).unlink()


def cannot_write(path: str | Path, error: OSError) -> str:
    """One line: which file could not be written, why, and what to do."""
    why = error.strerror or str(error)
    if error.errno in FULL:
        folder = Path(path).parent
        what = (f"the disk holding {folder} is full: free space there (df -h {folder}) "
                "and run again")
    elif error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        what = f"allow writing to {Path(path).parent}, or run from a copy you may write"
    else:
        what = "see the step's log"
    return f"error: cannot write {path}: {why}; {what}. Earlier outputs are left as they were."


@contextlib.contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Write ``path`` inside this; an OSError ends the step with ``cannot_write``'s line
    (on stderr, which the step's wrapper shows on the console) instead of a traceback."""
    try:
        yield
    except OSError as error:
        print(cannot_write(path, error), file=sys.stderr, flush=True)
        raise SystemExit(1) from None
