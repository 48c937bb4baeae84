"""The effect of asynchronous computation on memory (seeds/000: 异步计算对内存的影响).

Reproduces the document's training loop (an MLP on random batches) in its two modes:
``sync`` calls ``l.mean().asscalar()`` every batch, so the front end waits for each
batch; ``async`` has no synchronising call inside the loop and ends in
``nd.waitall()``. For each it records the elapsed time the document prints every
``--report-every`` batches, the time until the work is finished, and how much the
process's resident memory grew (at the end, and at its peak).

Each (mode, repeat) trains in a fresh child process (this script re-run with
``--child``) so that no mode inherits the other's pooled allocations; the child pins
the same thread count and hands its figures back in a JSON file.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # scripts/: home of d2lperf

from d2lperf import experiment, memory, provenance, timing
from d2lperf.results import Recorder, read_json, write_json
from d2lperf.stats import Stats

MODES = ("sync", "async")
# Both modes train the same initial network on the same batches.
MXNET_DEFAULT_SEED = 0


def get_mem() -> float:
    """This process's RSS in MB: the document's ``ps u`` reading, without a subprocess."""
    return memory.rss_bytes() / memory.MB


def train(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """One run of the document's loop in ``mode``; runs in a child process."""
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    from mxnet.gluon import loss as gloss
    from mxnet.gluon import nn

    mx.random.seed(MXNET_DEFAULT_SEED)
    batch_seconds: dict[int, float] = {}

    def data_iter(report=None):
        for i in range(args.batches):
            X = nd.random.normal(shape=(args.batch_size, 512))
            y = nd.ones((args.batch_size,))
            yield X, y
            if report is not None and (i + 1) % args.report_every == 0:
                report(i + 1)

    net = nn.Sequential()
    net.add(nn.Dense(2048, activation="relu"),
            nn.Dense(512, activation="relu"),
            nn.Dense(1))
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.005})
    loss = gloss.L2Loss()

    # The document's commented-out warm-up: forward passes that finish the deferred
    # initialisation of the parameters before the memory is measured.
    for _, (X, y) in zip(range(args.warmup), data_iter()):
        loss(y, net(X)).wait_to_read()

    def report(batch: int) -> None:
        # No synchronisation here, as in the document: in `async` mode this is how long
        # the front end took to queue the batches, not how long they took to compute.
        batch_seconds[batch] = loop.lap()
        print(f"batch {batch}, time {batch_seconds[batch]:f} sec", flush=True)

    l_sum, mem = 0.0, get_mem()
    with memory.PeakRSS() as rss:
        with timing.Stopwatch(nd.waitall) as loop:  # its exit is the document's nd.waitall()
            for X, y in data_iter(report):
                with autograd.record():
                    l = loss(y, net(X))  # noqa: E741 (the document's name)
                if mode == "sync":
                    l_sum += l.mean().asscalar()
                l.backward()
                trainer.step(X.shape[0])
    # The tracker's last reading is the RSS as nd.waitall() returned, so the peak it
    # reports is never below it.
    increased = rss.result.after / memory.MB - mem
    print(f"increased memory: {increased:f} MB", flush=True)
    return {
        "batch_seconds": batch_seconds,
        "total_seconds": loop.seconds,
        "memory_increase": increased,
        "peak_memory_increase": rss.result.peak / memory.MB - mem,
        "peak_method": rss.result.method,
        "peak_samples": rss.result.samples,
    }


def run_child(mode: str, args: argparse.Namespace, result: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", mode, "--result", str(result),
               "--threads", str(args.threads), "--warmup", str(args.warmup),
               *memory.workload_flags(args)]
    sys.stdout.flush()  # the child's prints go to the same log, after ours
    subprocess.run(command, check=True)
    return read_json(result)


def body(args: argparse.Namespace, rec: Recorder) -> None:
    if args.report_every > args.batches:
        build_parser().error(f"--report-every ({args.report_every}) must not exceed "
                             f"--batches ({args.batches}): no batch would be reported")
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="async_memory.") as tmp:
        # Modes alternate so that a drift in the machine's load touches both alike.
        for repeat in range(args.repeats):
            for mode in MODES:
                print(f"{mode}, repeat {repeat}:", flush=True)
                runs[mode].append(run_child(mode, args, Path(tmp) / f"{mode}-{repeat}.json"))
    for mode in MODES:
        for k in range(args.report_every, args.batches + 1, args.report_every):
            record(rec, f"{mode}_batch_{k}", "time", "s",
                   [run["batch_seconds"][str(k)] for run in runs[mode]])
        record(rec, f"{mode}_total", "time", "s", [run["total_seconds"] for run in runs[mode]])
        for figure in ("memory_increase", "peak_memory_increase"):
            record(rec, f"{mode}_{figure}", "memory", "MB", [run[figure] for run in runs[mode]])
    rec.notes.update(
        batch_times=("elapsed seconds since the loop started, read without synchronising, as the "
                     "document prints them: for `async` the time to queue the batches, on purpose; "
                     "{mode}_total ends when nd.waitall() returns"),
        memory=("RSS after nd.waitall() (memory_increase), and its peak during the loop "
                "(peak_memory_increase), minus RSS before the loop; MB = 1e6 bytes (the "
                "document's ps KiB / 1e3 is 1.024e6 bytes)"),
        process_per_run="each (mode, repeat) ran in a fresh process, modes alternating",
        peak_memory_method={mode: [run["peak_method"] for run in runs[mode]] for mode in MODES},
    )
    import mxnet  # noqa: F401  (only so that the run record carries MXNet's build)


def record(rec: Recorder, case: str, metric: str, unit: str, values: list[float]) -> None:
    rec.samples(case, metric, unit, values)
    print(f"{case}: median {Stats(values).median:.4f} {unit} over {len(values)} repeats",
          flush=True)


def build_parser() -> argparse.ArgumentParser:
    p = experiment.parser(__doc__.splitlines()[0], repeated=False)
    memory.add_workload_options(p)
    memory.add_process_options(p)
    return p


def child_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="one run of one mode (used by this script itself)")
    p.add_argument("--child", choices=MODES, required=True)
    p.add_argument("--result", required=True, help="JSON file for the run's figures")
    p.add_argument("--threads", type=experiment.positive_int, required=True)
    p.add_argument("--warmup", type=experiment.non_negative_int, required=True)
    memory.add_workload_options(p)
    args = p.parse_args(argv)
    provenance.set_threads(args.threads)
    write_json(args.result, train(args.child, args))
    return 0


if __name__ == "__main__":
    if "--child" in sys.argv[1:]:
        sys.exit(child_main(sys.argv[1:]))
    sys.exit(experiment.main("async_memory", "mxnet", build_parser(), body))
