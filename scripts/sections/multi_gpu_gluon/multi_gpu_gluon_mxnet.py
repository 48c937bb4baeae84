"""Concise multi-GPU training with Gluon (seeds/000: 多GPU简洁实现; seeds/001: 多 GPU 训练).

Reproduces, in the document's order, on the first two devices:
1. ``resnet18`` initialized on both devices: its outputs for a random batch split
   over them with ``gutils.split_and_load`` (about 1e-6 in the notebook);
2. ``weight.data()`` without a device: 'not initialized on cpu(0)' on GPUs;
3. the first layer's weights are the same on both devices;
then ``train``: ResNet-18 on Fashion-MNIST with ``gluon.Trainer``, once per --devices
value (the documents: 1 GPU with batch size 256 and lr 0.1, then 2 GPUs with 512 and
0.2, 10 epochs; seeds/001 prints mean sec/epoch and the final test accuracy).

As in the document, the training loop waits once per epoch, the clock stops after
that sync, test accuracy is measured after it on the first device, and the mean
training loss is read only after the clock stops. The net is the document's
nn.Sequential of nn.Block: not hybridized.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import energy, harness, timing, training
from d2lperf import mxnet as d2l
from d2lperf.describe import Stats
from d2lperf.results import Recorder


def residual_class():
    """``Residual``, defined once MXNet may be imported (after the thread counts are set)."""
    from mxnet import nd
    from mxnet.gluon import nn

    class Residual(nn.Block):
        def __init__(self, num_channels, use_1x1conv=False, strides=1, **kwargs):
            super().__init__(**kwargs)
            self.conv1 = nn.Conv2D(num_channels, kernel_size=3, padding=1, strides=strides)
            self.conv2 = nn.Conv2D(num_channels, kernel_size=3, padding=1)
            if use_1x1conv:
                self.conv3 = nn.Conv2D(num_channels, kernel_size=1, strides=strides)
            else:
                self.conv3 = None
            self.bn1 = nn.BatchNorm()
            self.bn2 = nn.BatchNorm()

        def forward(self, X):
            Y = nd.relu(self.bn1(self.conv1(X)))
            Y = self.bn2(self.conv2(Y))
            if self.conv3:
                X = self.conv3(X)
            return nd.relu(Y + X)

    return Residual


def resnet18(num_classes):
    from mxnet.gluon import nn

    Residual = residual_class()

    def resnet_block(num_channels, num_residuals, first_block=False):
        blk = nn.Sequential()
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.add(Residual(num_channels, use_1x1conv=True, strides=2))
            else:
                blk.add(Residual(num_channels))
        return blk

    net = nn.Sequential()
    # Fashion-MNIST's 28x28 images: a smaller kernel, stride and padding, and no max-pool.
    net.add(nn.Conv2D(64, kernel_size=3, strides=1, padding=1),
            nn.BatchNorm(),
            nn.Activation("relu"))
    net.add(resnet_block(64, 2, first_block=True),
            resnet_block(128, 2),
            resnet_block(256, 2),
            resnet_block(512, 2))
    net.add(nn.GlobalAvgPool2D(),
            nn.Dense(num_classes))
    return net


def demos(rec: Recorder, net, ctx) -> None:
    import mxnet as mx
    from mxnet import init, nd
    from mxnet.gluon import utils as gutils

    net.initialize(init=init.Normal(sigma=0.01), ctx=ctx)
    x = nd.random.uniform(shape=(4, 1, 28, 28))
    gpu_x = gutils.split_and_load(x, ctx)
    outputs = [net(gpu_x[0]), net(gpu_x[1])]
    print(*outputs)
    rec.output("net_outputs", " ".join(map(str, outputs)), [y.asnumpy().tolist() for y in outputs])

    weight = net[0].params.get("weight")
    try:
        weight.data()
    except RuntimeError:
        printed = f"not initialized on {mx.cpu()}"
        print(printed)
    else:
        printed = ""
        rec.notes["weight_not_initialized_on"] = (
            f"weight.data() did not raise: the default context {mx.cpu()} is one of the "
            f"devices {d2l.names(ctx)}, so the document's message is not printed")
    rec.output("weight_not_initialized_on", printed)
    first, second = weight.data(ctx[0])[0], weight.data(ctx[1])[0]
    print(first, second)
    same = bool((first.asnumpy() == second.asnumpy()).all())
    rec.output("weight_same_on_devices", str(same))


def warm_up(net, train_iter, batch_size: int, ctx, loss) -> list[list[int]]:
    """Forward and backward once per input shape before the timed epochs
    (d2l.warm_up); no trainer step, and BatchNorm's running statistics, which a
    forward pass in training mode moves, are put back, so training is unchanged."""
    from mxnet import autograd
    from mxnet.gluon import utils as gutils

    running = net.collect_params(".*running_mean|.*running_var")
    saved: dict[str, list] = {}

    def untimed_batch(X, y):
        gpu_Xs, gpu_ys = gutils.split_and_load(X, ctx), gutils.split_and_load(y, ctx)
        if not saved:
            net(gpu_Xs[0])  # predicting moves no statistic, and ends deferred initialization
            saved.update({name: [d.copy() for d in p.list_data()]
                          for name, p in running.items()})
        with autograd.record():
            ls = [loss(net(gpu_X), gpu_y) for gpu_X, gpu_y in zip(gpu_Xs, gpu_ys)]
        for l in ls:  # noqa: E741 (the document's name)
            l.backward()

    warmed = d2l.warm_up(train_iter, batch_size, untimed_batch)
    for name, p in running.items():
        for data, copy in zip(p.list_data(), saved[name]):
            copy.copyto(data)
    return warmed


def train(args: argparse.Namespace, rec: Recorder, net, ctx, batch_size: int,
          lr: float) -> None:
    from mxnet import autograd, gluon, init, nd
    from mxnet.gluon import loss as gloss
    from mxnet.gluon import utils as gutils

    train_iter, test_iter = d2l.load_data(args, batch_size)
    case = training.case_name("resnet18", len(ctx))
    print("running on:", ctx, flush=True)
    net.initialize(init=init.Normal(sigma=0.01), ctx=ctx, force_reinit=True)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    loss = gloss.SoftmaxCrossEntropyLoss()
    seconds, test_acc = [], float("nan")
    warmed = warm_up(net, train_iter, batch_size, ctx, loss)
    rec.notes.setdefault("warmed_input_shapes", {})[case] = warmed
    for epoch in range(1, args.epochs + 1):
        # One running sum per device, so that adding to it moves nothing between devices.
        loss_sums, examples = [nd.zeros(1, ctx=c) for c in ctx], 0
        with (energy.Meter(energy.gpu_ordinals(ctx)) as meter,
              timing.Stopwatch(d2l.sync) as clock):
            for X, y in training.progress(train_iter, epoch, args.epochs):
                gpu_Xs = gutils.split_and_load(X, ctx)
                gpu_ys = gutils.split_and_load(y, ctx)
                with autograd.record():
                    ls = [loss(net(gpu_X), gpu_y) for gpu_X, gpu_y in zip(gpu_Xs, gpu_ys)]
                for l in ls:  # noqa: E741 (the document's name)
                    l.backward()
                trainer.step(batch_size)
                for loss_sum, device_loss in zip(loss_sums, ls):
                    loss_sum += device_loss.sum()
                examples += X.shape[0]
        train_loss = sum(s.asscalar() for s in loss_sums) / examples
        test_acc = d2l.evaluate_accuracy(net, test_iter, ctx[0])
        training.record_epoch(rec, case, epoch, clock.seconds, train_loss, test_acc, ctx,
                              meter, examples)
        seconds.append(clock.seconds)
    rec.notes.setdefault("train_examples_per_epoch", {})[case] = examples
    print(f"test acc: {test_acc:.2f}, {Stats(seconds).mean:.1f} sec/epoch on {ctx}", flush=True)


def body(args: argparse.Namespace, rec: Recorder) -> None:
    runs, ctx = d2l.prepare(args, rec, "resnet18")
    net = resnet18(10)
    training.demos_on_two(rec, ctx, lambda found: demos(rec, net, found))
    for run in runs:
        train(args, rec, net, ctx[:run.devices], run.batch_size, run.lr)


def build_parser() -> argparse.ArgumentParser:
    return training.parser(__doc__.splitlines()[0], "multi_gpu_gluon")


if __name__ == "__main__":
    sys.exit(harness.main("multi_gpu_gluon", "mxnet", build_parser(), body))
