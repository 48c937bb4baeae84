import os
import stat

from d2lperf import machine


def test_slug_drops_trademarks_and_frequency():
    assert machine.slug("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz") == (
        "intel-xeon-platinum-8481c")
    assert machine.slug("NVIDIA H200") == "nvidia-h200"


def test_machine_id_from_hardware():
    assert machine.machine_id("AMD EPYC", 2, []) == "amd-epyc-2c-nogpu"
    assert machine.machine_id("AMD EPYC", 16, ["NVIDIA H200"]) == "amd-epyc-16c-1xnvidia-h200"
    two = machine.machine_id("X", 8, ["Tesla V100-SXM2-16GB", "Tesla V100-SXM2-16GB"])
    assert two == "x-8c-2xtesla-v100-sxm2-16gb"


def test_gpu_count_changes_the_id(tmp_path, monkeypatch):
    """A fake nvidia-smi on PATH stands in for a machine with two GPUs."""
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'NVIDIA H200, 550.54, 143771 MiB, 00000000:01:00.0'\n"
                    "echo 'NVIDIA H200, 550.54, 143771 MiB, 00000000:02:00.0'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    found = machine.gpus()
    assert [g["name"] for g in found] == ["NVIDIA H200", "NVIDIA H200"]
    assert found[0]["driver"] == "550.54"
    assert machine.machine_id("AMD EPYC", 16).endswith("-16c-2xnvidia-h200")


def test_hardware_facts_are_complete():
    facts = machine.hardware_facts()
    assert facts["cpu"]["logical_cores"] >= 1
    assert facts["cpu"]["model"]
    assert isinstance(facts["gpus"], list)
