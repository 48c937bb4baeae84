"""What each framework adds to `make report`'s run time. Prints figures.

    .venv/bin/python bench/frameworks_cost.py [--preset documents] [--base mxnet pytorch]
        [--add jax] [--sections NAME ...]

In a temporary copy of the workflow: the whole run with the --base frameworks from nothing,
then, in the same results folder, the run with the --add frameworks listed too, which runs
only the added frameworks' section jobs and the aggregates again. Every section job runs
alone under the host's timing lock, one after the other, so a run with every framework from
nothing takes the sum of the two (counting the aggregates twice makes the sum an upper
bound). Prints both, their ratio, and each job's wall time.
Nothing here asserts: it prints. Run it on a quiet machine: it times.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tests"))

from pipeline_overhead import whole_run  # noqa: E402

from conftest import JAX_PYTHON, TORCH_PYTHON, copy_workflow  # noqa: E402
from d2lperf.frameworks import REGISTRY  # noqa: E402
from d2lperf.sections import SECTIONS  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="documents")
    p.add_argument("--base", nargs="+", default=["mxnet", "pytorch"], choices=list(REGISTRY))
    p.add_argument("--add", nargs="+", default=["jax"], choices=list(REGISTRY))
    p.add_argument("--sections", nargs="+", choices=list(SECTIONS),
                   help="only these sections (default: every one, as `make report`)")
    args = p.parse_args()
    every = args.base + [f for f in args.add if f not in args.base]
    pythons = [f"torch_python={TORCH_PYTHON}", f"jax_python={JAX_PYTHON}",
               *([f"sections=[{','.join(args.sections)}]"] if args.sections else [])]
    base_words, every_words = ", ".join(args.base), ", ".join(every)
    print(f"== preset {args.preset}: {base_words} from nothing, then {every_words}")
    with tempfile.TemporaryDirectory() as tmp:
        work = copy_workflow(Path(tmp) / "wf")
        base = whole_run(work, args.preset, base_words, *pythons,
                         f"frameworks=[{','.join(args.base)}]")
        added = whole_run(work, args.preset, f"then {every_words} (only the added jobs run)",
                          *pythons, f"frameworks=[{','.join(every)}]")
    print(f"end to end: {base_words} {base:.0f} s; {every_words} from nothing at most "
          f"{base + added:.0f} s = {(base + added) / base:.2f}x ({', '.join(args.add)} add "
          f"{added:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
