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
        import multi_gpu_gluon as section

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
    done = subprocess.run([str(experiment_python), "-c", code], cwd=REPO / "scripts/sections/mxnet",
                          capture_output=True, text=True, timeout=300,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["warmed"] == [[8, 1, 28, 28], [4, 1, 28, 28]]
    assert result["running"] > 0 and result["parameters"] > 60
    assert result["moved"] is False  # running means start at zero and stayed there
    assert result["differ"] == []


def test_scratch_training_records_the_shapes_it_warmed(experiment_python, tmp_path):
    done = run_section(experiment_python, "sections/mxnet/multi_gpu_scratch.py", tmp_path,
                       "--on", "cpu",
                       "--devices", "1", "--batch-sizes", "64", "--learning-rates", "0.2",
                       "--epochs", "1", "--data-workers", "0", "--train-limit", "100",
                       "--test-limit", "64", "--threads", "1")
    assert done.returncode == 0, done.stderr
    assert read_run(tmp_path)["notes"]["warmed_input_shapes"] == {
        "lenet_1_device": [[64, 1, 28, 28], [36, 1, 28, 28]]}
