"""d2lperf/torch.py: devices, sync, seed, Fashion-MNIST, accuracy and build info.

The module imports torch only inside its functions, so its pure parts run here; the
rest runs in the PyTorch environment, one small program per test. Its CUDA code paths
run there too, with torch.cuda's answers stood in for (is_available, device_count,
synchronize, ...): guarded, and exercised, on a machine without a GPU.
"""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from conftest import REPO, run_program
from d2lperf import frameworks
from d2lperf import torch as d2l_torch

# Stand-ins for a machine with two CUDA devices, recording the calls made to them.
CUDA_STAND_INS = """
import torch
calls = []
torch.cuda.is_available = lambda: True
torch.cuda.is_initialized = lambda: True
torch.cuda.device_count = lambda: 2
torch.cuda.synchronize = lambda device=None: calls.append(str(device))
"""


in_torch = run_program


def test_versions_are_parsed_and_old_ones_refused():
    assert frameworks.parse_version("2.13.0+cpu") == (2, 13)
    assert frameworks.parse_version("2.11.0a0+git1234") == (2, 11)
    assert d2l_torch.version_problem("2.13.0+cpu") is None
    assert d2l_torch.version_problem("2.1.0") is None
    assert "too old" in d2l_torch.version_problem("1.13.1")
    assert ">= 2.1" in d2l_torch.version_problem("2.0.1")
    assert "not a torch version" in d2l_torch.version_problem("unknown")


def test_build_settings_are_read_from_torch_config_text():
    text = "  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CUDA_FLAGS= -DX -DY, USE_CUDA=0,"
    assert d2l_torch.build_settings(text) == {
        "BLAS_INFO": "mkl", "BUILD_TYPE": "Release", "CUDA_FLAGS": " -DX -DY", "USE_CUDA": "0"}
    assert d2l_torch.build_settings("no settings here") == {}


def test_cpu_devices_are_the_cpu_as_often_as_asked(torch_python):
    got = in_torch(torch_python, """
        import json
        from d2lperf import torch as t
        print(json.dumps([t.names(t.devices("cpu", 1)), t.names(t.devices("cpu", 2))]))
    """)
    assert got == ["cpu", "cpu,cpu"]


def test_gpu_devices_skip_without_gpus_and_are_cuda_devices_with_them(torch_python):
    got = in_torch(torch_python, """
        import json
        import torch
        from d2lperf import torch as t
        from d2lperf.harness import Skipped
        out = {}
        for count in (1, 2):
            try:
                t.devices("gpu", count)
            except Skipped as why:
                out[count] = str(why)
        try:
            t.devices("tpu", 1)
        except ValueError as error:
            out["kind"] = str(error)
        torch.cuda.is_available = lambda: True
        torch.cuda.device_count = lambda: 1
        try:
            t.devices("gpu", 2)
        except Skipped as why:
            out["one_gpu"] = str(why)
        torch.cuda.device_count = lambda: 2
        out["two_gpus"] = t.names(t.devices("gpu", 2))
        print(json.dumps(out))
    """)
    assert got == {"1": "needs 1 GPU, found 0", "2": "needs 2 GPUs, found 0",
                   "kind": "unknown device kind 'tpu'; allowed: gpu, cpu",
                   "one_gpu": "needs 2 GPUs, found 1", "two_gpus": "cuda:0,cuda:1"}


def test_training_runs_that_fit_the_gpus_run_and_the_others_say_why(torch_python):
    got = in_torch(torch_python, """
        import argparse, json
        import torch
        from d2lperf import torch as t
        from d2lperf.harness import Skipped
        from d2lperf.results import Recorder

        def prepare(on, devices):
            args = argparse.Namespace(on=on, devices=devices, batch_sizes=[256] * len(devices),
                                      learning_rates=[0.1] * len(devices), seed=0)
            rec = Recorder("multi_gpu_gluon", "pytorch", 0)
            runs, found = t.prepare(args, rec, "resnet18")
            return [[r.devices for r in runs], t.names(found), rec.notes.get("runs_not_run")]

        out = {"cpu": prepare("cpu", [1, 2])}
        try:
            prepare("gpu", [1, 2])
        except Skipped as why:
            out["none"] = str(why)
        torch.cuda.is_available = lambda: True
        torch.cuda.device_count = lambda: 1
        out["one"] = prepare("gpu", [1, 2])
        torch.cuda.device_count = lambda: 4
        out["four"] = prepare("gpu", [2, 1])
        print(json.dumps(out))
    """)
    assert got == {"cpu": [[1, 2], "cpu,cpu", None], "none": "needs 1 GPU, found 0",
                   "one": [[1], "cuda:0", {"resnet18_2_devices": {
                       "devices": 2, "reason": "needs 2 GPUs, found 1", "needs": "gpus"}}],
                   "four": [[2, 1], "cuda:0,cuda:1", None]}


def test_sync_waits_for_every_gpu_or_the_one_named_and_never_on_cpu(torch_python):
    got = in_torch(torch_python, """
        import json
        from d2lperf import torch as t
        t.sync(); t.sync("cpu")   # the real torch here: no CUDA, nothing to call
    """, CUDA_STAND_INS, """
        out = {}
        t.sync(); out["all"] = list(calls); calls.clear()
        t.sync("cuda:1"); out["one"] = list(calls); calls.clear()
        t.sync(torch.device("cpu")); out["cpu"] = list(calls)
        torch.cuda.is_initialized = lambda: False
        t.sync(); out["no_context"] = list(calls)
        print(json.dumps(out))
    """)
    assert got == {"all": ["0", "1"], "one": ["cuda:1"], "cpu": [], "no_context": []}


def test_seed_repeats_torch_numpy_and_python_draws(torch_python):
    got = in_torch(torch_python, """
        import json, random
        import numpy as np, torch
        from d2lperf import torch as t
        def draws():
            return [torch.rand(3).tolist(), np.random.rand(2).tolist(), random.random()]
        t.seed(7); first = draws()
        t.seed(7); second = draws()
        t.seed(8); other = draws()
        print(json.dumps([first == second, first == other]))
    """)
    assert got == [True, False]


def test_fashion_mnist_batches_are_totensor_images_and_int64_labels(torch_python):
    got = in_torch(torch_python, """
        import json
        import torch
        from d2lperf import torch as t
        t.seed(0)
        train, test = t.load_fashion_mnist(32, num_workers=0, train_limit=100, test_limit=40)
        X, y = next(iter(train))
        sizes = [len(b[1]) for b in test]
        first_test = next(iter(test))[1][:5].tolist()
        print(json.dumps({"shape": list(X.shape), "dtype": str(X.dtype), "min": X.min().item(),
                          "max": X.max().item(), "labels": str(y.dtype),
                          "n": [len(train.dataset), len(test.dataset)], "test_batches": sizes,
                          "first_test": first_test}))
    """)
    assert got["shape"] == [32, 1, 28, 28] and got["dtype"] == "torch.float32"
    assert 0 <= got["min"] < got["max"] <= 1
    assert got["labels"] == "torch.int64"
    assert got["n"] == [100, 40] and got["test_batches"] == [32, 8]
    assert got["first_test"] == [9, 2, 1, 1, 6]  # the test set in its order: not shuffled


def test_missing_fashion_mnist_says_where_it_looked(torch_python, tmp_path):
    done = subprocess.run(
        [str(torch_python), "-c", textwrap.dedent(f"""
            from d2lperf import data, torch as t
            data.MXNET_CACHE = data.DEBIAN_PACKAGE = __import__("pathlib").Path({str(tmp_path)!r})
            t.load_fashion_mnist(8, data_dir={str(tmp_path / "none")!r}, download=True)
        """)], capture_output=True, text=True, cwd=REPO / "scripts", timeout=300)
    assert done.returncode == 1
    assert "Fashion-MNIST was not found intact" in done.stderr
    assert "PyTorch sections read the files only" in done.stderr


def test_evaluate_accuracy_counts_correct_predictions_in_eval_mode(torch_python):
    got = in_torch(torch_python, """
        import json
        import torch
        from torch import nn
        from d2lperf import torch as t
        X = torch.eye(4).repeat(3, 1)
        y = torch.tensor([0, 1, 2, 3] * 3)
        y_wrong = y.clone(); y_wrong[:3] = 3
        net = nn.Sequential(nn.Linear(4, 4, bias=False), nn.Dropout(0.99))
        with torch.no_grad():
            net[0].weight.copy_(torch.eye(4))
        batches = [(X[:5], y[:5]), (X[5:], y[5:])]
        print(json.dumps([t.evaluate_accuracy(net, batches), net.training,
                          t.evaluate_accuracy(lambda x: x, [(X, y_wrong)], "cpu")]))
    """)
    assert got == [1.0, False, 0.75]  # dropout off (eval mode); 3 of 12 labels wrong


def test_build_info_on_cpu_records_version_threads_and_settings(torch_python):
    env = {"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    got = in_torch(torch_python, """
        import json
        from d2lperf import torch as t
        print(json.dumps(t.build_info()))
    """, env=env)
    assert d2l_torch.version_problem(got["version"]) is None
    assert got["threads"]["intra_op"] == 1
    assert got["cuda_available"] is False and got["gpus"] == []
    expected_build = "cpu" if got["cuda_version"] is None else "cuda"
    assert got["build"] == expected_build
    assert set(got["tf32"]) == {"matmul", "cudnn"}
    assert set(got["cudnn"]) == {"enabled", "benchmark", "deterministic"}
    assert got["float32_matmul_precision"] in ("highest", "high", "medium")
    assert "at::get_num_threads() : 1" in got["parallel_info"]


def test_build_info_with_gpus_records_names_and_compute_capabilities(torch_python):
    got = in_torch(torch_python, CUDA_STAND_INS, """
        import json, types
        from d2lperf import torch as t
        torch.cuda.get_device_name = lambda i: f"NVIDIA H200 #{i}"
        torch.cuda.get_device_capability = lambda i: (9, 0)
        torch.cuda.get_device_properties = lambda i: types.SimpleNamespace(
            total_memory=143_771_000_000, multi_processor_count=132)
        torch.backends.cudnn.version = lambda: 91002
        info = t.build_info()
        print(json.dumps([info["gpus"], info["cudnn_version"], info["cuda_available"]]))
    """)
    gpus, cudnn, available = got
    assert available is True and cudnn == 91002
    assert gpus == [{"index": i, "name": f"NVIDIA H200 #{i}", "compute_capability": "9.0",
                     "memory_gb": 143.77, "multiprocessors": 132} for i in (0, 1)]


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_the_module_imports_no_torch_until_asked(torch_python, kind):
    got = in_torch(torch_python, f"""
        import json, sys
        from d2lperf import torch as t
        before = "torch" in sys.modules
        try:
            t.devices({kind!r}, 1)
        except Exception:
            pass
        print(json.dumps([before, "torch" in sys.modules]))
    """)
    assert got == [False, True]
