"""The table of sections is the one place a section is declared: the config check, the
section scripts' defaults and the documents' preset all agree with it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO, shipped_config
from d2lperf import sections
from d2lperf.configcheck import ConfigError, check_config, load_schema

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
CONFIG = shipped_config()


def test_every_preset_must_have_every_section_of_the_table():
    """A preset of the config's own is not completed from the declarations: it must give
    every section its entry."""
    schema = load_schema(SCHEMA)
    assert schema["$defs"]["preset"]["required"] == sections.names()
    config = shipped_config()
    mine = dict(config["presets"]["ci"])
    del mine["small_ops_parallel"]
    config["presets"]["mine"], config["preset"] = mine, "mine"
    with pytest.raises(ConfigError, match="presets.mine is missing a key: 'small_ops_parallel'"):
        check_config(config, SCHEMA)


def test_the_config_sets_a_sections_preset_key_by_key_and_null_leaves_one_out():
    """The config's presets go over the sections' declared entries, key by key; a key set
    to null is left out (the script's default); the run takes what the check checked."""
    from d2lperf import plan

    given = {"ci": {"hybridize": {"repeats": 7}, "multi_gpu_gluon": {"train_limit": None}}}
    completed = sections.complete_presets(given)
    assert completed["ci"]["hybridize"] == {**sections.SECTIONS["hybridize"].presets["ci"],
                                            "repeats": 7}
    assert "train_limit" not in completed["ci"]["multi_gpu_gluon"]
    assert completed["documents"] == sections.complete_presets(None)["documents"]
    config = {**shipped_config(), "presets": given, "preset": "ci"}
    check_config(config, SCHEMA)
    assert plan.chosen_preset(config)["hybridize"]["repeats"] == 7
    with pytest.raises(ConfigError, match="presets.ci.hybridize.repeats = 0"):
        check_config({**config, "presets": {"ci": {"hybridize": {"repeats": 0}}}}, SCHEMA)


def test_a_section_option_the_table_does_not_know_is_refused_naming_the_allowed():
    config = shipped_config()
    config["presets"]["ci"]["async_memory"]["processes"] = 2
    with pytest.raises(ConfigError, match="'processes' in presets.ci.async_memory; allowed keys "
                                          "there: batch_size, batches, repeats, report_every"):
        check_config(config, SCHEMA)


def test_the_documents_preset_runs_the_documents_workloads():
    """The shipped config runs the documents' preset as the sections declare it, the
    values their scripts' command lines take as defaults (tests/test_options.py): a
    pipeline run and a script run by hand measure the same workloads."""
    preset = CONFIG["presets"]["documents"]
    for name, entry in sections.SECTIONS.items():
        assert preset[name] == entry.presets["documents"], name
def test_which_frameworks_have_a_section_follows_from_their_scripts(tmp_path, monkeypatch):
    from d2lperf import frameworks

    for name, entry in sections.SECTIONS.items():
        # the documents' code has every section of the book's
        assert entry.has(frameworks.DOCUMENTS) or not entry.documents_code, name
    monkeypatch.setattr(sections, "SCRIPTS", tmp_path)
    (tmp_path / "hybridize").mkdir()
    (tmp_path / "hybridize" / "hybridize_toy.py").write_text("")
    assert sections.SECTIONS["hybridize"].has("toy")
    assert not sections.SECTIONS["ceilings"].has("toy")
    assert not sections.SECTIONS["hybridize"].has("mxnet")  # its folder is elsewhere now


def test_the_table_loads_nothing_but_the_standard_library():
    """The Snakefile reads it at every start: it must not import the library's heavy parts."""
    program = ("import sys; sys.path.insert(0, 'scripts'); import d2lperf.sections, "
               "d2lperf.frameworks; print(sorted(m for m in sys.modules if m.startswith("
               "('d2lperf', 'numpy', 'pandas', 'torch', 'mxnet'))))")
    done = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "['d2lperf', 'd2lperf.frameworks', 'd2lperf.sections']"


@pytest.mark.parametrize("section, gpu_everywhere, gpu_count, on_cpu, kind", [
    # a section with a process per device: on the GPUs wherever there are any, in every
    # framework (MXNet's too), else on cores
    ("data_parallel", False, 8, False, "gpu"),
    ("data_parallel", True, 1, False, "gpu"),
    ("data_parallel", False, 0, False, "cpu"),
    # written for two GPUs: the CPU stand-in where the machine has fewer
    ("multi_gpu_scratch", False, 1, False, "cpu"),
    ("multi_gpu_scratch", False, 2, False, "gpu"),
    ("multi_gpu_scratch", True, 1, False, "gpu"),  # PyTorch: its GPU, the other run skipped
    # written for one GPU, no stand-in: GPU contexts (skipped, saying why) unless the config
    # runs it on the CPU
    ("auto_parallelism", False, 0, False, "gpu"),
    ("auto_parallelism", False, 0, True, "cpu"),
    ("auto_parallelism", True, 0, True, "cpu"),
    # the others: on a GPU where the framework queues work only there, else no --on at all
    ("hybridize", True, 1, False, "gpu"),
    ("hybridize", True, 0, False, "cpu"),
    ("hybridize", False, 4, False, None),
    ("ceilings", True, 4, False, None),  # measures every device there is
])
def test_each_job_runs_on_the_device_its_section_and_framework_call_for(
        section, gpu_everywhere, gpu_count, on_cpu, kind):
    assert sections.device_kind(section, gpu_everywhere, gpu_count, on_cpu) == kind


def test_a_section_with_a_process_per_device_asks_a_gpu_per_device_in_every_framework():
    """MXNet's data-parallel job trains on GPUs where there are any (device_kind), so its
    SLURM job asks for them as PyTorch's does."""
    options = {"device_counts": [1, 2, 4, 8]}
    assert sections.slurm_resources("data_parallel", False, "auto", options)["gpu"] == 8
    assert sections.slurm_resources("data_parallel", True, "auto", options)["gpu"] == 8


def test_every_model_a_section_trains_is_defined_once_in_a_section_of_the_book():
    """One definition of each net: the section that ``defines`` it holds the book's code,
    and another section's scripts (data-parallel) and the FLOP count load it from there."""
    trained = {m for s in sections.SECTIONS.values() for m in s.models}
    for model in trained:
        owners = [s.name for s in sections.SECTIONS.values() if model in s.defines]
        assert len(owners) == 1, (model, owners)
        assert model in sections.SECTIONS[owners[0]].models
    with pytest.raises(KeyError, match="no section defines the model 'vgg'"):
        sections.model_script("pytorch", "vgg")
