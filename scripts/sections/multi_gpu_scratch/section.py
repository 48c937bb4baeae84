"""The section: Multi-device training from scratch (LeNet, allreduce, split_and_load)."""

from __future__ import annotations

from d2lperf.sections import TRAINING, Section

SECTION = Section(
    order=6,
    title="Multi-device training from scratch (LeNet, allreduce, split_and_load)",
    heading="多GPU并行计算",
    plot_title="LeNet from scratch, 1 vs 2 devices",
    options=TRAINING,
    plot="training",
    gpus=2,
    cpu_stand_in=True,
    data=True,
    models=("lenet",),
    defines=("lenet",),
    blas=True,
    runtime=60,
    presets={
        "documents": {
            "devices": [1, 2],
            "batch_sizes": [256, 256],
            "learning_rates": [0.2, 0.2],
            "epochs": 4,
            "data_workers": 4,
        },
        "ci": {
            "devices": [1, 2],
            "batch_sizes": [256, 256],
            "learning_rates": [0.2, 0.2],
            "epochs": 2,
            "data_workers": 0,
            "train_limit": 2048,
            "test_limit": 512,
        },
    },
)
