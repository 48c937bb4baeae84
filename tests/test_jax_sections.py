"""The JAX twins, run for real in the JAX environment on the CI preset's small workloads:
the same case names and columns as the MXNet and PyTorch twins, JAX's build recorded,
XLA's threads pinned, and JAX's asynchronous dispatch on the CPU where the claims see it."""

from __future__ import annotations

import json

import pytest

from conftest import REPO, ci_preset, measure_section, read_rows, read_run, run_program
from d2lperf import tables, workloads
from d2lperf.presets import cli_args, for_framework

SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"


def section(name: str) -> str:
    return f"sections/{name}/{name}_jax.py"


def run(python, name, out, *extra, timeout=600):
    """The section as its rule runs it, at the CI preset's options (JAX's where they
    differ), through the manager."""
    options = for_framework(ci_preset(name), "jax")
    return measure_section(python, section(name), out, *cli_args(options), "--threads", "1",
                           "--probe-seconds", "0.02", *extra, timeout=timeout)


def valid_rows(out):
    frame = tables.load_samples(out / "samples.csv", SCHEMA)
    assert len(frame) > 0 and set(frame["framework"]) == {"jax"}
    return read_rows(out)


@pytest.fixture(scope="module")
def hybridize_run(jax_python, tmp_path_factory):
    out = tmp_path_factory.mktemp("jax-hybridize")
    done = run(jax_python, "hybridize", out, "--export-dir", str(out / "model"))
    assert done.returncode == 0, done.stderr[-3000:]
    return out, read_run(out)


def test_hybridize_times_op_by_op_against_jit_with_the_a_a_pair(hybridize_run):
    out, record = hybridize_run
    rows = valid_rows(out)
    timed = {r["case"] for r in rows if r["position"] != ""}
    assert timed == {"mlp_before_hybridize", "mlp_before_hybridize_twin", "mlp_after_hybridize"}
    assert {r["case"] for r in rows if r["position"] == ""} == {"jax_jit_compile"}
    medians = {case: sorted(float(r["value"]) for r in rows if r["case"] == case)
               for case in timed}
    # jit against op-by-op dispatch: many times faster on any machine
    assert medians["mlp_after_hybridize"][0] * 5 < medians["mlp_before_hybridize"][0]
    assert record["stages"]["count"] >= 1  # the manager's stages ran


def test_hybridize_prints_what_the_document_printed_in_jax_words(hybridize_run):
    out, record = hybridize_run
    outputs = record["outputs"]
    assert outputs["symbolic_program_result"]["text"] == "10"
    assert outputs["mlp_output_hybridized"]["values"][0] == pytest.approx(
        outputs["mlp_output_imperative"]["values"][0], rel=1e-5)
    assert "dot_general" in outputs["mlp_symbolic_output"]["text"]  # the traced program
    assert "Tracer" in outputs["hybridnet_F_hybridized"]["text"]
    assert outputs["hybridnet_F_imperative"]["by_design"]
    assert outputs["hybridnet_prints_after_first_hybridized_call"]["text"] == "0"
    assert sorted(record["artifacts"]) == ["my_mlp.jax_exported", "my_mlp.params"]
    assert (out / "model" / "my_mlp.jax_exported").stat().st_size > 0


def test_a_jax_record_names_jax_its_threads_and_where_it_queues(hybridize_run):
    _, record = hybridize_run
    assert record["framework"] == "jax"
    assert record["jax"]["version"] and record["jax"]["host_devices"] == 2
    assert "intra_op_parallelism_threads=1" in record["threads"]["XLA_FLAGS"]
    assert "--xla_cpu_multi_thread_eigen=false" in record["threads"]["XLA_FLAGS"]
    assert record["execution"] == {"device_kind": "cpu", "queues_work": True,
                                   "separate_devices": True}
    assert "mxnet_gpu_settings" not in record  # MXNet's own, not JAX's
    assert json.dumps(record)  # plain JSON throughout


def test_xla_threads_follow_the_timing_and_keep_a_users_other_flags():
    from d2lperf import jax as d2l

    flags = d2l.thread_environment(2, {"XLA_FLAGS": "--xla_dump_to=/tmp/x "
                                                    "--xla_cpu_multi_thread_eigen=false"})
    assert flags["XLA_FLAGS"].split() == [
        "--xla_force_host_platform_device_count=2", "--xla_cpu_multi_thread_eigen=true",
        "intra_op_parallelism_threads=2", "--xla_dump_to=/tmp/x"]


def timed_cases(rows) -> dict[str, int]:
    found: dict[str, int] = {}
    for row in rows:
        found[row["case"]] = found.get(row["case"], 0) + 1
    return found


def test_small_ops_draws_on_one_device_and_on_two(jax_python, tmp_path):
    done = run(jax_python, "small_ops_parallel", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    record = read_run(tmp_path)
    counts = timed_cases(valid_rows(tmp_path))
    # the MXNet twin's cases (and its A/A pair, X against Y), and the two host devices'
    assert set(counts) == {"generate_x", "generate_y", "generate_x_and_y",
                           "generate_x_and_y_devices"}
    assert len(set(counts.values())) == 1  # side by side: as many samples each
    assert "cpu:0" in record["notes"]["generate_x_and_y_devices"]
    assert "cpu:1" in record["notes"]["generate_x_and_y_devices"]


def test_async_computation_has_every_case_and_queues_on_the_cpu(jax_python, tmp_path):
    done = run(jax_python, "async_computation", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    record = read_run(tmp_path)
    assert set(timed_cases(valid_rows(tmp_path))) == {
        "dot_sum_queued", "dot_sum_finished", "dot_no_sync", "dot_wait_to_read",
        "dot_waitall", "dot_asscalar", "dot_asnumpy", "add_loop_synchronous",
        "add_loop_asynchronous"}
    assert record["execution"]["queues_work"] is True  # the queueing claims apply here
    assert isinstance(record["outputs"]["dot_sum"]["values"], float)


def test_ceilings_name_xla_and_measure_host_copies_where_asked(jax_python, tmp_path):
    done = run(jax_python, "ceilings", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    record = read_run(tmp_path)
    rates = {r["case"]: float(r["value"]) for r in valid_rows(tmp_path) if r["metric"] == "rate"}
    # bfloat16 where the CPU has a unit for it (AVX512_BF16, AMX), as this machine may
    bf16 = {"jax_dot_bf16_500"} if "bf16" in workloads.cpu_precisions() else set()
    assert set(rates) == {"jax_dot_500", "jax_copy"} | bf16 and min(rates.values()) > 0
    assert record["notes"]["kernels"]["jax_dot_500"].startswith("jax.numpy.dot (XLA:CPU")
    assert record["notes"]["gpu_ceilings"].startswith("not measured")
    # the GPU's host copies, on the CPU stand-in: the code a GPU runs, run here
    got = run_program(jax_python, f"""
        import argparse, importlib.util, json
        spec = importlib.util.spec_from_file_location("c", {str(REPO / "scripts" /
                                                              section("ceilings"))!r})
        c = importlib.util.module_from_spec(spec); spec.loader.exec_module(c)
        from d2lperf import jax as d2l
        from d2lperf.results import Recorder
        rec = Recorder("ceilings", "jax")
        args = argparse.Namespace(copy_mb=4, warmup=1, repeats=2, dot_sizes=[64])
        c.copy_rates(rec, args, d2l.devices("cpu", 1)[0], "gpu0_jax", host=True)
        c.dot_rates(rec, args, d2l.devices("cpu", 1)[0], "gpu0_jax", c.PRECISIONS)
        print(json.dumps(sorted({{r["case"] for r in rec.rows}})))
        """)
    assert got == ["gpu0_jax_copy", "gpu0_jax_device_to_host_pageable", "gpu0_jax_dot_64",
                   "gpu0_jax_dot_bf16_64", "gpu0_jax_dot_fp16_64",
                   "gpu0_jax_host_to_device_pageable"]


def test_the_ceilings_compare_jax_with_every_library_on_its_device():
    from d2lperf.workloads import best_ceiling, ceiling_case

    ceilings = {"mxnet_dot_2000": 80.0, "torch_mm_2000": 150.0, "jax_dot_2000": 170.0,
                "gpu0_jax_dot_4000": 900.0, "gpu0_torch_mm_4000": 800.0}
    assert best_ceiling(ceilings, ceiling_case("GFLOP", "cpu", "")) == ("jax_dot_2000", 170.0)
    assert best_ceiling(ceilings, ceiling_case("GFLOP", "cuda:0", "")) == \
        ("gpu0_jax_dot_4000", 900.0)


def test_async_memory_trains_in_both_modes_in_fresh_processes(jax_python, tmp_path):
    # one repeat: each is four fresh processes that import JAX and jit the step
    done = run(jax_python, "async_memory", tmp_path, "--repeats", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    record = read_run(tmp_path)
    counts = timed_cases(valid_rows(tmp_path))
    for mode in ("sync", "async"):
        assert {f"{mode}_total", f"{mode}_memory_increase",
                f"{mode}_peak_memory_increase"} <= set(counts)
    assert "jax.jit" in record["notes"]["step"]
    assert record["execution"]["queues_work"] is True


def test_multi_device_training_from_scratch_on_the_two_host_devices(jax_python, tmp_path):
    """LeNet by hand, data parallel over JAX's two host devices (the documents' cpu(0),
    cpu(1)), allreduce as psum: the demos print what the document printed, and both runs
    train."""
    done = run(jax_python, "multi_gpu_scratch", tmp_path, "--on", "cpu")
    assert done.returncode == 0, done.stderr[-3000:]
    record = read_run(tmp_path)
    outputs = record["outputs"]
    assert outputs["allreduce_before"]["values"] == [[[1.0, 1.0]], [[2.0, 2.0]]]
    assert outputs["allreduce_after"]["values"] == [[[3.0, 3.0]], [[3.0, 3.0]]]
    assert outputs["split_output"]["values"] == [
        [list(range(r * 4, r * 4 + 4)) for r in range(3)],
        [list(range(r * 4, r * 4 + 4)) for r in range(3, 6)]]
    assert outputs["b1_grad"]["by_design"]
    rows = valid_rows(tmp_path)
    devices = {r["case"]: r["devices"] for r in rows if r["metric"] == "time"}
    assert devices == {"lenet_1_device": "cpu:0", "lenet_2_devices": "cpu:0,cpu:1"}
    accuracy = [float(r["value"]) for r in rows if r["metric"] == "accuracy"]
    assert accuracy and all(0 <= a <= 1 for a in accuracy)


def test_auto_parallelism_without_a_gpu_is_skipped_and_runs_on_the_host_devices(jax_python,
                                                                               tmp_path):
    skipped = tmp_path / "gpu"
    skipped.mkdir()
    done = run(jax_python, "auto_parallelism", skipped, "--on", "gpu")
    assert done.returncode == 0, done.stderr[-3000:]
    record = read_run(skipped)
    assert (record["status"], record["reason"]) == ("skipped", "needs 1 GPU, found 0")
    stand_in = tmp_path / "cpu"
    stand_in.mkdir()
    done = run(jax_python, "auto_parallelism", stand_in, "--on", "cpu")
    assert done.returncode == 0, done.stderr[-3000:]
    record = read_run(stand_in)
    rows = valid_rows(stand_in)
    assert set(timed_cases(rows)) == {"cpu_only", "gpu_only", "cpu_and_gpu", "gpu_compute",
                                      "copy_to_cpu", "compute_and_copy"}
    where = {r["case"]: r["devices"] for r in rows}
    assert where["cpu_and_gpu"] == "cpu:0,cpu:1"  # two host devices, a queue each
    assert record["notes"]["two_gpus"].startswith("not run")


def test_concise_multi_device_training_shards_the_batch_over_the_host_devices(jax_python,
                                                                              tmp_path):
    """ResNet-18 in Flax, one jitted step with the batch sharded over the devices: the
    documents' checks before training, and both runs train."""
    done = run(jax_python, "multi_gpu_gluon", tmp_path, "--on", "cpu")
    assert done.returncode == 0, done.stderr[-3000:]
    record = read_run(tmp_path)
    assert record["outputs"]["weight_same_on_devices"]["text"] == "True"
    assert record["outputs"]["weight_not_initialized_on"]["by_design"]
    assert len(record["outputs"]["net_outputs"]["values"]) == 2  # a shard's outputs each
    rows = valid_rows(tmp_path)
    devices = {r["case"]: r["devices"] for r in rows if r["metric"] == "time"}
    assert devices == {"resnet18_1_device": "cpu:0", "resnet18_2_devices": "cpu:0,cpu:1"}


def test_the_copy_rate_is_a_copy_into_one_buffer_not_a_fresh_array_each_time(jax_python):
    """``jnp.copy`` returns a new array: on the CPU each repeat first touched fresh pages,
    and the 'bandwidth' read 5.5 GB/s where numpy's copy reads 32. The timed step copies
    into one destination XLA is given back (donated), as MXNet's and PyTorch's copy into
    an existing array."""
    got = run_program(jax_python, f"""
        import importlib.util, json
        import jax.numpy as jnp
        spec = importlib.util.spec_from_file_location("c", {str(REPO / "scripts" /
                                                              section("ceilings"))!r})
        c = importlib.util.module_from_spec(spec); spec.loader.exec_module(c)
        src = jnp.arange(1000, dtype=jnp.float32)
        step = c.copy_step(src)
        first = step()
        where = first.unsafe_buffer_pointer()
        again = [step() for _ in range(3)][-1]
        print(json.dumps([again.unsafe_buffer_pointer() == where,
                          bool((again == src).all()), where != src.unsafe_buffer_pointer()]))
        """)
    assert got == [True, True, True]


def test_data_parallel_trains_one_process_per_device_with_jax_distributed(jax_python, tmp_path):
    """The CI preset's LeNet on 1 and 2 devices: a group of processes each, jax.distributed
    between them (gloo on the CPU), each sample the same images, the startup apart."""
    done = run(jax_python, "data_parallel", tmp_path, "--threads", "2", "--processes", "1",
               timeout=900)  # one fresh process: each group's startup is seconds in JAX
    assert done.returncode == 0, done.stderr[-3000:]
    rows = valid_rows(tmp_path)
    record = read_run(tmp_path)
    assert record["status"] == "ok" and "jax.distributed" in record["notes"]["design"]
    assert {(r["case"], r["metric"], r["devices"]) for r in rows} == {
        ("lenet_1_device", "time", "cpu:0"), ("lenet_2_devices", "time", "cpu:0,cpu:1"),
        ("lenet_1_device", "startup", "cpu:0"), ("lenet_2_devices", "startup", "cpu:0,cpu:1")}
    losses = record["notes"]["mean_training_loss"]
    assert all(0 < loss < 10 for case in losses.values() for loss in case)
    assert record["jax"]["version"]
