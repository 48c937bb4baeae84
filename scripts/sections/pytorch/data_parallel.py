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
import math
import socket
import sys
import time
from datetime import timedelta

from d2lperf import data, harness, sections, timing
from d2lperf import devices as device_options
from d2lperf import torch as d2l
from d2lperf.arguments import positive_float, positive_int
from d2lperf.errors import NEEDS_GPUS, Skipped
from d2lperf.results import Recorder

MODELS = ("lenet", "resnet18")
# A collective that waits longer than this has lost a process: far beyond the slowest
# step seen (a ResNet-18 step of 256 images on one CPU thread takes about 7 s).
COLLECTIVE_TIMEOUT_S = 600
POLL_S = 1.0  # how often the coordinator looks whether a process of a group has died


def case_name(model: str, n: int) -> str:
    return f"{model}_{n}_device" + ("s" if n > 1 else "")


def build_net(model: str):
    """The very nets the two multi-device sections train: the from-scratch LeNet's
    parameters and forward pass as a module (DistributedDataParallel wraps modules), and
    the concise section's ResNet-18, initialised as each section does."""
    from torch import nn

    if model == "lenet":
        scratch = sections.load_script("pytorch", "multi_gpu_scratch")

        class LeNet(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.params = nn.ParameterList(scratch.init_params())

            def forward(self, X):
                return scratch.lenet(X, list(self.params))

        return LeNet()
    concise = sections.load_script("pytorch", "multi_gpu_gluon")
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


def rank_main(rank: int, world: int, address: str, on: str, model: str, options: dict,
              conn) -> None:
    """One process of a group: its process group, its replica, its share of the data;
    then trains ``steps`` steps each time the coordinator asks, and says when done."""
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler

    cuda = on == "gpu"
    if not cuda:  # a CPU device is one thread
        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    device = torch.device("cuda", rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo", init_method=address, rank=rank,
                            world_size=world, timeout=timedelta(seconds=COLLECTIVE_TIMEOUT_S))
    d2l.seed(options["seed"])  # the same initial replica everywhere (DDP also broadcasts)
    net = build_net(model).to(device)
    parallel = DistributedDataParallel(net, device_ids=[rank] if cuda else None)
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
    conn.send(("ready", None))
    while True:
        command, steps = conn.recv()
        if command == "stop":
            break
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
        conn.send(("done", total.item() / steps))
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Group:
    """N processes training one model data-parallel, started once, told to train a
    number of steps at a time (``run``), stopped at the end."""

    def __init__(self, n: int, on: str, model: str, options: dict) -> None:
        import torch.multiprocessing as mp

        context = mp.get_context("spawn")
        address = f"tcp://127.0.0.1:{free_port()}"
        self.n, self.losses = n, []
        self.conns, self.processes = [], []
        started = time.perf_counter()
        for rank in range(n):
            mine, theirs = context.Pipe()
            process = context.Process(target=rank_main, daemon=True, name=f"rank{rank}",
                                      args=(rank, n, address, on, model, options, theirs))
            process.start()
            theirs.close()  # a process that dies closes its end: recv then fails
            self.conns.append(mine)
            self.processes.append(process)
        self.replies()
        self.startup = time.perf_counter() - started

    def died(self, rank: int) -> RuntimeError:
        process = self.processes[rank]
        process.join(timeout=POLL_S)
        return RuntimeError(f"process {rank} of {self.n} died (exit code "
                            f"{process.exitcode}); its log is above")

    def replies(self) -> list:
        """Every process's reply, or an error naming the process that died."""
        found = []
        for rank, (conn, process) in enumerate(zip(self.conns, self.processes)):
            while not conn.poll(POLL_S):
                if not process.is_alive():
                    raise self.died(rank)
            try:
                found.append(conn.recv()[1])
            except EOFError:
                raise self.died(rank) from None
        return found

    def run(self, steps: int) -> None:
        for rank, conn in enumerate(self.conns):
            try:
                conn.send(("run", steps))
            except OSError:  # its end is closed: the process is gone
                raise self.died(rank) from None
        self.losses.append(self.replies()[0])

    def stop(self) -> None:
        for conn, process in zip(self.conns, self.processes):
            try:
                conn.send(("stop", 0))
            except OSError:  # it has died already
                pass
        for process in self.processes:
            process.join(timeout=60)
            if process.is_alive():
                process.kill()


def device_limit(on: str, threads: int) -> tuple[int, str]:
    """How many devices this machine gives, and what a device is here."""
    if on == "gpu":
        return d2l.gpu_count(), "GPUs"
    return threads, "cores (one process of one thread each)"


def body(args: argparse.Namespace, rec: Recorder) -> None:
    if not len(args.models) == len(args.images) == len(args.learning_rates):
        harness.usage_error("--models, --images and --learning-rates need one value per "
                            f"model; got {len(args.models)}, {len(args.images)} and "
                            f"{len(args.learning_rates)} values")
    counts = sorted(set(args.device_counts))
    for model, images in zip(args.models, args.images):
        for n in counts:
            if images % (args.batch_size * n):
                harness.usage_error(
                    f"--images {images} for {model} does not split into whole steps of "
                    f"{args.batch_size} images on each of {n} devices: take a multiple of "
                    f"{args.batch_size * math.lcm(*counts)}")
    shard = (args.train_limit or 0) // counts[-1]
    if args.train_limit and shard < args.batch_size:
        harness.usage_error(
            f"--train-limit {args.train_limit} leaves each of {counts[-1]} devices "
            f"{shard} images, less than one batch of {args.batch_size}")
    limit, kind = device_limit(args.on, args.threads)
    fitting = [n for n in counts if n <= limit]
    for n in counts:
        if n > limit:
            for model in args.models:
                rec.notes.setdefault("runs_not_run", {})[case_name(model, n)] = {
                    "devices": n, "reason": f"needs {n} devices, this machine has {limit} {kind}",
                    **({"needs": NEEDS_GPUS} if args.on == "gpu" else {})}
            print(f"{n} devices: not run, the machine has {limit} {kind}", flush=True)
    if not fitting:
        plural = "s" if counts[0] > 1 else ""
        raise Skipped(f"needs {counts[0]} device{plural}, found {limit} {kind}",
                              needs=NEEDS_GPUS if args.on == "gpu" else None)
    try:
        folder = data.find_fashion_mnist(args.data_dir)
    except data.DataMissing as missing:
        print(missing, file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    links = ("NCCL between GPUs" if args.on == "gpu"
             else "gloo between CPU processes of one thread")
    rec.notes["design"] = (f"DistributedDataParallel, one process per device ({links}); "
                           "a DistributedSampler shard of Fashion-MNIST each")
    for model, images, lr in zip(args.models, args.images, args.learning_rates):
        options = {"seed": args.seed, "lr": lr, "batch_size": args.batch_size,
                   "folder": folder, "train_limit": args.train_limit}
        groups = {}
        try:
            for n in fitting:
                groups[case_name(model, n)] = group = Group(n, args.on, model, options)
                where = d2l.names(device_names(args.on, n))
                rec.samples(case_name(model, n), "startup", "s", [group.startup], devices=where)
                print(f"{case_name(model, n)}: started in {group.startup:.1f} s", flush=True)
            cases = {case: (lambda g=g, s=images // (args.batch_size * g.n): g.run(s))
                     for case, g in groups.items()}
            samples = timing.compare(cases, lambda: None, warmup=args.warmup,
                                     rounds=args.repeats, seed=args.seed, process=args.process)
        finally:
            for group in groups.values():
                group.stop()
        for n in fitting:
            case = case_name(model, n)
            rec.timings([s for s in samples if s.case == case],
                        devices=d2l.names(device_names(args.on, n)))
            rec.notes.setdefault("mean_training_loss", {})[case] = groups[case].losses
        rec.notes.setdefault("images_per_sample", {})[model] = images
        rec.notes.setdefault("learning_rate_per_device_count", {})[model] = {
            str(n): lr * n for n in fitting}
        one = [s.value for s in samples if s.case == case_name(model, fitting[0])]
        for n in fitting:
            mine = [s.value for s in samples if s.case == case_name(model, n)]
            print(f"{case_name(model, n)}: {images / min(mine):.0f} images/s at best "
                  f"({images / min(one) * n / fitting[0]:.0f} if ideal)", flush=True)


def device_names(on: str, n: int) -> list[str]:
    return [f"cuda:{i}" for i in range(n)] if on == "gpu" else ["cpu"] * n


def build_parser() -> argparse.ArgumentParser:
    p = harness.parser(__doc__.splitlines()[0], section="data_parallel")
    train = p.add_argument_group("training")
    train.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS),
                       help="the nets to train (document: both)")
    train.add_argument("--images", type=positive_int, nargs="+", default=[8192, 2048],
                       help="images each timed sample trains, per model")
    train.add_argument("--learning-rates", type=positive_float, nargs="+", default=[0.2, 0.1],
                       help="learning rate of one device, per model, multiplied by the "
                            "device count (documents: LeNet 0.2, ResNet-18 0.1)")
    train.add_argument("--device-counts", type=positive_int, nargs="+", default=[1, 2, 4, 8],
                       help="device counts; those above the machine's are not run")
    train.add_argument("--batch-size", type=positive_int, default=256,
                       help="images per device and step (document: 256)")
    train.add_argument("--data-dir", default=None,
                       help="folder with Fashion-MNIST's four .gz files")
    train.add_argument("--train-limit", type=positive_int, default=None,
                       help="train on the first N training images only (default: all 60000)")
    device_options.add_argument(p, default="cpu")
    return p


if __name__ == "__main__":
    sys.exit(harness.main("data_parallel", "pytorch", build_parser(), body))
