"""The section: Automatic parallelism: CPU and GPU, computation and communication."""

from __future__ import annotations

from d2lperf.sections import COUNT, REPEATED, REPEATED_REQUIRED, SIZE, Copies, Dots, Section

SECTION = Section(
    order=4,
    title="Automatic parallelism: CPU and GPU, computation and communication",
    heading="CPU和GPU的并行计算; 计算和通信的并行计算",
    plot_title="Automatic parallelism: CPU and GPU, compute and copy",
    options={"cpu_size": {**SIZE, "description": "x_cpu is cpu-size x cpu-size"},
             "gpu_size": {**SIZE, "description": "x_gpu is gpu-size x gpu-size"},
             "dots": {**COUNT, "description": "matrix products per run(x)"}, **REPEATED},
    required=("cpu_size", "gpu_size", "dots", *REPEATED_REQUIRED),
    gpus=1,
    blas=True,
    # run(x): dots products of x with itself; copies of the products to the CPU
    work={"cpu_only": Dots("cpu_size", "dots"), "gpu_only": Dots("gpu_size", "dots"),
          "gpu_compute": Dots("gpu_size", "dots"), "copy_to_cpu": Copies("gpu_size", "dots"),
          "copy_to_cpu_pinned": Copies("gpu_size", "dots")},
    presets={
        "documents": {
            "cpu_size": 2000,
            "gpu_size": 6000,
            "dots": 10,
            "warmup": 1,
            "repeats": 3,
            "processes": 4,
            "budget_seconds": 120,
        },
        "ci": {
            "cpu_size": 200,
            "gpu_size": 300,
            "dots": 10,
            "warmup": 1,
            "repeats": 3,
            "processes": 2,
            "budget_seconds": 2,
        },
    },
)
