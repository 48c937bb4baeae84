"""The section: Asynchronous computation."""

from __future__ import annotations

from d2lperf.sections import COUNT, REPEATED, REPEATED_REQUIRED, SIZE, Dots, Section

SECTION = Section(
    order=2,
    title="Asynchronous computation",
    heading="异步计算",
    plot_title="Asynchronous computation",
    options={"size": {**SIZE, "description": "side of the square matrices"},
             "loop_iterations": {**COUNT, "description": "x + 1 operations per timed loop"},
             **REPEATED},
    required=("size", "loop_iterations", *REPEATED_REQUIRED),
    blas=True,
    # each dot(x, x) of size x size; waitall waits for two
    work={"dot_wait_to_read": Dots("size"), "dot_asnumpy": Dots("size"),
          "dot_asscalar": Dots("size"), "dot_waitall": Dots("size", 2)},
    presets={
        "documents": {
            "size": 2000,
            "loop_iterations": 1000,
            "warmup": 1,
            "repeats": 2,
            "processes": 6,
            # 6 processes took 111-114 s here (MXNet, quiet): 240 leaves room for a second stage of
            # 6
            "budget_seconds": 240,
        },
        "ci": {
            "size": 500,
            "loop_iterations": 100,
            "warmup": 1,
            "repeats": 3,
            "processes": 2,
            "budget_seconds": 2,
        },
    },
)
