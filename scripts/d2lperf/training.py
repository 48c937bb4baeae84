"""What the two multi-device training sections share (seeds/000: 多GPU并行计算, 多GPU简洁实现).

In both frameworks: their training options (one run per devices/batch size/learning
rate triple, as the documents call ``train(num_gpus=1, ...)`` then
``train(num_gpus=2, ...)``), the warm-up of every input shape, and how an epoch is
recorded and shown: one line per epoch for the rule's log, plus a progress bar only
when a person watches a terminal (carriage returns would garble a log file). The data
loaders and ``evaluate_accuracy`` are each framework's own (``d2lperf.mxnet``,
``d2lperf.torch``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TextIO, TypeVar

from d2lperf import arguments, devices, energy
from d2lperf.arguments import non_negative_int
from d2lperf.errors import NEEDS_GPUS
from d2lperf.progress import EVERY_S, say
from d2lperf.results import Recorder

T = TypeVar("T")
BAR_WIDTH = 30


class Run(NamedTuple):
    """One call of the documents' ``train(num_gpus, batch_size, lr)``."""

    devices: int
    batch_size: int
    lr: float


def parser(description: str, section: str) -> argparse.ArgumentParser:
    """A training section's command line: the common options (one sample per epoch) and
    the training ones (``add_arguments``)."""
    p = arguments.parser(description, repeated=False)
    add_arguments(p, section)
    return p


def add_arguments(parser: argparse.ArgumentParser, section: str) -> None:
    """The training options: the section's own, made from its declaration (its options,
    the documents' values: ``arguments.add_options``), the seed, ``--on`` and where the
    data are."""
    train = parser.add_argument_group("training (one run per --devices value)")
    arguments.add_options(train, section)  # type: ignore[arg-type]  (a group takes the same calls)
    train.add_argument("--seed", type=non_negative_int, default=0,
                       help="seed of the parameters' initial values and of the data's order "
                            "(0: a fresh MXNet process's own seed, as the documents ran); "
                            "another seed shows how far the accuracy moves by chance")
    devices.add_argument(train)  # type: ignore[arg-type]  (a group takes the same calls)
    fashion = parser.add_argument_group("Fashion-MNIST")
    fashion.add_argument("--data-dir", default=None,
                         help="folder with the four .gz files, looked at before MXNet's cache "
                              "and Debian's package")
    fashion.add_argument("--data-download", action="store_true",
                         help="let MXNet download the data set when it is found nowhere")


def runs(args: argparse.Namespace) -> list[Run]:
    """The training runs the options ask for; a usage error (exit 2) when they disagree."""
    counts = (len(args.devices), len(args.batch_sizes), len(args.learning_rates))
    if len(set(counts)) > 1:
        arguments.usage_error(
            "--devices, --batch-sizes and --learning-rates need one value per run; "
            f"got {counts[0]}, {counts[1]} and {counts[2]} values")
    for n, batch_size in zip(args.devices, args.batch_sizes):
        if batch_size % n:
            # The documents' split_and_load assumes every device gets the same share.
            arguments.usage_error(
                f"batch size {batch_size} does not split evenly over {n} devices")
    return [Run(*run) for run in zip(args.devices, args.batch_sizes, args.learning_rates)]


def batch_sizes(examples: int, batch_size: int) -> list[int]:
    """Each batch size one epoch feeds, once: the full one, then the smaller last batch
    where the examples do not divide evenly (DataLoader keeps it)."""
    sizes = [batch_size] if examples >= batch_size else []
    return sizes + ([examples % batch_size] if examples % batch_size else [])


def warm_up(dataset, batch_size: int, step: Callable[[Any, Any], None],
            zeros_batch: Callable[[int, tuple], tuple], sync: Callable[[], object]
            ) -> list[list[int]]:
    """``step(X, y)`` once for every input shape an epoch will feed, before the first
    timed epoch, so that work done on a shape's first use stays out of the timings:
    cuDNN tunes its convolution algorithms per shape (MXNET_CUDNN_AUTOTUNE_DEFAULT),
    MKLDNN/oneDNN build their primitives per shape, CUDA loads kernels on first use.
    The batches are zeros, ``zeros_batch(size, example_shape)`` (each framework's
    ``warm_up`` passes its own): the loader's order and every random generator stay
    where they were. ``step`` must leave the parameters as they were (forward and
    backward, no update). Returns the input shapes warmed."""
    example_shape = tuple(dataset[0][0].shape)  # indexing draws no random number
    warmed = []
    for size in batch_sizes(len(dataset), batch_size):
        X, y = zeros_batch(size, example_shape)
        step(X, y)
        warmed.append([size, *example_shape])
    sync()
    return warmed


def fitting_runs(args: argparse.Namespace, rec: Recorder, model: str,
                 make_devices: Callable[[str, int], list], gpu_count: Callable[[], int]
                 ) -> tuple[list[Run], list]:
    """The runs that fit this machine, and devices enough for the largest of them: a
    machine with one GPU trains the documents' 1-GPU run and skips only the 2-GPU one,
    saying why (printed, and under ``runs_not_run`` in the run record: each such run's
    device count, the reason and what it needs, as fields). Skipped when not
    even the smallest run fits: ``make_devices`` (each framework's ``devices``) says
    what is missing."""
    planned = runs(args)
    counts = sorted({run.devices for run in planned})
    missing = {}
    if args.on == "gpu":  # without GPUs every run fits: the CPU stands in for each device
        found = gpu_count()
        missing = {n: f"needs {n} GPUs, found {found}" for n in counts if n > found}
    fitting = [n for n in counts if n not in missing]
    found_devices = make_devices(args.on, fitting[-1] if fitting else counts[0])
    for run in planned:
        if run.devices in missing:
            rec.notes.setdefault("runs_not_run", {})[case_name(model, run.devices)] = {
                "devices": run.devices, "reason": missing[run.devices], "needs": NEEDS_GPUS}
            print(f"{model} on {run.devices} devices: not run, {missing[run.devices]}",
                  flush=True)
    return [run for run in planned if run.devices not in missing], found_devices


def demos_on_two(rec: Recorder, found_devices: list, show: Callable[[list], None]) -> None:
    """The documents' demos before training (copies, allreduce, split), which need two
    devices: ``show(found_devices)``, or a note saying why they did not run."""
    if len(found_devices) >= 2:
        show(found_devices)
    else:
        rec.notes["demos"] = "not run: they need two devices and no run asked for two"


def case_name(model: str, num_devices: int) -> str:
    """``lenet_1_device``, ``lenet_2_devices``: the report keys on these."""
    return f"{model}_{num_devices}_device" + ("s" if num_devices > 1 else "")


def progress(batches: Iterable[T], epoch: int, epochs: int,
             stream: TextIO | None = None) -> Iterator[T]:
    """``batches`` unchanged; on a terminal, a bar of the batches handed out so far;
    else, in an epoch longer than a minute, a line a minute (``minutely``)."""
    stream = stream or sys.stdout
    if not stream.isatty():
        yield from minutely(batches, epoch, epochs)
        return
    total = len(batches)  # type: ignore[arg-type]
    done = 0
    for batch in batches:
        yield batch
        done += 1
        filled = BAR_WIDTH * done // max(total, 1)
        stream.write(f"\repoch {epoch}/{epochs} [{'#' * filled:<{BAR_WIDTH}}] {done}/{total}")
        stream.flush()
    stream.write("\r" + " " * (BAR_WIDTH + 30) + "\r")
    stream.flush()


def minutely(batches: Iterable[T], epoch: int, epochs: int) -> Iterator[T]:
    """``batches`` unchanged, with a progress line each time a minute or more has passed
    since the last (a ResNet-18 epoch on a CPU takes many): the clock is read between
    batches, well under a microsecond each, and a line is written at most once a minute."""
    total = len(batches) if hasattr(batches, "__len__") else "?"
    last = time.monotonic()
    for done, batch in enumerate(batches, 1):
        yield batch
        now = time.monotonic()
        if now - last >= EVERY_S:
            say(f"epoch {epoch}/{epochs}: {done} of {total} batches")
            last = now


def epoch_line(epoch: int, seconds: float, loss: float, test_acc: float) -> str:
    """The documents' per-epoch line, with the mean training loss added."""
    return f"epoch {epoch}, time {seconds:.1f} sec, loss {loss:.4f}, test acc {test_acc:.2f}"


def record_epoch(rec: Recorder, case: str, epoch: int, seconds: float, loss: float,
                 test_acc: float, ctx: Sequence[Any], meter: energy.Meter | None = None,
                 images: int | None = None) -> None:
    """One epoch's samples (training time, test accuracy, mean training loss), then its line.
    ``meter``: the epoch's GPU energy, metered around its timing (``energy.Meter``)."""
    where = ",".join(str(c) for c in ctx)
    rec.samples(case, "time", "s", [seconds], epoch=epoch, devices=where)
    rec.samples(case, "accuracy", "fraction", [test_acc], epoch=epoch, devices=where)
    rec.samples(case, "loss", "", [loss], epoch=epoch, devices=where)
    if meter is not None:
        record_energy(rec, case, epoch, meter, images, where)
    say(epoch_line(epoch, seconds, loss, test_acc), case)


def record_energy(rec: Recorder, case: str, epoch: int, meter: energy.Meter,
                  images: int | None, where: str) -> None:
    """An epoch's GPU energy as samples beside its seconds (joules, and joules per 1000
    images where the images are counted), where NVML measured every GPU it ran on; its
    reading (clocks, throttle reasons, or why there is none) in the run record's notes."""
    reading = meter.reading()
    rec.notes.setdefault("gpu_energy_epochs", {}).setdefault(case, {})[str(epoch)] = reading
    joules = energy.joules(reading)
    if joules is None:
        return
    rec.samples(case, "energy", "J", [joules], epoch=epoch, devices=where)
    if images:
        rec.samples(case, "energy_per_1000_images", "J", [1000 * joules / images],
                    epoch=epoch, devices=where)
