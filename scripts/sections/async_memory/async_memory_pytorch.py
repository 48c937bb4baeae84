"""The effect of asynchronous computation on memory, in PyTorch (seeds/000: 异步计算对内存的影响).

The PyTorch twin of async_memory_mxnet.py, with the same case names: the
document's training loop, an MLP 512-2048-512-1 with the L2 loss (Gluon's L2Loss:
half the squared error) and SGD at lr 0.005 on random batches, in its two modes:
``sync`` reads ``l.mean().item()`` every batch (the document's ``asscalar``), so the
Python front end waits for each batch; ``async`` reads nothing inside the loop and
synchronises once at the end. For each it records the elapsed time the document prints
every ``--report-every`` batches (read without synchronising, as the document does), the
time until the work is finished, how much the process's resident memory grew (at the
end, and at its peak) and, on a GPU, ``torch.cuda.max_memory_allocated`` (the peak of
PyTorch's caching allocator during the loop), where PyTorch's queued work holds its
memory: on a GPU the host process only launches kernels.

On the CPU eager PyTorch runs every op to its end: nothing is queued in either mode, so
the two modes should take the same time and memory. The section measures it anyway.

The document's figures are measured as the seed ran: no warm-up, so the first batch
also allocates the parameters, and the RSS read when the work is finished. With
``--warmup N`` the same runs again after N untimed forward passes (``*_warmed_*``),
an extra measurement.

Each (mode, repeat) trains in a fresh child process (this script re-run with
``--child``) so that no mode inherits the other's cached allocations; the child pins
the same thread count and hands its figures back in a JSON file.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import devices as device_options
from d2lperf import memory, timing
from d2lperf import torch as d2l
from d2lperf.results import Recorder

SEED = 0  # both modes train the same initial network on the same batches


def get_mem() -> float:
    """This process's RSS in MB: the document's ``ps u`` reading, without a subprocess."""
    return memory.rss_bytes() / memory.MB


def l2_loss(y_hat, y):
    """Gluon's L2Loss: half the squared error, one value per example."""
    return 0.5 * (y_hat.reshape(y.shape) - y) ** 2


def train(mode: str, args: argparse.Namespace) -> memory.MemoryRun:
    """One run of the document's loop in ``mode``; runs in a child process."""
    import torch
    from torch import nn

    device = d2l.devices(args.on, 1)[0]
    cuda = d2l.is_cuda(device)
    d2l.seed(SEED)
    batch_seconds: dict[int, float] = {}

    def data_iter(report=None):
        for i in range(args.batches):
            X = torch.randn(size=(args.batch_size, 512), device=device)
            y = torch.ones((args.batch_size,), device=device)
            yield X, y
            if report is not None and (i + 1) % args.report_every == 0:
                report(i + 1)

    net = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(),
                        nn.Linear(2048, 512), nn.ReLU(),
                        nn.Linear(512, 1)).to(device)
    # Gluon's trainer.step(batch_size) divides the summed gradient by the batch size:
    # the gradient of the mean loss, which is what l.mean().backward() computes.
    trainer = torch.optim.SGD(net.parameters(), lr=0.005)

    # The document's commented-out warm-up: forward passes before memory is measured
    # (PyTorch's allocator and kernels' first use).
    for _, (X, y) in zip(range(args.warmup), data_iter()):
        l2_loss(net(X), y).mean().item()

    def report(batch: int) -> None:
        # No synchronisation here, as in the document.
        batch_seconds[batch] = loop.lap()
        print(f"batch {batch}, time {batch_seconds[batch]:f} sec", flush=True)

    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        allocated_before = torch.cuda.memory_allocated(device)
    l_sum, mem = 0.0, get_mem()
    with memory.PeakRSS() as rss:
        with timing.Stopwatch(d2l.sync) as loop:  # its exit is the document's nd.waitall()
            for X, y in data_iter(report):
                l = l2_loss(net(X), y)  # noqa: E741 (the document's name)
                if mode == "sync":
                    l_sum += l.mean().item()
                trainer.zero_grad()
                l.mean().backward()
                trainer.step()
    figures = memory.run_figures(batch_seconds, loop.seconds, rss, mem)
    if cuda:
        figures["gpu_max_memory_allocated"] = (
            torch.cuda.max_memory_allocated(device) - allocated_before) / memory.MB
    return figures


def body(args: argparse.Namespace, rec: Recorder) -> None:
    memory.check_workload(args)
    where = d2l.names(d2l.devices(args.on, 1))  # Skipped here, before any child runs
    runs = memory.run_modes(args, __file__, ["--on", args.on])
    figures = list(memory.MEMORY_FIGURES)
    if "gpu_max_memory_allocated" in runs[memory.MODES[0]][0]:
        figures.append("gpu_max_memory_allocated")
    memory.record_runs(rec, args, runs, figures, where)
    rec.notes.update(
        batch_times=("elapsed seconds since the loop started, read without synchronising, as the "
                     "document prints them; {mode}_total ends when the final sync returns"),
        memory=("RSS after the final sync (memory_increase), and its peak during the loop "
                "(peak_memory_increase), minus RSS before the loop; MB = 1e6 bytes"),
    )
    if "gpu_max_memory_allocated" in figures:
        rec.notes["gpu_max_memory_allocated"] = (
            "torch.cuda.max_memory_allocated during the loop minus what was allocated "
            "before it: the peak of tensors PyTorch held on the GPU")
    import torch  # noqa: F401  (only so that the run record carries torch's build)


def add_workload_options(p: argparse.ArgumentParser) -> None:
    memory.add_workload_options(p)
    device_options.add_argument(p, default="cpu")


if __name__ == "__main__":
    sys.exit(memory.main("pytorch", __doc__.splitlines()[0], body, train, add_workload_options))
