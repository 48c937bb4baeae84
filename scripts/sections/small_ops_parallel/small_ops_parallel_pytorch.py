"""Small operations in parallel, in PyTorch (seeds/000: 简单计算量小，并行计算).

The PyTorch twin of small_ops_parallel_mxnet.py, with the same case names:
drawing one uniform (size, size) matrix X (``generate_x``), then another Y
(``generate_y``), then X and Y back to back (``generate_x_and_y``), on one device. On a
GPU (``--on gpu``) also X and Y on two CUDA streams of their own
(``generate_x_and_y_streams``): PyTorch's counterpart of two engine queues, the one way
the two draws could overlap (both read the device's one generator, so each stream's
draw is launched in turn; whether the kernels overlap is what the timing shows).

On the CPU PyTorch runs each draw to its end before the next starts: together they
take the sum of the two, as the document found for MXNet (0.0628 s each, 0.1302 s
together).

The document timed its first draw cold; here the cases warm up first and are compared
round by round, every timing ending in d2lperf.torch.sync before the clock stops.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import devices as device_options
from d2lperf import harness, timing
from d2lperf import torch as d2l
from d2lperf.results import Recorder, report


def body(args: argparse.Namespace, rec: Recorder) -> None:
    import torch

    device = d2l.devices(args.on, 1)[0]
    shape = (args.size, args.size)
    rec.notes["device"] = str(device)
    rec.notes["matrix_size"] = list(shape)

    def generate_x():
        x = torch.rand(size=shape, device=device)
        return x

    def generate_y():
        y = torch.rand(size=shape, device=device)
        return y

    def generate_x_and_y():
        x = torch.rand(size=shape, device=device)
        y = torch.rand(size=shape, device=device)
        return x, y

    cases = {"generate_x": generate_x, "generate_y": generate_y,
             "generate_x_and_y": generate_x_and_y}
    if d2l.is_cuda(device):
        streams = [torch.cuda.Stream(device), torch.cuda.Stream(device)]

        def generate_x_and_y_streams():
            drawn = []
            for stream in streams:
                stream.wait_stream(torch.cuda.current_stream(device))
                with torch.cuda.stream(stream):
                    drawn.append(torch.rand(size=shape, device=device))
            return drawn

        cases["generate_x_and_y_streams"] = generate_x_and_y_streams
    else:
        rec.notes["generate_x_and_y_streams"] = "not run: CUDA streams need a GPU"
    samples = timing.compare(cases, d2l.sync, warmup=args.warmup, rounds=args.repeats,
                             seed=args.seed, process=args.process)
    rec.timings(samples, devices=d2l.names([device]))
    report(samples, f"of {args.size}x{args.size} draws")


def build_parser() -> argparse.ArgumentParser:
    p = harness.parser(__doc__.splitlines()[0], section="small_ops_parallel")
    device_options.add_argument(p, default="cpu")
    return p


if __name__ == "__main__":
    sys.exit(harness.main("small_ops_parallel", "pytorch", build_parser(), body))
