"""Multi-GPU computation from scratch, in PyTorch (seeds/000: 多GPU并行计算).

The PyTorch twin of multi_gpu_scratch_mxnet.py, written as d2l's PyTorch edition
writes the section (chapter_computational-performance/multiple-gpus.md). In the
document's order, on the first two devices:
1. ``get_params``: b1 copied to the first device, and its gradient: ``None`` in PyTorch,
   which allocates ``.grad`` at the first backward pass (MXNet's ``attach_grad`` gives
   zeros at once);
2. ``allreduce``: [[1. 1.]] and [[2. 2.]] before, [[3. 3.]] on both devices after;
3. ``split_batch``: the document's ``arange(24).reshape((6, 4))`` split over two devices
   (the book's PyTorch edition splits a 4x5 matrix; the document's keeps the outputs
   comparable with MXNet's);
then ``train``: the functional LeNet on Fashion-MNIST, data parallel with the
hand-written allreduce, once per --devices value (the document: 1 device, then 2,
batch size 256, lr 0.2, 4 epochs).

Before the first timed epoch, one untimed forward and backward pass per input shape
(d2lperf.torch.warm_up, zeros, no update), as the MXNet twin does. As in the book, every
batch ends in a synchronisation (``torch.cuda.synchronize``:
d2lperf.torch.sync, a no-op on the CPU, where PyTorch runs each op to its end); each
epoch's training time is one sample, the clock stopping after a final sync; test
accuracy is measured after it on the first device; the mean training loss is read only
after the clock stops.

On GPUs (``--on gpu``) a run that asks for more GPUs than the machine has is not run
(the run record says why) and the others are: one H200 trains the 1-GPU run. Without
GPUs (``--on cpu``) both "devices" are the one CPU: the same code path, with
copies made where ``.to(device)`` would otherwise hand back the same tensor, and
``nn.parallel.scatter`` (CUDA only) replaced by its CPU equivalent, ``chunk``.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import energy, harness, timing, training
from d2lperf import torch as d2l
from d2lperf.results import Recorder


def init_params():
    import torch

    scale = 0.01
    W1 = torch.randn(size=(20, 1, 3, 3)) * scale
    b1 = torch.zeros(20)
    W2 = torch.randn(size=(50, 20, 5, 5)) * scale
    b2 = torch.zeros(50)
    W3 = torch.randn(size=(800, 128)) * scale
    b3 = torch.zeros(128)
    W4 = torch.randn(size=(128, 10)) * scale
    b4 = torch.zeros(10)
    return [W1, b1, W2, b2, W3, b3, W4, b4]


def lenet(X, params):
    import torch
    from torch.nn import functional as F

    h1_conv = F.conv2d(input=X, weight=params[0], bias=params[1])
    h1_activation = F.relu(h1_conv)
    h1 = F.avg_pool2d(input=h1_activation, kernel_size=(2, 2), stride=(2, 2))
    h2_conv = F.conv2d(input=h1, weight=params[2], bias=params[3])
    h2_activation = F.relu(h2_conv)
    h2 = F.avg_pool2d(input=h2_activation, kernel_size=(2, 2), stride=(2, 2))
    h2 = h2.reshape(h2.shape[0], -1)
    h3_linear = torch.mm(h2, params[4]) + params[5]
    h3 = F.relu(h3_linear)
    y_hat = torch.mm(h3, params[6]) + params[7]
    return y_hat


def get_params(params, device):
    # copy=True: on the CPU stand-in, .to(device) would hand back the very tensors, and the
    # two "devices" would share (and allreduce would double) one set of parameters.
    new_params = [p.to(device, copy=True) for p in params]
    for p in new_params:
        p.requires_grad_()
    return new_params


def allreduce(data):
    """Sum on the first device, then broadcast the sum back to every device."""
    for i in range(1, len(data)):
        data[0][:] += data[i].to(data[0].device)
    for i in range(1, len(data)):
        data[i][:] = data[0].to(data[i].device)


def split_batch(X, y, devices):
    """Split ``X`` and ``y`` into multiple devices."""
    assert X.shape[0] == y.shape[0]
    return d2l.scatter(X, devices), d2l.scatter(y, devices)


def sgd(params, lr, batch_size):
    """d2l's sgd: PyTorch adds gradients up, so they are zeroed after each step."""
    import torch

    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


def train_batch(X, y, device_params, devices, lr, loss):
    """One minibatch over all devices; returns each device's summed loss."""
    import torch

    X_shards, y_shards = split_batch(X, y, devices)
    # Loss is calculated separately on each device
    ls = [loss(lenet(X_shard, device_W), y_shard).sum()
          for X_shard, y_shard, device_W in zip(X_shards, y_shards, device_params)]
    for l in ls:  # noqa: E741 (the book's name); backpropagation on each device
        l.backward()
    # Sum all gradients from each device and broadcast them to all devices
    with torch.no_grad():
        for i in range(len(device_params[0])):
            allreduce([device_params[c][i].grad for c in range(len(devices))])
    for param in device_params:  # the parameters are updated on each device
        sgd(param, lr, X.shape[0])  # a full-size batch
    return ls


def untimed_batch(X, y, device_params, devices, loss) -> None:
    """The warm-up's step: forward and backward only, then the gradients dropped, as
    they were before (.grad is made at the first backward pass)."""
    X_shards, y_shards = split_batch(X, y, devices)
    for X_shard, y_shard, device_W in zip(X_shards, y_shards, device_params):
        loss(lenet(X_shard, device_W), y_shard).sum().backward()
    for device_W in device_params:
        for p in device_W:
            p.grad = None


def values(value):
    if value is None:
        return None
    if isinstance(value, list):
        return [v.detach().cpu().tolist() for v in value]
    return value.detach().cpu().tolist()


def show(rec: Recorder, name: str, label: str, value, by_design: str | None = None) -> None:
    """Print as the document does, and record the printed text with its numbers."""
    print(label, value)
    rec.output(name, str(value), values(value), by_design=by_design)


GRAD_BEFORE_BACKWARD = ("PyTorch allocates .grad at the first backward pass (None before it), "
                        "where MXNet's attach_grad gives zeros at once")


def demos(rec: Recorder, params, devices) -> None:
    import torch

    new_params = get_params(params, devices[0])
    show(rec, "b1_weight", "b1 weight:", new_params[1])
    grad = new_params[1].grad
    show(rec, "b1_grad", "b1 grad:", grad, GRAD_BEFORE_BACKWARD if grad is None else None)
    rec.notes["b1_grad"] = GRAD_BEFORE_BACKWARD

    data = [torch.ones((1, 2), device=devices[i]) * (i + 1) for i in range(2)]
    show(rec, "allreduce_before", "Before allreduce:", data)
    allreduce(data)
    show(rec, "allreduce_after", "After allreduce:", data)

    batch = torch.arange(24).reshape(6, 4)
    splitted = d2l.scatter(batch, devices[:2])
    show(rec, "split_input", "input:", batch)
    print("load into", devices[:2])
    show(rec, "split_output", "output:", splitted)


def train(args: argparse.Namespace, rec: Recorder, params, devices, batch_size: int,
          lr: float) -> None:
    import torch
    from torch import nn

    train_iter, test_iter = d2l.load_data(args, batch_size)
    loss = nn.CrossEntropyLoss(reduction="none")
    case = training.case_name("lenet", len(devices))
    print("running on:", devices, flush=True)
    device_params = [get_params(params, d) for d in devices]
    warmed = d2l.warm_up(train_iter, batch_size,
                         lambda X, y: untimed_batch(X, y, device_params, devices, loss))
    rec.notes.setdefault("warmed_input_shapes", {})[case] = warmed
    for epoch in range(1, args.epochs + 1):
        # One running sum per device, so that adding to it moves nothing between devices.
        loss_sums, examples = [torch.zeros((), device=d) for d in devices], 0
        with (energy.Meter(energy.gpu_ordinals(devices)) as meter,
              timing.Stopwatch(d2l.sync) as clock):
            for X, y in training.progress(train_iter, epoch, args.epochs):
                ls = train_batch(X, y, device_params, devices, lr, loss)
                for loss_sum, device_loss in zip(loss_sums, ls):
                    loss_sum += device_loss.detach()
                examples += X.shape[0]
                d2l.sync()  # the book's torch.cuda.synchronize() after every batch
        train_loss = sum(s.item() for s in loss_sums) / examples

        def net(x):  # evaluated on the first device, as the book does
            return lenet(x, device_params[0])

        test_acc = d2l.evaluate_accuracy(net, test_iter, devices[0])
        training.record_epoch(rec, case, epoch, clock.seconds, train_loss, test_acc, devices,
                              meter, examples)
    rec.notes.setdefault("train_examples_per_epoch", {})[case] = examples


def body(args: argparse.Namespace, rec: Recorder) -> None:
    runs, devices = d2l.prepare(args, rec, "lenet")
    if args.on == "cpu" and len(devices) > 1:
        rec.notes["stand_in"] = ("both devices are the one CPU: the multi-device code runs "
                                 "as a code path, the two shards one after the other")
    params = init_params()
    training.demos_on_two(rec, devices, lambda found: demos(rec, params, found))
    for run in runs:
        train(args, rec, params, devices[:run.devices], run.batch_size, run.lr)


def build_parser() -> argparse.ArgumentParser:
    return training.parser(__doc__.splitlines()[0], "multi_gpu_scratch")


if __name__ == "__main__":
    sys.exit(harness.main("multi_gpu_scratch", "pytorch", build_parser(), body))
