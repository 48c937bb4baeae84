"""Machine ceilings: peak matrix-multiply rate and memory bandwidth, measured here.

Not a section of the chapter: this machine's peak rates, which the report sets the
timings against; the best of every framework's libraries (so every framework has it).
"""

from __future__ import annotations

from d2lperf.sections import REPEATED_REQUIRED, SIZE, TIMING, Section

SECTION = Section(
    order=9,
    title="Machine ceilings: peak matrix-multiply rate and memory bandwidth, measured here",
    document="this machine",
    plot_title="Machine ceilings (GFLOP/s for dot, GB/s for copies)",
    options={"dot_sizes": {"type": "array", "minItems": 1, "items": SIZE,
                           "description": "square matrix sizes for the matrix-multiply rates"},
             "copy_mb": {"type": "integer", "minimum": 1, "maximum": 16384,
                         "description": "megabytes copied for the bandwidth figures"},
             **TIMING},
    required=("dot_sizes", "copy_mb", *REPEATED_REQUIRED),
    plot="rates",
    blas=True,
    takes_device=False,
    presets={
        "documents": {
            "dot_sizes": [2000, 4000],
            "copy_mb": 256,
            "warmup": 1,
            "repeats": 5,
        },
        "ci": {
            "dot_sizes": [500],
            "copy_mb": 32,
            "warmup": 1,
            "repeats": 3,
        },
    },
)
