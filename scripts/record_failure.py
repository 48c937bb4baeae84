"""Record that a section failed, so the report shows it (with its log) and the
other sections' results stay. Called by a rule when its script exits non-zero;
runs in the workflow environment and imports nothing heavy.

A script stopped by Ctrl-C, SIGTERM or SIGHUP was interrupted, not failed: nothing is
recorded and the exit code is passed on, so the job fails and the previous results stay
(the outputs are update(): Snakemake keeps them). A killed one (SIGKILL: the OOM killer,
a time limit) is recorded as failed, with its log.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from d2lperf import provenance
from d2lperf.frameworks import DOCUMENTS, FRAMEWORKS
from d2lperf.results import FORMAT_VERSION, write_csv, write_json

LOG_TAIL_LINES = 60
# Exit codes of a shell child ended by these signals (128 + n): an interruption.
INTERRUPTED = {128 + s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        return f"(no log: {error})"
    return "\n".join(text.splitlines()[-lines:])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--section", required=True)
    p.add_argument("--framework", choices=FRAMEWORKS, default=DOCUMENTS)
    p.add_argument("--exit-code", type=int, required=True)
    p.add_argument("--log", required=True, type=Path)
    p.add_argument("--csv", required=True)
    p.add_argument("--sidecar", required=True)
    args = p.parse_args()
    if args.exit_code in INTERRUPTED:
        print(f"{args.section} was interrupted (exit code {args.exit_code}); its previous "
              "results, if any, are kept", file=sys.stderr)
        return args.exit_code

    write_csv(args.csv, [])
    write_json(
        args.sidecar,
        {
            "format_version": FORMAT_VERSION,
            "section": args.section,
            "framework": args.framework,
            "status": "failed",
            "exit_code": args.exit_code,
            "finished": provenance.now(),
            "log": str(args.log),
            "log_tail": log_tail(args.log),
            "code": provenance.git_commit(),
        },
    )
    print(f"{args.section} failed with exit code {args.exit_code}; see {args.log}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
