"""``d2lperf``: the project's one command. Every step of the pipeline is a subcommand; the
workflow's rules call them, and so can you::

    d2lperf                      # the list below
    d2lperf summarise --help     # one step's own options

A subcommand's code is a module of ``d2lperf.commands`` (or of the package itself, for the
manager and the log cap), imported only when it is asked for: ``d2lperf mxnet-build`` runs
in the system's Python before any environment exists, and the framework environments
import only the steps they run (``machine-info``, ``blas-reference``, ``count-flops``).
``python -m d2lperf`` is the same command, for an interpreter with no ``d2lperf`` on its
PATH. A section's script is not a subcommand: it stays one file that runs by hand.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import NamedTuple


class Command(NamedTuple):
    module: str
    summary: str


# The table of subcommands, in the order a run meets them.
COMMANDS: dict[str, Command] = {
    "machine-info": Command("d2lperf.commands.machine_info",
                            "record this machine (CPU, memory, GPUs, software): machine.json"),
    "blas-reference": Command("d2lperf.commands.blas_reference",
                              "the float64 product a variant BLAS is checked against"),
    "plan": Command("d2lperf.commands.plan",
                    "the timing jobs a run would start here, in words, starting none"),
    "measure": Command("d2lperf.manager",
                       "measure one section: its script in fresh processes, judged"),
    "record-failure": Command("d2lperf.commands.record_failure",
                              "record a section that failed, with its log"),
    "logcap": Command("d2lperf.logcap", "standard input into a log of bounded size"),
    "run-step": Command("d2lperf.commands.run_step",
                        "run an aggregate step with its log capped and its failure marked"),
    "summarise": Command("d2lperf.commands.summarise",
                         "samples into summary, outputs and verdict tables"),
    "plots": Command("d2lperf.commands.plots", "one plot per section, from the tables"),
    "compare": Command("d2lperf.commands.compare", "this machine's verdicts beside others'"),
    "report": Command("d2lperf.commands.render_report", "the self-contained HTML report"),
    "archive": Command("d2lperf.commands.archive_results",
                       "this machine's results as one checked .tar.gz"),
    "import": Command("d2lperf.commands.import_results",
                      "another machine's archive into results/, checked"),
    "site": Command("d2lperf.commands.site", "one page for every machine measured"),
    "count-flops": Command("d2lperf.commands.count_model_flops",
                           "the models' FLOPs per example (PyTorch's counter)"),
    "mxnet-build": Command("d2lperf.commands.mxnet_build",
                           "which MXNet build this machine takes, and its CUDA libraries"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {command.summary}" for name, command in COMMANDS.items()]
    return "usage: d2lperf COMMAND [OPTIONS]\n\ncommands:\n" + "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"d2lperf: unknown command {name!r}; allowed: {', '.join(COMMANDS)}",
              file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name].module)
    sys.argv[0] = f"d2lperf {name}"  # argparse's usage line names the subcommand
    return module.main(rest)
