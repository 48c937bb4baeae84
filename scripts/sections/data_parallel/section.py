"""The section: Data-parallel training at every device count, a process per device."""

from __future__ import annotations

from d2lperf.sections import (
    COUNT,
    DEVICE_COUNT,
    REPEATED,
    REPEATED_REQUIRED,
    TRAIN_LIMIT,
    TRAINING_SEED,
    Section,
    SpeedClaim,
)

MODELS = ("lenet", "resnet18")  # what it trains, and what its preset may ask for

SECTION = Section(
    order=8,
    title="Data-parallel training at every device count, a process per device",
    document="seeds/000 and seeds/001, with today's API",
    heading="多GPU并行计算; 多GPU简洁实现",
    plot_title="LeNet and ResNet-18, data-parallel: images/s against devices",
    options={"models": {"type": "array", "minItems": 1, "uniqueItems": True,
                        "items": {"enum": list(MODELS)}, "description": "the nets to train"},
             # left out, every one of models: the command line's default is that too (a
             # config's null leaves it out), not the documents' value
             "cpu_models": {"type": "array", "minItems": 1, "uniqueItems": True,
                            "items": {"enum": list(MODELS)}, "default": None,
                            "description": "the nets trained where a device is a CPU core "
                            "(default: every one of models); the others say why they did "
                            "not run"},
             "images": {"type": "array", "minItems": 1, "items": COUNT,
                        "description": "images each timed sample trains, per model"},
             "learning_rates": {"type": "array", "minItems": 1,
                                "items": {"type": "number", "exclusiveMinimum": 0},
                                "description": "learning rate of one device, per model, "
                                "multiplied by the device count"},
             "device_counts": {"type": "array", "minItems": 1, "items": DEVICE_COUNT,
                               "description": "device counts; those above the machine's "
                               "are not run"},
             "nodes": {**COUNT, "description": "nodes the largest count spans, inside a "
                       "SLURM job: the counts' processes spread over them, the largest "
                       "count's share a node each (1: every group on this machine)"},
             "batch_size": {**COUNT, "description": "images per device and step"},
             "train_limit": {**TRAIN_LIMIT, "description": "train on the first N training "
                             "images only (default: all 60000)"},
             **REPEATED, "seed": TRAINING_SEED},
    required=("models", "images", "learning_rates", "device_counts", "batch_size",
              *REPEATED_REQUIRED),
    plot="scaling",
    documents_code=False,
    process_per_device=True,
    data=True,
    models=MODELS,
    runtime=60,
    mem_mb=16000,
    claims=(SpeedClaim(
        "two_devices_train_lenet_faster", "two devices train LeNet faster than one "
        "(data-parallel, one process per device)", "2 devices train LeNet faster",
        # no documents' figure: their LeNet's two devices were cpu(0), cpu(1), two
        # queues on one processor, not two processors
        faster="lenet_2_devices", slower="lenet_1_device", label="2 devices/1 device"),
        SpeedClaim(
        "two_devices_train_resnet_faster", "two devices train ResNet-18 faster than "
        "one (data-parallel, one process per device)",
        "2 devices train ResNet-18 faster", faster="resnet18_2_devices",
        slower="resnet18_1_device", label="2 devices/1 device",
        document_section="multi_gpu_gluon")),
    presets={
        "documents": {
            # Each timed sample trains a fixed number of images on every device count, in images /
            # (256 x devices) steps: a multiple of 256 x 8 trains whole steps on 1, 2, 4 and 8
            # devices. Each group of processes takes one untimed step first (its warm-up), so no
            # untimed sample is needed. A ResNet-18 step of 256 images takes 6 s on one CPU core in
            # PyTorch and MXNet, 11 s in JAX: 2048 images are 8 steps on one device, 4 on two; on
            # two CPU cores the section took 10 minutes in MXNet and in PyTorch and 22 in JAX (so
            # JAX's budget is larger); seconds on GPUs.
            "models": ["lenet", "resnet18"],
            # Where a device is a CPU core, LeNet alone. A ResNet-18 step of 256 images takes
            # 13 s on one core of an AMD EPYC (Zen 3, AVX2), so its sample of 2048 images
            # takes 104 s on one device: two processes of both nets took 14 minutes in MXNet
            # and in PyTorch and 34 in JAX, and their intervals (two processes: one degree of
            # freedom) decided nothing. LeNet's processes take seconds and decide its claim;
            # ResNet-18's claim is judged where the section runs on GPUs (the report says so).
            "cpu_models": ["lenet"],
            "images": [8192, 2048],
            "learning_rates": [0.2, 0.1],
            "device_counts": [1, 2, 4, 8],
            # On a SLURM cluster (profiles/slurm), the nodes the largest count spans: its job asks
            # for a task per device of that count over these nodes, and each count trains as one
            # srun step on as few of them as hold it (two 8-GPU nodes: device_counts up to 16).
            "nodes": 1,
            "batch_size": 256,
            "warmup": 0,
            # One round per process, six processes: the claims' intervals come from the spread
            # between processes, and a process's fixed cost (its interpreter, the groups'
            # startup and first step: 20-35 s on two CPU cores) is spent once for its round.
            # At two rounds a process took 30-60 s, and the first look at three processes (four
            # in JAX: an interval of 2 or 3 degrees of freedom) left the LeNet claim undecided
            # in four of six section runs, a second stage doubling the section's time.
            "repeats": 1,
            "processes": 6,
            "budget_seconds": {"default": 900, "jax": 1500},
        },
        "ci": {
            "models": ["lenet"],
            "images": [1024],
            "learning_rates": [0.2],
            "device_counts": [1, 2],
            "batch_size": 256,
            "train_limit": 4096,
            "warmup": 1,
            "repeats": 3,
            "processes": 2,
            "budget_seconds": 2,
        },
    },
)
