"""Concise multi-GPU training, in JAX (seeds/000: 多GPU简洁实现; seeds/001: 多 GPU 训练).

The JAX twin of multi_gpu_gluon_mxnet.py, written as d2l's JAX edition writes
models: d2l's ResNet-18 for 1 input channel in Flax (its convolution and dense weights
drawn from N(0, 0.01)), trained with ``optax.sgd``, once per --devices value (the
documents: 1 GPU with batch size 256 and lr 0.1, then 2 GPUs with 512 and 0.2, 10
epochs; seeds/001 prints mean sec/epoch and the final test accuracy).

The concise way to run it on several devices in JAX is a sharding: the batch split over
a mesh of the devices along its first axis, the parameters replicated on each, and one
``jax.jit``-compiled step that XLA partitions (the gradients summed across the devices,
as Gluon's ``Trainer.step`` sums them). BatchNorm normalises each batch as a whole here
(XLA computes the batch's statistics across its shards), where Gluon and
``nn.DataParallel`` normalise each device's shard apart: a difference of the designs.

Before training, the document's checks on the first two devices: the net's outputs for a
random batch split over them (the running statistics, as Gluon's ``net(x)`` outside
``autograd.record``), and that the first layer's weights are the same on both. Gluon's
'not initialized on cpu(0)' has no JAX counterpart (parameters are arrays made by
``init``) and is recorded as such.

Before the first timed epoch, one untimed step per input shape on zeros, its update thrown
away (d2lperf.jax.warm_up: where the step compiles). The clock stops after one
synchronisation at the end of each epoch; test accuracy is measured after it; the mean
training loss is read only after the clock stops.

On GPUs (``--on gpu``) a run that asks for more GPUs than the machine has is not run
(the run record says why) and the others are. Without GPUs (``--on cpu``) the devices
are JAX's two host devices.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import energy, harness, timing, training
from d2lperf import jax as d2l
from d2lperf.describe import Stats
from d2lperf.results import Recorder

NO_DEFERRED_INIT = ("parameters are arrays that init makes, on the devices they are put "
                    "on: no deferred initialisation, so no 'not initialized on cpu(0)'")


def resnet18(num_classes: int):
    """A slightly modified ResNet-18 model (d2l's), in Flax."""
    from flax import linen as nn

    weights = nn.initializers.normal(0.01)

    class Residual(nn.Module):
        channels: int
        use_1x1conv: bool = False
        strides: int = 1

        @nn.compact
        def __call__(self, X, train: bool):
            norm = dict(use_running_average=not train, momentum=0.9)
            Y = nn.relu(nn.BatchNorm(**norm)(nn.Conv(
                self.channels, (3, 3), strides=self.strides, padding=1,
                kernel_init=weights)(X)))
            Y = nn.BatchNorm(**norm)(nn.Conv(self.channels, (3, 3), padding=1,
                                             kernel_init=weights)(Y))
            if self.use_1x1conv:
                X = nn.Conv(self.channels, (1, 1), strides=self.strides,
                            kernel_init=weights)(X)
            return nn.relu(Y + X)

    class ResNet18(nn.Module):
        @nn.compact
        def __call__(self, X, train: bool = False):
            X = X.transpose(0, 2, 3, 1)  # NCHW batches (the loaders'), NHWC for Flax
            X = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9)(
                nn.Conv(64, (3, 3), padding=1, kernel_init=weights)(X)))
            for channels, first in ((64, True), (128, False), (256, False), (512, False)):
                for i in range(2):
                    down = i == 0 and not first
                    X = Residual(channels, use_1x1conv=down, strides=2 if down else 1)(
                        X, train)
            X = X.mean(axis=(1, 2))  # global average pooling
            return nn.Dense(num_classes, kernel_init=weights)(X)

    return ResNet18()


def placements(devices):
    """How a batch and the parameters lie on the devices: the batch split along its first
    axis, the parameters replicated."""
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    grid = Mesh(np.array(devices), ("devices",))
    return NamedSharding(grid, P("devices")), NamedSharding(grid, P())


def demos(rec: Recorder, net, variables, devices) -> None:
    import jax
    import numpy as np

    split, replicated = placements(devices[:2])
    x = jax.random.uniform(jax.random.key(1), (4, 1, 28, 28))
    placed = jax.device_put(variables, replicated)
    outputs = jax.jit(lambda v, x: net.apply(v, x))(placed, jax.device_put(x, split))
    shards = [np.asarray(s.data) for s in outputs.addressable_shards]
    print(*shards)
    rec.output("net_outputs", " ".join(map(str, shards)), [s.tolist() for s in shards])
    rec.output("weight_not_initialized_on", "initialised by init, then placed",
               by_design=NO_DEFERRED_INIT)
    print(f"not applicable in JAX: {NO_DEFERRED_INIT}")
    kernel = placed["params"]["Conv_0"]["kernel"]
    first, second = (np.asarray(s.data) for s in kernel.addressable_shards[:2])
    print(first[..., 0, 0], second[..., 0, 0])
    rec.output("weight_same_on_devices", str(bool(np.array_equal(first, second))))


def make_step(net, optimizer, devices):
    """One training step over the devices: the batch's mean loss, its gradient (XLA sums
    the shards' across the devices), the update, and BatchNorm's running statistics."""
    import jax
    import optax

    split, replicated = placements(devices)

    def step(params, stats, opt_state, X, y):
        def mean_loss(p):
            logits, moved = net.apply({"params": p, "batch_stats": stats}, X, train=True,
                                      mutable=["batch_stats"])
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), moved

        (value, moved), grads = jax.value_and_grad(mean_loss, has_aux=True)(params)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), moved["batch_stats"], opt_state, value

    return jax.jit(step, in_shardings=(replicated, replicated, replicated, split, split),
                   out_shardings=(replicated, replicated, replicated, replicated))


def train(args: argparse.Namespace, rec: Recorder, net, devices, batch_size: int,
          lr: float) -> None:
    import jax
    import jax.numpy as jnp
    import optax

    train_iter, test_iter = d2l.load_data(args, batch_size)
    case = training.case_name("resnet18", len(devices))
    print("running on:", devices, flush=True)
    # each run initialises the net afresh, as Gluon's force_reinit=True does
    variables = net.init(d2l.seed(args.seed), jnp.zeros((1, 1, 28, 28)))
    split, replicated = placements(devices)
    params, stats = jax.device_put((variables["params"], variables["batch_stats"]), replicated)
    optimizer = optax.sgd(lr)
    opt_state = jax.device_put(optimizer.init(params), replicated)
    step = make_step(net, optimizer, devices)

    def warm(X, y):  # the step compiled for this shape; its update is thrown away
        d2l.sync(step(params, stats, opt_state, X, y))

    warmed = d2l.warm_up(train_iter, batch_size, warm)
    rec.notes.setdefault("warmed_input_shapes", {})[case] = warmed
    evaluate = jax.jit(lambda p, s, X: net.apply({"params": p, "batch_stats": s}, X))
    seconds, test_acc = [], float("nan")
    for epoch in range(1, args.epochs + 1):
        loss_sum, examples = jnp.zeros(()), 0
        with (energy.Meter(energy.gpu_ordinals(d2l.names(devices).split(","))) as meter,
              timing.Stopwatch(d2l.sync) as clock):
            for X, y in training.progress(train_iter, epoch, args.epochs):
                X, y = jax.device_put(X, split), jax.device_put(y, split)
                params, stats, opt_state, value = step(params, stats, opt_state, X, y)
                loss_sum = loss_sum + value * X.shape[0]
                examples += X.shape[0]
            d2l.sync(params, stats, loss_sum)
        train_loss = float(loss_sum) / examples
        on_first = jax.device_put((params, stats), devices[0])  # evaluated on the first
        test_acc = d2l.evaluate_accuracy(lambda x, v=on_first: evaluate(*v, x), test_iter,
                                         devices[0])
        training.record_epoch(rec, case, epoch, clock.seconds, train_loss, test_acc,
                              d2l.names(devices).split(","), meter, examples)
        seconds.append(clock.seconds)
    rec.notes.setdefault("train_examples_per_epoch", {})[case] = examples
    rec.notes.setdefault("parallelism", {})[case] = (
        f"one jitted step, the batch sharded over {d2l.names(devices)}, the parameters "
        "replicated")
    print(f"test acc: {test_acc:.2f}, {Stats(seconds).mean:.1f} sec/epoch on {devices}",
          flush=True)


def body(args: argparse.Namespace, rec: Recorder) -> None:
    import jax.numpy as jnp

    runs, devices = d2l.prepare(args, rec, "resnet18")
    net = resnet18(10)
    variables = net.init(d2l.seed(args.seed), jnp.zeros((1, 1, 28, 28)))
    training.demos_on_two(rec, devices, lambda found: demos(rec, net, variables, found))
    for run in runs:
        train(args, rec, net, devices[:run.devices], run.batch_size, run.lr)


def build_parser() -> argparse.ArgumentParser:
    return training.parser(__doc__.splitlines()[0], "multi_gpu_gluon")


if __name__ == "__main__":
    sys.exit(harness.main("multi_gpu_gluon", "jax", build_parser(), body))
