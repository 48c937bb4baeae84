"""Concise multi-GPU training, in PyTorch (seeds/000: 多GPU简洁实现; seeds/001: 多 GPU 训练).

The PyTorch twin of multi_gpu_gluon_mxnet.py, written as d2l's PyTorch edition
writes the section (chapter_computational-performance/multiple-gpus-concise.md):
d2l's ResNet-18 for 1 input channel, its weights drawn from N(0, 0.01), wrapped in
``nn.DataParallel``, trained with ``torch.optim.SGD``, once per --devices value (the
documents: 1 GPU with batch size 256 and lr 0.1, then 2 GPUs with 512 and 0.2, 10
epochs; seeds/001 prints mean sec/epoch and the final test accuracy).

Why ``nn.DataParallel`` and not DistributedDataParallel: it is what the book's PyTorch
edition uses, and it is the counterpart of the document's Gluon code: one process
that splits each batch over the devices (``split_and_load``), runs the replicas in
parallel and sums their gradients on the first device (``Trainer.step``). DDP is one
process per GPU with an NCCL allreduce overlapping the backward pass: a different
design, faster, and not the one the section teaches.

Before training, the document's checks on the first two devices: the net's outputs for
a random batch split over them (replicas of one net, in eval mode, as Gluon's
``net(x)`` outside ``autograd.record`` uses the running statistics), and that the
first layer's weights are the same on both. Gluon's 'not initialized on cpu(0)' has no
PyTorch counterpart and is recorded as such.

Before the first timed epoch, one untimed forward and backward pass per input shape
(``warm_up``: zeros, no step, BatchNorm's statistics put back), as the MXNet twin does.
As in the document, the clock stops after one synchronisation at the end of each
epoch (the book's PyTorch loop has none; without it the last batches' GPU work would
fall outside the epoch); test accuracy is measured after it; the mean training loss is
read only after the clock stops. Each run initialises the net as the book's PyTorch
``train`` does: the convolution and linear weights drawn from N(0, 0.01), the biases
and BatchNorm as PyTorch made them; the book trains one net in both runs, so the second
starts with the biases and BatchNorm statistics the first left (MXNet's
``force_reinit=True`` resets everything: a difference of the two editions).

On GPUs (``--on gpu``) a run that asks for more GPUs than the machine has is not run
(the run record says why) and the others are: one H200 trains the 1-GPU run. Without
GPUs (``--on cpu``) ``nn.DataParallel`` is a pass-through that runs the
module as it is: both runs train on the one CPU, the second on its larger batch.
"""

from __future__ import annotations

import argparse
import copy
import sys

from d2lperf import energy, harness, timing, training
from d2lperf import torch as d2l
from d2lperf.describe import Stats
from d2lperf.results import Recorder

NO_DEFERRED_INIT = ("a module's parameters are created and initialised with it, on one "
                    "device; there is no deferred initialisation, so no 'not initialized on "
                    "cpu(0)'")
NOT_INITIALIZED = f"not applicable in PyTorch: {NO_DEFERRED_INIT}"


def residual_class():
    """d2l's ``Residual``, defined once torch may be imported (after the thread counts
    are set), with explicit input channels where today's d2l uses lazy layers (a lazy
    module must see a batch before DataParallel can replicate it)."""
    from torch import nn
    from torch.nn import functional as F

    class Residual(nn.Module):
        def __init__(self, input_channels, num_channels, use_1x1conv=False, strides=1):
            super().__init__()
            self.conv1 = nn.Conv2d(input_channels, num_channels, kernel_size=3, padding=1,
                                   stride=strides)
            self.conv2 = nn.Conv2d(num_channels, num_channels, kernel_size=3, padding=1)
            if use_1x1conv:
                self.conv3 = nn.Conv2d(input_channels, num_channels, kernel_size=1,
                                       stride=strides)
            else:
                self.conv3 = None
            self.bn1 = nn.BatchNorm2d(num_channels)
            self.bn2 = nn.BatchNorm2d(num_channels)

        def forward(self, X):
            Y = F.relu(self.bn1(self.conv1(X)))
            Y = self.bn2(self.conv2(Y))
            if self.conv3:
                X = self.conv3(X)
            Y += X
            return F.relu(Y)

    return Residual


def resnet18(num_classes, in_channels=1):
    """A slightly modified ResNet-18 model."""
    from torch import nn

    Residual = residual_class()

    def resnet_block(in_channels, out_channels, num_residuals, first_block=False):
        blk = []
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.append(Residual(in_channels, out_channels, use_1x1conv=True, strides=2))
            else:
                blk.append(Residual(out_channels, out_channels))
        return nn.Sequential(*blk)

    # This model uses a smaller convolution kernel, stride, and padding and removes the
    # max-pooling layer
    net = nn.Sequential(
        nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU())
    net.add_module("resnet_block1", resnet_block(64, 64, 2, first_block=True))
    net.add_module("resnet_block2", resnet_block(64, 128, 2))
    net.add_module("resnet_block3", resnet_block(128, 256, 2))
    net.add_module("resnet_block4", resnet_block(256, 512, 2))
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1, 1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(), nn.Linear(512, num_classes)))
    return net


def init_weights(module) -> None:
    """The book's ``init_weights``: N(0, 0.01) weights for the linear and convolution
    layers, nothing else touched."""
    from torch import nn

    if type(module) in [nn.Linear, nn.Conv2d]:
        nn.init.normal_(module.weight, std=0.01)


def replicas(net, devices) -> list:
    """The net on each device: ``nn.parallel.replicate`` on GPUs, as DataParallel does at
    every forward pass; on the CPU stand-in, a copy for each."""
    from torch import nn

    if all(d2l.is_cuda(d) for d in devices):
        return list(nn.parallel.replicate(net.to(devices[0]), devices))
    return [copy.deepcopy(net).to(d) for d in devices]


def demos(rec: Recorder, net, devices) -> None:
    import torch

    net.apply(init_weights)
    net.eval()
    x = torch.rand(size=(4, 1, 28, 28))
    copies = replicas(net, devices[:2])
    shards = d2l.scatter(x, devices[:2])
    with torch.no_grad():
        outputs = [replica(shard) for replica, shard in zip(copies, shards)]
    print(*outputs)
    rec.output("net_outputs", " ".join(map(str, outputs)), [y.cpu().tolist() for y in outputs])

    rec.output("weight_not_initialized_on", f"initialised on {copies[0][0].weight.device}",
               by_design=NO_DEFERRED_INIT)
    print(NOT_INITIALIZED)
    first, second = copies[0][0].weight.data[0], copies[1][0].weight.data[0]
    print(first, second)
    rec.output("weight_same_on_devices", str(torch.equal(first.cpu(), second.cpu())))
    net.train()


def warm_up(parallel, train_iter, batch_size: int, device, loss) -> list[list[int]]:
    """Forward and backward once per input shape before the timed epochs (d2l.warm_up):
    no optimiser step, the gradients dropped, and BatchNorm's running statistics (and its
    batch counters), which a forward pass in training mode moves, put back: training
    starts where it would have."""
    import torch

    saved = {name: b.detach().clone() for name, b in parallel.module.named_buffers()}

    def untimed_batch(X, y):
        X, y = X.to(device), y.to(device)
        loss(parallel(X), y).backward()

    parallel.train()
    warmed = d2l.warm_up(train_iter, batch_size, untimed_batch)
    with torch.no_grad():
        for name, b in parallel.module.named_buffers():
            b.copy_(saved[name])
    parallel.zero_grad(set_to_none=True)
    return warmed


def train(args: argparse.Namespace, rec: Recorder, net, devices, batch_size: int,
          lr: float) -> None:
    import torch
    from torch import nn

    train_iter, test_iter = d2l.load_data(args, batch_size)
    case = training.case_name("resnet18", len(devices))
    print("running on:", devices, flush=True)
    net.apply(init_weights)
    net = net.to(devices[0])
    # Set the model on multiple devices (device_ids: GPU indices; ignored without CUDA)
    parallel = nn.DataParallel(net, device_ids=devices if d2l.is_cuda(devices[0]) else None)
    trainer = torch.optim.SGD(parallel.parameters(), lr)
    loss = nn.CrossEntropyLoss()
    seconds, test_acc = [], float("nan")
    warmed = warm_up(parallel, train_iter, batch_size, devices[0], loss)
    rec.notes.setdefault("warmed_input_shapes", {})[case] = warmed
    for epoch in range(1, args.epochs + 1):
        parallel.train()
        loss_sum, examples = torch.zeros((), device=devices[0]), 0
        with (energy.Meter(energy.gpu_ordinals(devices)) as meter,
              timing.Stopwatch(d2l.sync) as clock):
            for X, y in training.progress(train_iter, epoch, args.epochs):
                trainer.zero_grad()
                X, y = X.to(devices[0]), y.to(devices[0])
                l = loss(parallel(X), y)  # noqa: E741 (the book's name)
                l.backward()
                trainer.step()
                loss_sum += l.detach() * X.shape[0]
                examples += X.shape[0]
        train_loss = loss_sum.item() / examples
        test_acc = d2l.evaluate_accuracy(parallel, test_iter)
        training.record_epoch(rec, case, epoch, clock.seconds, train_loss, test_acc, devices,
                              meter, examples)
        seconds.append(clock.seconds)
    rec.notes.setdefault("train_examples_per_epoch", {})[case] = examples
    rec.notes.setdefault("parallelism", {})[case] = (
        f"nn.DataParallel over {d2l.names(devices)}" if d2l.is_cuda(devices[0]) else
        "nn.DataParallel without CUDA: a pass-through, the whole batch on the CPU")
    print(f"test acc: {test_acc:.2f}, {Stats(seconds).mean:.1f} sec/epoch on {devices}",
          flush=True)


def body(args: argparse.Namespace, rec: Recorder) -> None:
    runs, devices = d2l.prepare(args, rec, "resnet18")
    net = resnet18(10)
    training.demos_on_two(rec, devices, lambda found: demos(rec, net, found))
    for run in runs:
        train(args, rec, net, devices[:run.devices], run.batch_size, run.lr)


def build_parser() -> argparse.ArgumentParser:
    return training.parser(__doc__.splitlines()[0], "multi_gpu_gluon")


if __name__ == "__main__":
    sys.exit(harness.main("multi_gpu_gluon", "pytorch", build_parser(), body))
