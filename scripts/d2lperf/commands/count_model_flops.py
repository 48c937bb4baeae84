"""Count the FLOPs per example of the models the training sections train (report/model_flops.csv).

One count per architecture, with PyTorch's ``torch.utils.flop_counter.FlopCounterMode``
on the very LeNet and ResNet-18 that the PyTorch twins train (each defined once, in the
script of the section that ``defines`` it: ``sections.model_script``): one forward pass
and one backward pass of the loss, as a training step runs them, on a batch of
Fashion-MNIST's shape (1x28x28), divided by the batch. Every framework's twin trains the
same architecture on the same images, so the count holds for all of them
(``d2lperf.flops`` reads it). FlopCounterMode counts the matrix products and
convolutions, two FLOPs a multiply-add, forward and backward (the gradient of the
input images is not computed, nor counted); element-wise work, pooling, batch norm and
the parameter update are not counted, as a model-FLOPs utilisation counts them.

Run it in the PyTorch environment after changing a model:
``.venv-torch/bin/d2lperf count-flops`` (``--out`` elsewhere);
tests/test_model_flops.py recounts and compares.
"""

from __future__ import annotations

import argparse
import csv
from collections.abc import Sequence
from pathlib import Path

from d2lperf.flops import COLUMNS, TABLE
from d2lperf.sections import model_script

INPUT_SHAPE = (1, 28, 28)  # Fashion-MNIST, not resized, in both training sections
BATCH = 8  # the products scale with the batch: the count is divided by it


def count(forward, parameters) -> tuple[int, int]:
    """FLOPs of one forward pass of the summed loss, and of its backward pass."""
    import torch
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    X = torch.zeros((BATCH, *INPUT_SHAPE))
    y = torch.zeros(BATCH, dtype=torch.long)
    loss = nn.CrossEntropyLoss(reduction="none")
    with FlopCounterMode(display=False) as forward_count:
        total = loss(forward(X), y).sum()
    with FlopCounterMode(display=False) as backward_count:
        total.backward()
    for p in parameters:
        p.grad = None
    return forward_count.get_total_flops(), backward_count.get_total_flops()


def models() -> dict[str, tuple]:
    """Each model's forward function and parameters, as its twin builds them."""
    scratch = model_script("pytorch", "lenet")
    params = [p.requires_grad_() for p in scratch.init_params()]
    gluon = model_script("pytorch", "resnet18")
    net = gluon.resnet18(10)
    net.apply(gluon.init_weights)
    net.train()
    return {"lenet": (lambda X: scratch.lenet(X, params), params),
            "resnet18": (net, list(net.parameters()))}


def rows() -> list[dict[str, object]]:
    import torch

    torch.manual_seed(0)
    found = []
    for model, (forward, parameters) in models().items():
        fwd, bwd = count(forward, parameters)
        if fwd % BATCH or bwd % BATCH:
            raise SystemExit(f"{model}: {fwd} + {bwd} FLOPs do not divide by the batch")
        found.append({"model": model, "input_shape": "x".join(map(str, INPUT_SHAPE)),
                      "forward_flops": fwd // BATCH, "backward_flops": bwd // BATCH,
                      "train_flops": (fwd + bwd) // BATCH,
                      "counted_with": f"torch {torch.__version__.split('+')[0]} "
                                      "FlopCounterMode"})
    return found


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=TABLE, help=f"default: {TABLE}")
    args = p.parse_args(argv)
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows())
    print(args.out.read_text(), end="")
    return 0

