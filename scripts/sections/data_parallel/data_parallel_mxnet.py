"""Data-parallel training at every device count, in MXNet (dist_sync kvstore, a process each).

The MXNet twin of data_parallel_pytorch.py: the same LeNet and ResNet-18 (the two
MXNet multi-device sections' own), trained on 1, 2, 4, ... devices the way MXNet 1.x spans
processes: a parameter server. Each device is a worker process; a scheduler and a server
(ps-lite, started by their ``DMLC_*`` variables, as MXNet's ``tools/launch.py`` would,
which calls ``Thread.isAlive``, gone in Python 3.11) run beside rank 0, and
``kvstore('dist_sync')`` sums every worker's gradients on the server each step. The from-
scratch LeNet pushes each gradient and pulls the sum, then takes the book's ``sgd``; the
concise ResNet-18's ``gluon.Trainer`` takes the kvstore and lets the server apply SGD
(``update_on_kvstore``). On GPUs the kvstore is ``dist_sync_device``, which a user of
MXNet's parameter server picks there: each worker's gradients are summed on its GPU before
they go to the server (``KVSTORE``; the run record says which ran). The book's own
``kvstore('device')``, one process over several devices, is what the two multi-device
sections measure.

A device is a GPU, or on a CPU a process of one thread on one core (the server and the
scheduler share rank 0's). Each device takes ``--batch-size`` images a step, the learning
rate grows with the devices and the gradient is the mean over the global batch, as in the
PyTorch twin; each process's share of the data is every N-th image of an order drawn anew
each epoch (``groups.shard``). The timing (a group per device count started once, its
startup recorded apart, then fixed images per sample, side by side) is the same code
(``d2lperf.groups``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading

from d2lperf import children, data, groups, harness, provenance, sections
from d2lperf import mxnet as d2l
from d2lperf.results import Recorder

# The kvstore of a group, by device kind: a process per device, summed by one server.
KVSTORE = {"cpu": "dist_sync", "gpu": "dist_sync_device"}


def parameter_server(me: groups.Member) -> dict[str, str]:
    """The ps-lite variables of the group whose rendezvous is ``me.address``, every role
    listening on the group's address alone (loopback on one node: ``groups.binding``);
    rank 0 starts the group's scheduler (listening there, beside rank 0's hold on the port:
    ZeroMQ sets SO_REUSEADDR, ``groups.hold_port``) and its one server, each ending
    with rank 0, and watches them: where one dies (its port taken, a fault, a kill), rank
    0 says which and ends at once (``groups.HELPER_DIED``), and its coordinator ends the
    group, instead of every worker waiting for it in vain."""
    import socket

    host, port = me.address.rsplit(":", 1)
    found = {"DMLC_PS_ROOT_URI": socket.gethostbyname(host), "DMLC_PS_ROOT_PORT": port,
             "DMLC_NUM_SERVER": "1", "DMLC_NUM_WORKER": str(me.world),
             **groups.binding(me)[1]}
    if me.rank == 0:
        for role in ("scheduler", "server"):  # importing mxnet so runs the role's loop
            helper = subprocess.Popen([sys.executable, "-c", "import mxnet"],
                                      env={**os.environ, **found, "DMLC_ROLE": role},
                                      preexec_fn=children.die_with_parent)
            threading.Thread(target=watch, args=(helper, role, me), daemon=True).start()
    return found


def watch(helper: subprocess.Popen, role: str, me: groups.Member) -> None:
    code = helper.wait()
    if code == 0:  # its group finished: the workers' kvstores closed
        return
    print(f"process {me.rank} of {me.world}: the group's ps-lite {role} (pid {helper.pid}) "
          f"{groups.ended(code)}; ending this process", file=sys.stderr, flush=True)
    os._exit(groups.HELPER_DIED)


def rank_main(me: groups.Member, on: str, model: str, options: dict, conn) -> None:
    """One worker of a group: its kvstore, its replica, its share of the data; then it
    trains the steps the coordinator asks for."""
    if on == "cpu":  # one thread on one core (of its node), before mxnet loads
        groups.pin(me.local)
    provenance.set_threads(1)
    os.environ.update(parameter_server(me), DMLC_ROLE="worker")
    import mxnet as mx
    from mxnet import autograd, gluon, init, nd

    kv = mx.kv.create(KVSTORE[on])
    ctx = mx.gpu(groups.gpu_index(me)) if on == "gpu" else mx.cpu()
    d2l.seed(options["seed"])  # the same initial replica everywhere (the server keeps rank 0's)
    lr, batch = options["lr"] * me.world, options["batch_size"]
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    if model == "lenet":
        scratch = sections.model_script("mxnet", "lenet")
        params = scratch.get_params(scratch.init_params(), ctx)
        for key, p in enumerate(params):
            kv.init(key, p)
            kv.pull(key, out=p)

        def update(X, y):
            with autograd.record():
                l = loss(scratch.lenet(X, params), y)  # noqa: E741 (the book's name)
            l.backward()
            for key, p in enumerate(params):  # the gradients' sum over every worker
                kv.push(key, p.grad)
                kv.pull(key, out=p.grad)
            scratch.sgd(params, lr, batch * me.world)
            return l
    else:
        net = sections.model_script("mxnet", "resnet18").resnet18(10)
        net.initialize(init=init.Normal(sigma=0.01), ctx=ctx)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr},
                                kvstore=kv)

        def update(X, y):
            with autograd.record():
                l = loss(net(X), y)  # noqa: E741 (the book's name)
            l.backward()
            trainer.step(batch * me.world)  # the mean over the global batch
            return l

    images, labels = data.arrays(options["folder"], True, options["train_limit"])
    batches = groups.shard(images, labels, me, batch, options["seed"])

    def train(steps: int) -> float:
        total = nd.zeros((1,), ctx=ctx)  # MXNet 1.x has no 0-d arrays
        for _ in range(steps):
            X, y = next(batches)
            total += update(nd.array(X, ctx=ctx), nd.array(y, ctx=ctx)).mean()
        nd.waitall()
        return total.asscalar() / steps

    groups.serve(conn, train)


def body(args: argparse.Namespace, rec: Recorder) -> None:
    rec.notes["kvstore"] = KVSTORE[args.on]
    groups.measure(
        args, rec, rank_main, gpus=d2l.gpu_count(),  # mxnet loaded here: its build recorded
        names=lambda n: ",".join([f"gpu({i})" for i in range(n)] if args.on == "gpu"
                                 else ["cpu(0)"] * n),  # a process's own cpu(0) each
        design=f"kvstore {KVSTORE[args.on]}, one worker process per device, the gradients "
               "summed by one parameter server (ps-lite over TCP); every N-th image each")


def build_parser() -> argparse.ArgumentParser:
    return groups.parser(__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(harness.main("data_parallel", "mxnet", build_parser(), body))
