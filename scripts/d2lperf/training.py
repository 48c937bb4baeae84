"""What the two multi-device training sections share (seeds/000: 多GPU并行计算, 多GPU简洁实现).

Their training options (one run per devices/batch size/learning rate triple, as the
documents call ``train(num_gpus=1, ...)`` then ``train(num_gpus=2, ...)``), the data
they train on, ``evaluate_accuracy``, and how an epoch is recorded and shown: one
line per epoch for the rule's log, plus a progress bar only when a person watches a
terminal (carriage returns would garble a log file).

MXNet is imported inside functions only: the thread counts are pinned before it loads.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TextIO, TypeVar

from d2lperf import data, devices
from d2lperf.experiment import non_negative_int, positive_int
from d2lperf.results import Recorder

T = TypeVar("T")
BAR_WIDTH = 30


class Run(NamedTuple):
    """One call of the documents' ``train(num_gpus, batch_size, lr)``."""

    devices: int
    batch_size: int
    lr: float


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def add_arguments(
    parser: argparse.ArgumentParser,
    *,
    devices_per_run: Sequence[int],
    batch_sizes: Sequence[int],
    learning_rates: Sequence[float],
    epochs: int,
) -> None:
    """The training options, defaulting to the document's values passed in."""
    train = parser.add_argument_group("training (one run per --devices value)")
    train.add_argument("--devices", type=positive_int, nargs="+", default=list(devices_per_run),
                       help="devices per run, runs one after another "
                            f"(document: {_listed(devices_per_run)})")
    train.add_argument("--batch-sizes", type=positive_int, nargs="+", default=list(batch_sizes),
                       help="batch size of each run, split evenly over its devices "
                            f"(document: {_listed(batch_sizes)})")
    train.add_argument("--learning-rates", type=positive_float, nargs="+",
                       default=list(learning_rates),
                       help=f"learning rate of each run (document: {_listed(learning_rates)})")
    train.add_argument("--epochs", type=positive_int, default=epochs,
                       help=f"epochs per run; each epoch's time is one sample (document: {epochs})")
    devices.add_argument(train)  # type: ignore[arg-type]  (a group takes the same calls)
    fashion = parser.add_argument_group("Fashion-MNIST")
    fashion.add_argument("--data-dir", default=None,
                         help="folder with the four .gz files, looked at before MXNet's cache "
                              "and Debian's package")
    fashion.add_argument("--data-download", action="store_true",
                         help="let MXNet download the data set when it is found nowhere")
    fashion.add_argument("--data-workers", type=non_negative_int,
                         default=data.default_workers(),
                         help="DataLoader worker processes (document: 4)")
    fashion.add_argument("--train-limit", type=positive_int, default=None,
                         help="train on the first N training images only (default: all 60000)")
    fashion.add_argument("--test-limit", type=positive_int, default=None,
                         help="test on the first N test images only (default: all 10000)")


def _listed(values: Sequence[Any]) -> str:
    return " ".join(map(str, values))


def runs(args: argparse.Namespace) -> list[Run]:
    """The training runs the options ask for; a usage error (exit 2) when they disagree."""
    counts = (len(args.devices), len(args.batch_sizes), len(args.learning_rates))
    if len(set(counts)) > 1:
        _usage_error("--devices, --batch-sizes and --learning-rates need one value per run; "
                     f"got {counts[0]}, {counts[1]} and {counts[2]} values")
    for n, batch_size in zip(args.devices, args.batch_sizes):
        if batch_size % n:
            # The documents' split_and_load assumes every device gets the same share.
            _usage_error(f"batch size {batch_size} does not split evenly over {n} devices")
    return [Run(*run) for run in zip(args.devices, args.batch_sizes, args.learning_rates)]


MXNET_DEFAULT_SEED = 0  # MXNet's own seed in a fresh process


def prepare(args: argparse.Namespace) -> tuple[list[Run], list]:
    """The runs, and contexts enough for the largest (too few GPUs skip the whole
    section); then both generators seeded, so parameters and shuffling repeat."""
    planned = runs(args)
    ctx = devices.contexts(args.on, max(run.devices for run in planned))
    import mxnet as mx
    import numpy as np

    mx.random.seed(MXNET_DEFAULT_SEED)
    # The DataLoader shuffles with numpy's generator: seeding it makes runs repeatable.
    np.random.seed(MXNET_DEFAULT_SEED)
    return planned, ctx


def batch_sizes(examples: int, batch_size: int) -> list[int]:
    """Each batch size one epoch feeds, once: the full one, then the smaller last batch
    where the examples do not divide evenly (DataLoader keeps it)."""
    sizes = [batch_size] if examples >= batch_size else []
    return sizes + ([examples % batch_size] if examples % batch_size else [])


def warm_up(train_iter, batch_size: int, step: Callable[[Any, Any], None]) -> list[list[int]]:
    """``step(X, y)`` once for every input shape an epoch will feed, before the first
    timed epoch, so that work done on a shape's first use stays out of the timings:
    cuDNN tunes its convolution algorithms per shape (MXNET_CUDNN_AUTOTUNE_DEFAULT),
    MKLDNN builds its primitives per shape. The batches are zeros, made here: the
    loader's order and every random generator stay where they were. ``step`` must
    leave the parameters as they were (forward and backward, no update).
    Returns the input shapes warmed."""
    from mxnet import nd

    dataset = train_iter._dataset  # DataLoader keeps it; indexing draws no random number
    example_shape = dataset[0][0].shape
    warmed = []
    for size in batch_sizes(len(dataset), batch_size):
        X, y = nd.zeros((size, *example_shape)), nd.zeros((size,))
        step(X, y)
        warmed.append(list(X.shape))
    nd.waitall()
    return warmed


def _usage_error(message: str) -> None:
    print(f"{Path(sys.argv[0]).name}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def case_name(model: str, num_devices: int) -> str:
    """``lenet_1_device``, ``lenet_2_devices``: the report keys on these."""
    return f"{model}_{num_devices}_device" + ("s" if num_devices > 1 else "")


def load_data(args: argparse.Namespace, batch_size: int):
    """(train_iter, test_iter) as the documents build them; a missing data set ends the
    run non-zero with data.py's message (where it looked, how to get it) on stderr."""
    try:
        return data.load_data_fashion_mnist(
            batch_size, data_dir=args.data_dir, download=args.data_download,
            num_workers=args.data_workers, train_limit=args.train_limit,
            test_limit=args.test_limit,
        )
    except data.DataMissing as missing:
        print(missing, file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def evaluate_accuracy(net, data_iter, ctx) -> float:
    """The documents' evaluate_accuracy (the concise section passes ``data_iter`` first).

    The correct count stays an NDArray on ``ctx`` until the end: one synchronisation
    per evaluation, not one per batch."""
    from mxnet import nd

    acc_sum, n = nd.array([0], ctx=ctx), 0
    for X, y in data_iter:
        X, y = X.as_in_context(ctx), y.as_in_context(ctx).astype("float32")
        y_hat = net(X)
        acc_sum += (y_hat.argmax(axis=1) == y).sum()
        n += y.size
    return acc_sum.asscalar() / n


def progress(batches: Iterable[T], epoch: int, epochs: int,
             stream: TextIO | None = None) -> Iterator[T]:
    """``batches`` unchanged; on a terminal, a bar of the batches handed out so far."""
    stream = stream or sys.stdout
    if not stream.isatty():
        yield from batches
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


def epoch_line(epoch: int, seconds: float, loss: float, test_acc: float) -> str:
    """The documents' per-epoch line, with the mean training loss added."""
    return f"epoch {epoch}, time {seconds:.1f} sec, loss {loss:.4f}, test acc {test_acc:.2f}"


def record_epoch(rec: Recorder, case: str, epoch: int, seconds: float, loss: float,
                 test_acc: float, ctx: Sequence[Any]) -> None:
    """One epoch's samples (training time, test accuracy, mean training loss), then its line."""
    where = devices.names(ctx)
    rec.samples(case, "time", "s", [seconds], epoch=epoch, devices=where)
    rec.samples(case, "accuracy", "fraction", [test_acc], epoch=epoch, devices=where)
    rec.samples(case, "loss", "", [loss], epoch=epoch, devices=where)
    print(epoch_line(epoch, seconds, loss, test_acc), flush=True)
