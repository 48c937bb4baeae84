"""Data-parallel training at every device count, in PyTorch (DistributedDataParallel).

The chapter's experiment (seeds/000: 多GPU并行计算, 多GPU简洁实现): the same LeNet and
ResNet-18 trained on 1, 2, 4, ... devices, the way PyTorch does it today. PyTorch's own
``nn.DataParallel`` docstring recommends DistributedDataParallel instead, "even if there
is only a single node": one process per device, each with a replica of the net, its
share of the data (``DistributedSampler``) and its own optimiser, the gradients summed
by an allreduce that overlaps the backward pass (NCCL between GPUs, gloo between CPU
processes). The two multi-device sections keep the book's designs; this one measures
what today's API gives on the same devices.

A device is a GPU, or on a CPU a process of one thread: the documents' ``cpu(0)``,
``cpu(1)`` made real, N processes on N cores against one process on one (so at most
``--threads`` devices, the cores this timing job has). Each device takes a batch of
``--batch-size`` images (256, the documents' one-device batch), and the learning rate
grows with the devices, as the documents' ResNet-18 run does (0.1 on one GPU with 256
images, 0.2 on two with 512).

Startup and steady training are timed apart. A group of N processes is started once per
device count (its startup, from the first process started to the last one ready with
its process group, net and data, is recorded as ``startup``); then every timed sample
trains a fixed number of images, ``--images``, in ``images / (batch-size × N)`` steps,
so that the times of different device counts compare throughput directly: a sample of
N devices that takes half the time of one device's trains twice as fast. The samples
are taken side by side (``timing.compare``: warm-up, then rounds in balanced orders),
the group's processes idle in between; the clock stops when every process of the group
has finished its steps (on GPUs, after synchronising its device). Counts above what the
machine has are not run, and the run record says why.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import timedelta

from d2lperf import groups, harness, sections
from d2lperf import torch as d2l
from d2lperf.results import Recorder


def build_net(model: str):
    """The very nets the two multi-device sections train: the from-scratch LeNet's
    parameters and forward pass as a module (DistributedDataParallel wraps modules), and
    the concise section's ResNet-18, initialised as each section does."""
    from torch import nn

    if model == "lenet":
        scratch = sections.model_script("pytorch", "lenet")

        class LeNet(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.params = nn.ParameterList(scratch.init_params())

            def forward(self, X):
                return scratch.lenet(X, list(self.params))

        return LeNet()
    concise = sections.model_script("pytorch", "resnet18")
    net = concise.resnet18(10)
    net.apply(concise.init_weights)
    return net


def endless(loader, sampler):
    """The loader's batches, epoch after epoch, each epoch shuffled anew."""
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        yield from loader
        epoch += 1


def rank_main(me: groups.Member, on: str, model: str, options: dict, conn) -> None:
    """One process of a group: its process group, its replica, its share of the data;
    then it trains the steps the coordinator asks for (``groups.serve``)."""
    cuda = on == "gpu"
    rank, world = me.rank, me.world
    if not cuda:  # a CPU device is one thread on one core (of its node)
        groups.pin(me.local)
    _, collectives = groups.binding(me)  # gloo and NCCL on loopback (one node)
    os.environ.update(collectives)
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler

    if not cuda:
        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    device = torch.device("cuda", groups.gpu_index(me)) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
        torch.cuda.set_per_process_memory_fraction(options["gpu_memory_share"], device)
    timeout = timedelta(seconds=groups.COLLECTIVE_TIMEOUT_S)
    host, port = me.address.rsplit(":", 1)
    # The rendezvous: rank 0's TCPStore on the socket that has held its port on the
    # group's address alone (by itself, TCPStore listens on every interface), the others
    # its clients.
    if me.held:
        me.held.listen()
    store = dist.TCPStore(host, int(port), world, rank == 0, timeout,
                          master_listen_fd=me.held.fileno() if me.held else None)
    dist.init_process_group("nccl" if cuda else "gloo", store=store, rank=rank,
                            world_size=world, timeout=timeout)
    d2l.seed(options["seed"])  # the same initial replica everywhere (DDP also broadcasts)
    net = build_net(model).to(device)
    parallel = DistributedDataParallel(net, device_ids=[device.index] if cuda else None)
    trainer = torch.optim.SGD(parallel.parameters(), options["lr"] * world)
    loss = nn.CrossEntropyLoss()
    dataset = d2l.fashion_mnist(options["folder"], True, options["train_limit"])
    sampler = DistributedSampler(dataset, world, rank, shuffle=True, seed=options["seed"])
    loader = DataLoader(dataset, options["batch_size"], sampler=sampler, num_workers=0,
                        drop_last=True)
    if not len(loader):
        raise ValueError(f"process {rank}'s share of the data, {len(sampler)} images, holds "
                         f"no whole batch of {options['batch_size']}")
    batches = endless(loader, sampler)
    parallel.train()

    def train(steps: int) -> float:
        total = torch.zeros((), device=device)
        for _ in range(steps):
            X, y = next(batches)
            X, y = X.to(device), y.to(device)
            trainer.zero_grad()
            l = loss(parallel(X), y)  # noqa: E741 (the book's name)
            l.backward()
            trainer.step()
            total += l.detach()
        d2l.sync(device)
        return total.item() / steps

    groups.serve(conn, train)
    dist.destroy_process_group()


def body(args: argparse.Namespace, rec: Recorder) -> None:
    groups.measure(
        args, rec, rank_main, gpus=d2l.gpu_count(),  # torch loaded here: its build recorded
        names=lambda n: ",".join([f"cuda:{i}" for i in range(n)] if args.on == "gpu"
                                 else ["cpu"] * n),
        design="DistributedDataParallel, one process per device ({links}); a "
               "DistributedSampler shard of Fashion-MNIST each")


def build_parser() -> argparse.ArgumentParser:
    return groups.parser(__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(harness.main("data_parallel", "pytorch", build_parser(), body))
