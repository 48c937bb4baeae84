"""Run one aggregate step (summarise, plots, compare, report, archive) with its log capped,
and say on the console why it failed.

    d2lperf run-step --step report --log LOG --outputs OUT ... -- COMMAND ...

Everything COMMAND prints goes to LOG, capped (d2lperf.logcap: head and tail kept, the cut
said). When it fails, one line goes to this process's stderr, the console: the step, its
exit code and the last line it printed (the error, which names the file and what to do),
and the failure is marked beside the log so that the next run runs the step again
(d2lperf.steps). Exits with COMMAND's status.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence

from d2lperf import logcap, steps

CHUNK = 1 << 16


def run(command: list[str], log: str) -> tuple[int, str, OSError | None]:
    """COMMAND's exit status, the last line it printed, and the error of writing its log."""
    with open(log, "wb") as raw, logcap.CappedLog(raw) as capped:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        # Ctrl-C reaches the step itself (the terminal's process group); this waits for it
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signum))
        for chunk in iter(lambda: os.read(child.stdout.fileno(), CHUNK), b""):
            capped.write(chunk)
        code = child.wait()
    return code, capped.last_line(), capped.error


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--step", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--outputs", nargs="*", default=[],
                   help="the step's outputs, made older than its inputs when it fails")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        code, last, log_error = run(command, args.log)
    except OSError as error:  # the log cannot even be opened
        code, last, log_error = 1, steps.cannot_write(args.log, error), None
    if code == 0:
        steps.clear_failed(args.log)
        return 0
    steps.mark_failed(args.log, args.step, code, args.outputs)
    said = last or "it printed nothing"
    where = (f"its log could not be written ({steps.cannot_write(args.log, log_error)})"
             if log_error else f"its log: {args.log}")
    how = f"killed by {signal_name(-code)}" if code < 0 else f"exit code {code}"
    print(f"{args.step} failed ({how}): {said} [{where}]", file=sys.stderr, flush=True)
    return code if code > 0 else 128 - code

