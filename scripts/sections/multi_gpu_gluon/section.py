"""The section: Concise multi-device training with Gluon (ResNet-18)."""

from __future__ import annotations

from d2lperf.sections import TRAINING, Section

SECTION = Section(
    order=7,
    title="Concise multi-device training with Gluon (ResNet-18)",
    document="seeds/000 and seeds/001",
    heading="多GPU简洁实现; 多 GPU 训练",
    plot_title="ResNet-18, 1 vs 2 devices",
    options=TRAINING,
    plot="training",
    gpus=2,
    data=True,
    models=("resnet18",),
    defines=("resnet18",),
    runtime=120,
    mem_mb=16000,
    presets={
        "documents": {
            "devices": [1, 2],
            "batch_sizes": [256, 512],
            "learning_rates": [0.1, 0.2],
            "epochs": 10,
            "data_workers": 4,
        },
        "ci": {
            "devices": [1, 2],
            "batch_sizes": [32, 64],
            "learning_rates": [0.1, 0.2],
            "epochs": 1,
            "data_workers": 0,
            # an epoch of ResNet-18 on 256 + 128 examples took 12 s per run on two CPU cores
            "train_limit": 128,
            "test_limit": 64,
        },
    },
)
