"""The section: Memory impact of asynchronous computation."""

from __future__ import annotations

from d2lperf.sections import COUNT, REPEATED_REQUIRED, TIMING, Section

SECTION = Section(
    order=3,
    title="Memory impact of asynchronous computation",
    heading="异步计算对内存的影响",
    plot_title="Memory impact of asynchronous computation",
    options={"batches": {**COUNT, "description": "training batches per run"},
             "batch_size": {**COUNT, "description": "examples per batch"},
             "report_every": {**COUNT, "description": "record the elapsed time every this "
                              "many batches"},
             **TIMING},
    required=("batches", "batch_size", "report_every", *REPEATED_REQUIRED),
    plot="memory",
    presets={
        "documents": {
            "batches": 100,
            "batch_size": 1024,
            "report_every": 50,
            "warmup": 1,
            "repeats": 5,
        },
        "ci": {
            "batches": 10,
            "batch_size": 128,
            "report_every": 5,
            "warmup": 1,
            "repeats": 2,
        },
    },
)
