"""Run one benchmark script and keep what it printed in docs/measurements.md.

    .venv/bin/python bench/record.py [--out docs/measurements.md] NAME bench/SCRIPT.py [ARGS...]

`make bench` calls this once per benchmark. The benchmark's output goes to the console as it
runs and, when it ends well, replaces the part of the measurements file named NAME, under a
heading that says what ran, where (the machine id, CPU, cores, load) and when, at which
commit. The other parts stay as they were, so one benchmark can be run again on its own. A
benchmark that fails changes nothing in the file: its earlier figures stay.

Every figure in the file is one a benchmark printed; none is typed by hand. Only scripts in
bench/ are run, with this interpreter.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from d2lperf import machine  # noqa: E402
from d2lperf.results import write_text  # noqa: E402

INTRO = """\
# Measurements

What `make bench` measured: the project's own benchmarks, in `bench/`, each part written by
`bench/record.py` from what the benchmark printed, on the machine and at the commit its
heading names. Re-running a benchmark replaces its part; nothing here is typed by hand.

Absolute figures on shared machines move 2-5× between days and with the load; the ratios
measured side by side in one run are what carry. Each part says the load average when it
started.
"""
NAME = re.compile(r"[a-z][a-z0-9_]{0,40}")


def parts(text: str) -> dict[str, str]:
    """The file's parts by name, each as written (its markers included)."""
    found = re.finditer(r"<!-- bench:(\S+) -->\n.*?<!-- /bench:\1 -->\n", text, re.S)
    return {match[1]: match[0] for match in found}


def commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" with uncommitted changes" if git("status", "--porcelain") else "")


def part(name: str, command: list[str], output: str, started: float, seconds: float) -> str:
    docstring_line = command_title(Path(command[0]))
    shown = " ".join(["python", *command])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"<!-- bench:{name} -->\n"
        f"## {name}: {docstring_line}\n\n"
        f"`{shown}`, on `{machine.machine_id()}` ({machine.cpu_model()}, "
        f"{machine.logical_cores()} logical cores, load average {load:.1f} at the start), "
        f"commit {commit()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, "
        f"{seconds:.0f} s.\n\n"
        f"```text\n{output.rstrip()}\n```\n"
        f"<!-- /bench:{name} -->\n"
    )


def command_title(script: Path) -> str:
    """The benchmark's own one-line summary (its docstring's first line)."""
    match = re.search(r'"""(.+)', script.read_text(encoding="utf-8"))
    return match[1].strip() if match else script.stem


def run(command: list[str]) -> tuple[int, str]:
    """The benchmark, its lines shown as they come and kept."""
    lines: list[str] = []
    with subprocess.Popen([sys.executable, *command], cwd=REPO, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as child:
        assert child.stdout is not None
        for line in child.stdout:
            print(line, end="", flush=True)
            lines.append(line)
    return child.returncode, "".join(lines)


def check(name: str, command: list[str]) -> str | None:
    if not NAME.fullmatch(name):
        return f"NAME must be a short lower-case word (a-z, 0-9, _), got {name!r}"
    script = (REPO / command[0]).resolve() if command else None
    if script is None or script.parent != REPO / "bench" or script.suffix != ".py" \
            or not script.is_file():
        return f"the benchmark must be a script in bench/, got {command[:1]}"
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=REPO / "docs" / "measurements.md")
    p.add_argument("name")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    problem = check(args.name, args.command)
    if problem:
        print(f"bench/record.py: {problem}", file=sys.stderr)
        return 2
    started = time.time()
    code, output = run(args.command)
    if code != 0:
        print(f"bench/record.py: {args.command[0]} failed (exit code {code}); {args.out} "
              "keeps its earlier figures", file=sys.stderr)
        return code
    previous = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    kept = parts(previous)
    kept[args.name] = part(args.name, args.command, output, started, time.time() - started)
    write_text(args.out, INTRO + "".join("\n" + text for text in kept.values()))
    print(f"\n{args.name}: figures kept in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
