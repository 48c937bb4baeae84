"""Multi-GPU computation from scratch (seeds/000: 多GPU并行计算).

Reproduces, in the document's order, on the first two devices:
1. ``get_params``: b1 copied to the first device, and its gradient (zeros);
2. ``allreduce``: [[1. 1.]] and [[2. 2.]] before, [[3. 3.]] on both devices after;
3. ``split_and_load``: nd.arange(24).reshape((6, 4)) split over two devices;
then ``train``: LeNet on Fashion-MNIST, data parallel, once per --devices value
(the document: 1 device, then 2, batch size 256, lr 0.2, 4 epochs).

As in the document, ``nd.waitall()`` ends every batch; each epoch's training time is
one sample (the clock stops after a final sync), test accuracy is measured after it
on the first device, and the mean training loss is read only after the clock stops.
Without GPUs the devices are cpu(0), cpu(1), exactly as the document ran this code.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import energy, harness, timing, training
from d2lperf import mxnet as d2l
from d2lperf.results import Recorder


def init_params():
    from mxnet import nd

    scale = 0.01
    W1 = nd.random.normal(scale=scale, shape=(20, 1, 3, 3))
    b1 = nd.zeros(shape=20)
    W2 = nd.random.normal(scale=scale, shape=(50, 20, 5, 5))
    b2 = nd.zeros(shape=50)
    W3 = nd.random.normal(scale=scale, shape=(800, 128))
    b3 = nd.zeros(shape=128)
    W4 = nd.random.normal(scale=scale, shape=(128, 10))
    b4 = nd.zeros(shape=10)
    return [W1, b1, W2, b2, W3, b3, W4, b4]


def lenet(X, params):
    from mxnet import nd

    h1_conv = nd.Convolution(data=X, weight=params[0], bias=params[1], kernel=(3, 3),
                             num_filter=20)
    h1_activation = nd.relu(h1_conv)
    h1 = nd.Pooling(data=h1_activation, pool_type="avg", kernel=(2, 2), stride=(2, 2))
    h2_conv = nd.Convolution(data=h1, weight=params[2], bias=params[3], kernel=(5, 5),
                             num_filter=50)
    h2_activation = nd.relu(h2_conv)
    h2 = nd.Pooling(data=h2_activation, pool_type="avg", kernel=(2, 2), stride=(2, 2))
    h2 = nd.flatten(h2)
    h3_linear = nd.dot(h2, params[4]) + params[5]
    h3 = nd.relu(h3_linear)
    y_hat = nd.dot(h3, params[6]) + params[7]
    return y_hat


def get_params(params, ctx):
    new_params = [p.copyto(ctx) for p in params]
    for p in new_params:
        p.attach_grad()
    return new_params


def allreduce(data):
    """Sum on the first device, then broadcast the sum back to every device."""
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].context)
    for i in range(1, len(data)):
        data[0].copyto(data[i])


def split_and_load(data, ctx):
    n, k = data.shape[0], len(ctx)
    m = n // k
    assert m * k == n, "# examples is not divided by # devices."
    return [data[i * m: (i + 1) * m].as_in_context(ctx[i]) for i in range(k)]


def sgd(params, lr, batch_size):
    for param in params:
        param[:] = param - lr * param.grad / batch_size


def train_batch(X, y, gpu_params, ctx, lr, loss):
    """One minibatch over all devices; returns each device's losses."""
    from mxnet import autograd

    gpu_Xs, gpu_ys = split_and_load(X, ctx), split_and_load(y, ctx)
    with autograd.record():
        ls = [loss(lenet(gpu_X, gpu_W), gpu_y)
              for gpu_X, gpu_y, gpu_W in zip(gpu_Xs, gpu_ys, gpu_params)]
    for l in ls:  # noqa: E741 (the document's name)
        l.backward()
    for i in range(len(gpu_params[0])):
        allreduce([gpu_params[c][i].grad for c in range(len(ctx))])
    for param in gpu_params:
        sgd(param, lr, X.shape[0])
    return ls


def show(rec: Recorder, name: str, label: str, value) -> None:
    """Print as the document does, and record the printed text with its numbers."""
    print(label, value)
    arrays = value if isinstance(value, list) else [value]
    numbers = [a.asnumpy().tolist() for a in arrays]
    rec.output(name, str(value), numbers if isinstance(value, list) else numbers[0])


def demos(rec: Recorder, params, ctx) -> None:
    from mxnet import nd

    new_params = get_params(params, ctx[0])
    show(rec, "b1_weight", "b1 weight:", new_params[1])
    show(rec, "b1_grad", "b1 grad:", new_params[1].grad)

    data = [nd.ones((1, 2), ctx=ctx[i]) * (i + 1) for i in range(2)]
    show(rec, "allreduce_before", "Before allreduce:", data)
    allreduce(data)
    show(rec, "allreduce_after", "After allreduce:", data)

    batch = nd.arange(24).reshape((6, 4))
    splitted = split_and_load(batch, ctx[:2])
    show(rec, "split_input", "input:", batch)
    print("load into", ctx[:2])
    show(rec, "split_output", "output:", splitted)


def train(args: argparse.Namespace, rec: Recorder, params, ctx, batch_size: int,
          lr: float) -> None:
    from mxnet import autograd, nd
    from mxnet.gluon import loss as gloss

    train_iter, test_iter = d2l.load_data(args, batch_size)
    loss = gloss.SoftmaxCrossEntropyLoss()
    case = training.case_name("lenet", len(ctx))
    print("running on:", ctx, flush=True)
    gpu_params = [get_params(params, c) for c in ctx]

    def untimed_batch(X, y):  # forward and backward only: the gradients are overwritten
        gpu_Xs, gpu_ys = split_and_load(X, ctx), split_and_load(y, ctx)
        with autograd.record():
            ls = [loss(lenet(gpu_X, gpu_W), gpu_y)
                  for gpu_X, gpu_y, gpu_W in zip(gpu_Xs, gpu_ys, gpu_params)]
        for l in ls:  # noqa: E741 (the document's name)
            l.backward()

    warmed = d2l.warm_up(train_iter, batch_size, untimed_batch)
    rec.notes.setdefault("warmed_input_shapes", {})[case] = warmed
    for epoch in range(1, args.epochs + 1):
        # One running sum per device, so that adding to it moves nothing between devices.
        loss_sums, examples = [nd.zeros(1, ctx=c) for c in ctx], 0
        with (energy.Meter(energy.gpu_ordinals(ctx)) as meter,
              timing.Stopwatch(d2l.sync) as clock):
            for X, y in training.progress(train_iter, epoch, args.epochs):
                ls = train_batch(X, y, gpu_params, ctx, lr, loss)
                for loss_sum, device_loss in zip(loss_sums, ls):
                    loss_sum += device_loss.sum()
                examples += X.shape[0]
                nd.waitall()
        train_loss = sum(s.asscalar() for s in loss_sums) / examples

        def net(x):  # evaluated on the first device, as the document does
            return lenet(x, gpu_params[0])

        test_acc = d2l.evaluate_accuracy(net, test_iter, ctx[0])
        training.record_epoch(rec, case, epoch, clock.seconds, train_loss, test_acc, ctx,
                              meter, examples)
    rec.notes.setdefault("train_examples_per_epoch", {})[case] = examples


def body(args: argparse.Namespace, rec: Recorder) -> None:
    runs, ctx = d2l.prepare(args, rec, "lenet")
    if len(ctx) > 1:
        d2l.check_two_cpu_queues(args.on, args.threads)  # lenet's nd.dot would hang
    params = init_params()
    training.demos_on_two(rec, ctx, lambda found: demos(rec, params, found))
    for run in runs:
        train(args, rec, params, ctx[:run.devices], run.batch_size, run.lr)


def build_parser() -> argparse.ArgumentParser:
    return training.parser(__doc__.splitlines()[0], "multi_gpu_scratch")


if __name__ == "__main__":
    sys.exit(harness.main("multi_gpu_scratch", "mxnet", build_parser(), body))
