import os
import stat

import pytest

from d2lperf import machine


def test_slug_drops_trademarks_and_frequency():
    assert machine.slug("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz") == (
        "intel-xeon-platinum-8481c")
    assert machine.slug("NVIDIA H200") == "nvidia-h200"


def test_machine_id_from_hardware():
    zen3 = "f25m1-avx2"
    assert machine.machine_id("AMD EPYC", 2, [], zen3) == "amd-epyc-f25m1-avx2-2c-nogpu"
    assert machine.machine_id("AMD EPYC", 16, ["NVIDIA H200"], zen3) == (
        "amd-epyc-f25m1-avx2-16c-1xnvidia-h200")
    two = machine.machine_id("X", 8, ["Tesla V100-SXM2-16GB", "Tesla V100-SXM2-16GB"], "")
    assert two == "x-8c-2xtesla-v100-sxm2-16gb"


def fake_cpuinfo(monkeypatch, fields: dict[str, str]) -> None:
    monkeypatch.setattr(machine, "_cpuinfo_field", fields.get)


@pytest.mark.parametrize("fields, kind", [
    # The cloud CPUs this project has run on: one vague name each, figures 2-7x apart.
    ({"model name": "AMD EPYC", "cpu family": "25", "model": "1", "flags": "fma avx2"},
     "f25m1-avx2"),                                              # Zen 3
    ({"model name": "AMD EPYC", "cpu family": "25", "model": "17",
      "flags": "fma avx2 avx512f"}, "f25m17-avx512"),            # Zen 4
    ({"model name": "AMD EPYC", "cpu family": "26", "model": "2",
      "flags": "fma avx2 avx512f"}, "f26m2-avx512"),             # Zen 5
    ({"model name": "Intel(R) Xeon(R) Processor", "cpu family": "6", "model": "207",
      "flags": "fma avx2 avx512f amx_tile"}, "f6m207-avx512"),   # Emerald Rapids
    # A hypervisor that hides AVX-512 makes another machine for the BLAS kernels.
    ({"model name": "AMD EPYC", "cpu family": "25", "model": "17", "flags": "fma avx2"},
     "f25m17-avx2"),
    ({"Features": "fp asimd"}, "neon"),                          # an Arm CPU: no family/model
    ({}, "scalar"),
])
def test_cpus_of_one_vague_name_get_ids_of_their_own(monkeypatch, fields, kind):
    fake_cpuinfo(monkeypatch, fields)
    assert machine.cpu_kind() == kind
    derived = machine.machine_id(fields.get("model name", "Neoverse-N1"), 2, [])
    assert derived == f"{machine.slug(fields.get('model name', 'Neoverse-N1'))}-{kind}-2c-nogpu"
    assert machine.check_machine_id(derived, own=True) == derived


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


def test_vector_width_is_the_widest_the_flags_offer():
    assert machine.vector_width({"sse2", "avx", "avx2", "fma", "avx512f"}) == {
        "instructions": "AVX-512", "bits": 512, "fma": True}
    assert machine.vector_width({"sse2", "avx"})["bits"] == 256
    assert machine.vector_width({"sse2"}) == {"instructions": "SSE2", "bits": 128, "fma": False}


def test_theoretical_peak_is_a_range_over_the_fma_pipes_and_says_how():
    avx512 = machine.vector_width({"avx512f", "fma"})
    peak = machine.theoretical_peak(2, (2.5, "the model name"), avx512)
    # 16 float32 lanes x 2 FLOP per FMA x 1 or 2 pipes, on 2 cores at 2.5 GHz
    assert (peak["gflops_low"], peak["gflops_high"]) == (160.0, 320.0)
    assert "2.50 GHz (the model name)" in peak["how"] and "32-64" in peak["how"]
    assert machine.theoretical_peak(2, (None, "not found"), avx512) is None


def test_this_machines_peak_is_stated_when_its_clock_is_known():
    facts = machine.hardware_facts()["cpu"]
    assert facts["vector"]["bits"] in (64, 128, 256, 512)
    peak = facts["peak_float32"]
    if machine.clock_ghz()[0]:
        assert 0 < peak["gflops_low"] < peak["gflops_high"]
        assert peak["cores"] <= facts["logical_cores"]


def test_names_the_project_writes_under_results_are_reserved():
    """Every name the project writes directly under results/ beside the machines' folders
    is refused as a machine id, wherever an id enters (config, import, folder names); the
    quoted "results/<name>" literals of the rules and scripts, and the archive importer's
    record, are all among them. Hidden names (an import's staging folders) never pass."""
    import re
    from pathlib import Path

    from d2lperf import archive

    repo = Path(__file__).resolve().parents[1]
    written = set()
    for path in [*repo.glob("workflow/**/*.smk"), *repo.glob("scripts/**/*.py"),
                 repo / "Snakefile", repo / "Makefile"]:
        written |= set(re.findall(r"""["']results/([^"'{}/<\s]+)["']""", path.read_text()))
    assert "kept-archives.json" in written
    hidden = {name for name in written if name.startswith(".")}  # the run lock, staging
    for name in hidden:  # never an id, by the pattern itself
        with pytest.raises(machine.MachineIdError):
            machine.check_machine_id(name)
    assert {archive.KEPT_RECORD, *(written - hidden)} <= machine.RESERVED_RESULT_NAMES
    for name in machine.RESERVED_RESULT_NAMES:
        for spelling in (name, name.upper()):  # one file on a case-insensitive disk
            with pytest.raises(machine.MachineIdError) as error:
                machine.check_machine_id(spelling, "config key machine =")
            assert str(error.value) == (
                f"config key machine = {spelling!r} is not a valid machine id: the project "
                f"writes {name} under results/ itself; choose another name")
    with pytest.raises(machine.MachineIdError, match="not a valid machine id"):
        machine.check_machine_id(archive.STAGING_PREFIX + "123-abc")


@pytest.mark.parametrize("text", ["box--kept", "box--system-blas", "box--haswell-kernel",
                                  "a--b"])
def test_an_id_of_this_machines_own_results_holds_no_variant_separator(text):
    """'--' joins an id and what the project derives from it (a BLAS variant's folder, a
    kept archive's): an id that held it could be another machine's variant. Such folder
    names are still ids where an id names a folder that is there (a baseline, an import)."""
    assert machine.check_machine_id(text) == text
    with pytest.raises(machine.MachineIdError) as error:
        machine.check_machine_id(text, "config key machine =", own=True)
    assert str(error.value) == (
        f"config key machine = {text!r} is not a valid machine id for this machine's "
        "results: '--' separates the folder names the project derives from an id "
        "(<id>--system-blas, <id>--<kernel>-kernel, <id>--kept); allowed: "
        f"{machine.MACHINE_ID_RULE}, without '--'")


@pytest.mark.parametrize("cpu, cores, gpus", [
    ("Intel(R) Xeon(R) -- Gold 6130 CPU @ 2.10GHz", 8, ["Tesla V100 -- SXM2", "A--B"]),
    ("kept-archives.json", 2, []),
    ("--", 1, ["--"]),
])
def test_a_derived_id_is_never_reserved_nor_a_variant(cpu, cores, gpus):
    derived = machine.machine_id(cpu, cores, gpus)
    assert "--" not in derived
    assert derived.casefold() not in {n.casefold() for n in machine.RESERVED_RESULT_NAMES}
