"""Every input shape is warmed before the first timed epoch (cuDNN tunes per shape),
and warming changes nothing that training goes on with."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from conftest import REPO, read_run, run_section
from d2lperf import training


@pytest.mark.parametrize("examples, batch_size, sizes", [
    (60000, 256, [256, 96]),  # the documents' last batch has 96 images
    (60000, 512, [512, 96]),
    (512, 64, [64]),
    (100, 256, [100]),
])
def test_each_batch_size_an_epoch_feeds(examples, batch_size, sizes):
    assert training.batch_sizes(examples, batch_size) == sizes


def test_gluon_warm_up_leaves_every_parameter_as_it_was(experiment_python):
    """ResNet-18 (with BatchNorm, whose running statistics a training-mode forward
    moves) on cpu(0), cpu(1): after the warm-up every parameter, running statistics
    included, equals what it was; both shapes, the last partial batch too, ran.
    (Compared with itself: two nets seeded alike can differ, MXNet's initialization
    on two contexts is not deterministic.)"""
    code = textwrap.dedent("""\
        import json
        import mxnet as mx
        from mxnet import init, nd
        from mxnet.gluon import data as gdata, loss as gloss
        from d2lperf.sections import load_script
        section = load_script("mxnet", "multi_gpu_gluon")

        ctx = [mx.cpu(0), mx.cpu(1)]
        images = nd.random.uniform(0, 255, shape=(20, 28, 28, 1)).astype("uint8")
        dataset = gdata.ArrayDataset(images, list(range(10)) * 2)
        loader = gdata.DataLoader(
            dataset.transform_first(gdata.vision.transforms.ToTensor()), 8, shuffle=True)
        loss = gloss.SoftmaxCrossEntropyLoss()

        def parameters(net):
            return {n: [d.asnumpy() for d in p.list_data()]
                    for n, p in net.collect_params().items()}

        # a net whose shapes are still unknown (deferred initialization) warms too
        deferred = section.resnet18(10)
        deferred.initialize(init=init.Normal(sigma=0.01), ctx=ctx)
        warmed = section.warm_up(deferred, loader, 8, ctx, loss)

        net = section.resnet18(10)
        net.initialize(init=init.Normal(sigma=0.01), ctx=ctx)
        net(nd.zeros((4, 1, 28, 28), ctx=ctx[0]))  # predicting: shapes known, nothing moved
        nd.waitall()  # asnumpy alone can read a large weight before its random init ends
        before = parameters(net)
        section.warm_up(net, loader, 8, ctx, loss)
        after = parameters(net)
        assert before.keys() == after.keys()
        differ = [n for n in before
                  if any(not (a == b).all() for a, b in zip(before[n], after[n]))]
        running = [n for n in after if "running_mean" in n]
        moved = any((after[n][0] != 0).any() for n in running)
        print(json.dumps({"warmed": warmed, "differ": differ, "parameters": len(after),
                          "running": len(running), "moved": moved}))
        """)
    done = subprocess.run([str(experiment_python), "-c", code], cwd=REPO / "scripts",
                          capture_output=True, text=True, timeout=300,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["warmed"] == [[8, 1, 28, 28], [4, 1, 28, 28]]
    assert result["running"] > 0 and result["parameters"] > 60
    assert result["moved"] is False  # running means start at zero and stayed there
    assert result["differ"] == []


def test_pytorch_gluon_warm_up_leaves_parameters_statistics_and_gradients_as_they_were(
        torch_python):
    """The PyTorch twin's ResNet-18 in nn.DataParallel: after its warm-up every parameter
    and buffer (BatchNorm's running statistics and batch counters) equals what it was, no
    gradient is left, and both shapes ran, the last partial batch too."""
    code = textwrap.dedent("""\
        import json
        import torch
        from torch import nn
        from torch.utils.data import DataLoader
        from d2lperf.sections import load_script
        section = load_script("pytorch", "multi_gpu_gluon")
        from d2lperf import torch as d2l

        torch.manual_seed(0)
        images = torch.randint(0, 256, (20, 28, 28), dtype=torch.uint8)
        loader = DataLoader(d2l.FashionMNIST(images, torch.arange(20) % 10), 8, shuffle=True)
        net = section.resnet18(10)
        net.apply(section.init_weights)
        parallel = nn.DataParallel(net)
        before = {k: v.clone() for k, v in net.state_dict().items()}
        warmed = section.warm_up(parallel, loader, 8, torch.device("cpu"), nn.CrossEntropyLoss())
        after = net.state_dict()
        differ = [k for k in before if not torch.equal(before[k], after[k])]
        grads = [n for n, p in net.named_parameters() if p.grad is not None]
        counters = [k for k in after if k.endswith("num_batches_tracked")]
        print(json.dumps({"warmed": warmed, "differ": differ, "grads": grads,
                          "counters": len(counters), "training": parallel.training}))
        """)
    done = subprocess.run([str(torch_python), "-c", code], cwd=REPO / "scripts",
                          capture_output=True, text=True, timeout=300,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin",
                               "PYTHONPATH": str(REPO / "scripts")})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["warmed"] == [[8, 1, 28, 28], [4, 1, 28, 28]]
    assert result["counters"] > 0 and result["differ"] == [] and result["grads"] == []
    assert result["training"] is True


@pytest.mark.parametrize("framework", ["mxnet", "pytorch"])
def test_both_scratch_twins_record_the_shapes_they_warmed(framework, experiment_python,
                                                          torch_python, tmp_path):
    python = experiment_python if framework == "mxnet" else torch_python
    script = f"sections/multi_gpu_scratch/multi_gpu_scratch_{framework}.py"
    done = run_section(python, script, tmp_path, "--on", "cpu",
                       "--devices", "1", "--batch-sizes", "64", "--learning-rates", "0.2",
                       "--epochs", "1", "--data-workers", "0", "--train-limit", "100",
                       "--test-limit", "64", "--threads", "1")
    assert done.returncode == 0, done.stderr
    assert read_run(tmp_path)["notes"]["warmed_input_shapes"] == {
        "lenet_1_device": [[64, 1, 28, 28], [36, 1, 28, 28]]}


def test_pytorch_scratch_warm_up_leaves_no_gradient_and_trains_as_without_it(torch_python):
    """The LeNet twin's warm-up (forward and backward on zeros, gradients dropped):
    one training batch after it gives the same parameters as one without it."""
    code = textwrap.dedent("""\
        import json
        import torch
        from torch import nn
        from d2lperf.sections import load_script
        section = load_script("pytorch", "multi_gpu_scratch")

        def one_batch(warm):
            torch.manual_seed(0)
            params = section.init_params()
            devices = [torch.device("cpu")] * 2
            device_params = [section.get_params(params, d) for d in devices]
            loss = nn.CrossEntropyLoss(reduction="none")
            if warm:
                section.untimed_batch(torch.zeros(8, 1, 28, 28),
                                      torch.zeros(8, dtype=torch.int64), device_params,
                                      devices, loss)
                assert all(p.grad is None for W in device_params for p in W)
            X, y = torch.rand(8, 1, 28, 28), torch.arange(8) % 10
            section.train_batch(X, y, device_params, devices, 0.2, loss)
            return [p.detach() for p in device_params[0]]

        same = all(torch.equal(a, b) for a, b in zip(one_batch(False), one_batch(True)))
        print(json.dumps(same))
        """)
    done = subprocess.run([str(torch_python), "-c", code], cwd=REPO / "scripts",
                          capture_output=True, text=True, timeout=300,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin",
                               "PYTHONPATH": str(REPO / "scripts")})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) is True


def fitting(on, devices, gpus):
    """training.fitting_runs with a stand-in framework: ``gpus`` GPUs, each run's
    devices named as the framework's ``devices`` names them."""
    from d2lperf.harness import Skipped
    from d2lperf.results import Recorder

    def make_devices(kind, count):
        if kind == "gpu" and count > gpus:
            raise Skipped(f"needs {count} GPUs, found {gpus} (the framework's own words)")
        return [f"{kind}{i}" for i in range(count)]

    import argparse
    args = argparse.Namespace(on=on, devices=devices, batch_sizes=[256] * len(devices),
                              learning_rates=[0.1] * len(devices), seed=0)
    rec = Recorder("multi_gpu_scratch", "mxnet", 0)
    runs, found = training.fitting_runs(args, rec, "lenet", make_devices, lambda: gpus)
    return [r.devices for r in runs], found, rec.notes.get("runs_not_run")


def test_the_runs_that_fit_the_gpus_run_and_the_others_say_why():
    # both frameworks' prepare: one GPU trains the documents' 1-GPU run, not the 2-GPU one
    assert fitting("gpu", [1, 2], 1) == ([1], ["gpu0"],
                                         {"lenet_2_devices": {"devices": 2, "needs": "gpus",
                                                              "reason": "needs 2 GPUs, found 1"}})
    assert fitting("gpu", [2, 1], 4) == ([2, 1], ["gpu0", "gpu1"], None)
    assert fitting("cpu", [1, 2], 0) == ([1, 2], ["cpu0", "cpu1"], None)
    from d2lperf.harness import Skipped
    with pytest.raises(Skipped, match="the framework's own words"):
        fitting("gpu", [1, 2], 0)  # not even the smallest: the framework says why
