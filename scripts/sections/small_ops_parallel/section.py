"""The section: Small computations, in parallel."""

from __future__ import annotations

from d2lperf.sections import REPEATED, REPEATED_REQUIRED, SIZE, AAPair, Section

SECTION = Section(
    order=5,
    title="Small computations, in parallel",
    heading="简单计算量小，并行计算",
    plot_title="Two small random draws, separately and together",
    options={"size": {**SIZE, "description": "X and Y are size x size"}, **REPEATED},
    required=("size", *REPEATED_REQUIRED),
    # the two draws are the same work: y against x
    aa_pairs=(AAPair("aa_small_ops", "generate_y", "generate_x"),),
    presets={
        "documents": {
            "size": 2000,
            "warmup": 1,
            "repeats": 20,
            "processes": 8,
            # 8 processes took 26-34 s quiet, 41 s with one core kept busy: 120 leaves room for a
            # second stage there, where the draws' intervals are twice as wide
            "budget_seconds": 120,
        },
        "ci": {
            "size": 500,
            "warmup": 1,
            "repeats": 3,
            "processes": 2,
            "budget_seconds": 2,
        },
    },
)
