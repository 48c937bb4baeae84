"""Multi-GPU computation from scratch, in JAX (seeds/000: 多GPU并行计算).

The JAX twin of multi_gpu_scratch_mxnet.py. JAX splits the host into two devices
(d2lperf.jax), the faithful counterpart of the document's ``cpu(0)``, ``cpu(1)``: two XLA
devices, each with its own queue. In the document's order, on the first two devices:
1. ``get_params``: b1 copied to the first device (``jax.device_put``), and its gradient:
   JAX keeps no gradient beside a parameter (``jax.grad`` returns one), so the zeros a
   first gradient would start from;
2. ``allreduce``: [[1. 1.]] and [[2. 2.]] before, [[3. 3.]] on both devices after, as
   ``jax.lax.psum`` over a mesh of the devices (``jax.shard_map``): the collective JAX
   writes allreduce with;
3. ``split_batch``: the document's ``arange(24).reshape((6, 4))`` split over two devices
   (``jax.device_put`` with a sharding along the batch: ``split_and_load``);
then ``train``: the LeNet written by hand on Fashion-MNIST, data parallel: each device
computes the gradient of its shard, ``psum`` sums them, each device updates its copy of
the parameters (one jitted ``shard_map`` step), once per --devices value (the document:
1 device, then 2, batch size 256, lr 0.2, 4 epochs).

Before the first timed epoch, one untimed step per input shape on zeros, its update thrown
away (d2lperf.jax.warm_up: where the step compiles). Every batch ends in a
synchronisation (``block_until_ready``, as the book synchronises after each batch);
each epoch's training time is one sample, the clock stopping after a final sync; test
accuracy is measured after it on the first device; the mean training loss is read only
after the clock stops.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import energy, harness, timing, training
from d2lperf import jax as d2l
from d2lperf.results import Recorder

NO_GRAD_BUFFER = ("JAX keeps no gradient beside a parameter (jax.grad returns one): the "
                  "zeros a first gradient starts from, where MXNet's attach_grad allocates "
                  "them")


def init_params(key):
    import jax
    import jax.numpy as jnp

    scale = 0.01
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return [jax.random.normal(k1, (20, 1, 3, 3)) * scale, jnp.zeros(20),
            jax.random.normal(k2, (50, 20, 5, 5)) * scale, jnp.zeros(50),
            jax.random.normal(k3, (800, 128)) * scale, jnp.zeros(128),
            jax.random.normal(k4, (128, 10)) * scale, jnp.zeros(10)]


def lenet(X, params):
    """The document's LeNet, layer by layer (NCHW, as the MXNet twin's)."""
    import jax
    import jax.numpy as jnp

    def conv(x, w, b):
        out = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                           dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return out + b[None, :, None, None]

    def avg_pool(x):
        return jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 1, 2, 2), (1, 1, 2, 2),
                                     "VALID") / 4

    h1 = avg_pool(jax.nn.relu(conv(X, params[0], params[1])))
    h2 = avg_pool(jax.nn.relu(conv(h1, params[2], params[3])))
    h2 = h2.reshape(h2.shape[0], -1)
    h3 = jax.nn.relu(jnp.dot(h2, params[4]) + params[5])
    return jnp.dot(h3, params[6]) + params[7]


def loss(y_hat, y):
    """Softmax cross-entropy, one value per example (Gluon's SoftmaxCrossEntropyLoss)."""
    import jax

    return -jax.nn.log_softmax(y_hat)[jax.numpy.arange(len(y)), y]


def get_params(params, device):
    import jax

    return [jax.device_put(p, device) for p in params]


def mesh(devices):
    """The devices as a one-axis mesh, ``devices``: what a sharding and a collective name."""
    import numpy as np
    from jax.sharding import Mesh

    return Mesh(np.array(devices), ("devices",))


def allreduce(data, devices):
    """Sum the arrays of every device, the sum on every device: ``psum`` over them."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    grid = mesh(devices)
    stacked = jax.device_put(jnp.stack(data), NamedSharding(grid, P("devices")))
    summed = jax.shard_map(lambda x: jax.lax.psum(x, "devices"), mesh=grid,
                           in_specs=P("devices"), out_specs=P("devices"))(stacked)
    return [shard.data[0] for shard in summed.addressable_shards]


def split_batch(X, y, devices):
    """Split ``X`` and ``y`` over the devices along the batch, a shard each
    (``split_and_load``)."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    assert X.shape[0] == y.shape[0]
    along = NamedSharding(mesh(devices), P("devices"))
    return jax.device_put(X, along), jax.device_put(y, along)


def make_step(devices, lr: float):
    """One minibatch over all devices: each device's gradient of its shard's summed loss,
    ``psum`` over the devices, then each device's copy of the parameters updated with the
    gradient of the full batch (d2l's sgd: the sum over the batch size). Returns the new
    parameters (the same on every device) and each device's summed loss."""
    import jax
    from jax.sharding import PartitionSpec as P

    def step(params, X, y, batch_size):
        shard_loss, grads = jax.value_and_grad(
            lambda p: loss(lenet(X, p), y).sum())(params)
        grads = jax.lax.psum(grads, "devices")
        return [p - lr * g / batch_size for p, g in zip(params, grads)], shard_loss[None]

    def sharded(params, X, y, batch_size):
        return jax.shard_map(lambda p, X, y: step(p, X, y, batch_size), mesh=mesh(devices),
                             in_specs=(P(), P("devices"), P("devices")),
                             out_specs=(P(), P("devices")))(params, X, y)

    return jax.jit(sharded, static_argnums=3)


def values(value):
    import numpy as np

    if isinstance(value, list):
        return [np.asarray(v).tolist() for v in value]
    return np.asarray(value).tolist()


def show(rec: Recorder, name: str, label: str, value, by_design: str | None = None) -> None:
    """Print as the document does, and record the printed text with its numbers."""
    print(label, value)
    rec.output(name, str(value), values(value), by_design=by_design)


def demos(rec: Recorder, params, devices) -> None:
    import jax.numpy as jnp

    new_params = get_params(params, devices[0])
    show(rec, "b1_weight", "b1 weight:", new_params[1])
    show(rec, "b1_grad", "b1 grad:", jnp.zeros_like(new_params[1]), NO_GRAD_BUFFER)
    rec.notes["b1_grad"] = NO_GRAD_BUFFER

    data = [jnp.ones((1, 2)) * (i + 1) for i in range(2)]
    show(rec, "allreduce_before", "Before allreduce:", data)
    show(rec, "allreduce_after", "After allreduce:", allreduce(data, devices[:2]))

    batch = jnp.arange(24).reshape(6, 4)
    shards, _ = split_batch(batch, batch[:, 0], devices[:2])
    show(rec, "split_input", "input:", batch)
    print("load into", devices[:2])
    show(rec, "split_output", "output:", [shard.data for shard in shards.addressable_shards])


def train(args: argparse.Namespace, rec: Recorder, params, devices, batch_size: int,
          lr: float) -> None:
    import jax
    import jax.numpy as jnp

    train_iter, test_iter = d2l.load_data(args, batch_size)
    case = training.case_name("lenet", len(devices))
    print("running on:", devices, flush=True)
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    replicated = jax.device_put(params, NamedSharding(mesh(devices), P()))
    step = make_step(devices, lr)

    def warm(X, y):  # the step compiled for this shape; its update is thrown away
        X_shards, y_shards = split_batch(X, y, devices)
        d2l.sync(step(replicated, X_shards, y_shards, X.shape[0]))

    warmed = d2l.warm_up(train_iter, batch_size, warm)
    rec.notes.setdefault("warmed_input_shapes", {})[case] = warmed
    for epoch in range(1, args.epochs + 1):
        loss_sum, examples = jnp.zeros(len(devices)), 0
        with (energy.Meter(energy.gpu_ordinals(d2l.names(devices).split(","))) as meter,
              timing.Stopwatch(d2l.sync) as clock):
            for X, y in training.progress(train_iter, epoch, args.epochs):
                X_shards, y_shards = split_batch(X, y, devices)
                replicated, losses = step(replicated, X_shards, y_shards, X.shape[0])
                loss_sum = loss_sum + losses
                examples += X.shape[0]
                d2l.sync(replicated)  # the book's synchronisation after every batch
        train_loss = float(loss_sum.sum()) / examples
        # evaluated on the first device, as the book does
        first = [jax.device_put(p, devices[0]) for p in replicated]
        test_acc = d2l.evaluate_accuracy(lambda x, first=first: lenet(x, first), test_iter,
                                         devices[0])
        training.record_epoch(rec, case, epoch, clock.seconds, train_loss, test_acc,
                              d2l.names(devices).split(","), meter, examples)
    rec.notes.setdefault("train_examples_per_epoch", {})[case] = examples


def body(args: argparse.Namespace, rec: Recorder) -> None:
    runs, devices = d2l.prepare(args, rec, "lenet")
    params = init_params(d2l.seed(args.seed))
    training.demos_on_two(rec, devices, lambda found: demos(rec, params, found))
    for run in runs:
        train(args, rec, params, devices[:run.devices], run.batch_size, run.lr)


def build_parser() -> argparse.ArgumentParser:
    return training.parser(__doc__.splitlines()[0], "multi_gpu_scratch")


if __name__ == "__main__":
    sys.exit(harness.main("multi_gpu_scratch", "jax", build_parser(), body))
