"""Bad configuration stops the run before any rule, naming the key and what is allowed."""

import copy

import pytest
import yaml

from conftest import REPO, copy_workflow, snakemake
from d2lperf.configcheck import ConfigError, check_config

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
CONFIG = yaml.safe_load((REPO / "config/config.yaml").read_text())


def test_shipped_config_is_valid():
    check_config(CONFIG, SCHEMA)


def changed(path, value):
    config = copy.deepcopy(CONFIG)
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return config


@pytest.mark.parametrize("path, value, message", [
    (["preset"], "fast", "unknown preset 'fast' (config key 'preset'); allowed: ci, documents"),
    (["presets", "ci", "hybridize", "repeats"], 0, "presets.ci.hybridize.repeats = 0"),
    (["presets", "ci", "hybridize", "repeats"], -3, "presets.ci.hybridize.repeats = -3"),
    (["presets", "ci", "hybridize", "warmup"], -1, "presets.ci.hybridize.warmup = -1"),
    (["threads"], 0, "threads = 0: must be a positive integer or 'auto'"),
    (["presets", "ci", "multi_gpu_gluon", "devices"], [1, 0], "multi_gpu_gluon.devices.1 = 0"),
    (["presets", "ci", "multi_gpu_gluon", "learning_rates"], [0.1, -1],
     "learning_rates.1 = -1"),
    (["gpu_sections_on_cpu"], "true", "gpu_sections_on_cpu = 'true': must be true or false "
     "(on Snakemake's command line: True or False)"),
    (["threads"], "many", "must be a positive integer or 'auto'"),
    (["machine"], "../elsewhere", "machine = '../elsewhere'"),
    (["sections"], ["hybridise"], "sections.0 = 'hybridise': 'hybridise' is not one of "
     "['hybridize', 'async_computation'"),
    (["sections"], [], "sections = []: [] should be non-empty"),
])
def test_bad_values_name_the_key(path, value, message):
    with pytest.raises(ConfigError) as error:
        check_config(changed(path, value), SCHEMA)
    assert message in str(error.value)


def test_training_lists_must_pair_up():
    config = changed(["presets", "documents", "multi_gpu_gluon", "batch_sizes"], [256])
    with pytest.raises(ConfigError) as error:
        check_config(config, SCHEMA)
    assert "presets.documents.multi_gpu_gluon: devices, batch_sizes, learning_rates" in str(
        error.value)
    assert "(devices has 2, batch_sizes has 1, learning_rates has 2)" in str(error.value)


def test_unknown_key_lists_the_allowed_ones():
    config = changed(["presets", "ci", "hybridize", "passes"], 10)
    with pytest.raises(ConfigError) as error:
        check_config(config, SCHEMA)
    assert str(error.value) == (
        "unknown config key 'passes' in presets.ci.hybridize; "
        "allowed keys there: budget_seconds, compile_runs, forward_passes, processes, repeats, "
        "seed, warmup")


@pytest.mark.parametrize("arguments, message", [
    (["--config", "preset=nope"], "unknown preset 'nope'"),
    (["--config", "colour=blue"], "unknown config key 'colour'"),
    (["--configfile", "zero-repeats.yaml"], "presets.ci.hybridize.repeats = 0"),
    (["--configfile", "negative-repeats.yaml"], "presets.documents.hybridize.repeats = -5"),
])
def test_snakemake_refuses_before_any_job(tmp_path, arguments, message):
    work = copy_workflow(tmp_path / "wf")
    for name, preset, repeats in (("zero", "ci", 0), ("negative", "documents", -5)):
        config = changed(["presets", preset, "hybridize", "repeats"], repeats)
        (work / f"{name}-repeats.yaml").write_text(yaml.safe_dump(config))
    done = snakemake(work, "--cores", "1", *arguments)
    assert done.returncode != 0
    assert "Invalid configuration" in done.stderr + done.stdout
    assert message in done.stderr + done.stdout
    assert not (work / "results").exists()


def test_framework_only_options_reach_only_that_frameworks_script():
    from d2lperf.presets import for_framework

    hybridize = {"forward_passes": 100, "repeats": 3, "compile_runs": 1}
    assert for_framework(hybridize, "pytorch") == hybridize
    assert for_framework(hybridize, "mxnet") == {"forward_passes": 100, "repeats": 3}


def test_how_much_to_measure_may_differ_by_framework():
    """Rounds cost differently (a PyTorch round of MLP passes is a fraction of MXNet's,
    its process overhead is not): a timing option may name a value per framework."""
    from d2lperf.presets import for_framework

    hybridize = {"forward_passes": 100, "repeats": {"mxnet": 10, "pytorch": 30},
                 "budget_seconds": {"mxnet": 180, "pytorch": 240.5}}
    assert for_framework(hybridize, "pytorch") == {
        "forward_passes": 100, "repeats": 30, "budget_seconds": 240.5}
    assert for_framework(hybridize, "mxnet") == {
        "forward_passes": 100, "repeats": 10, "budget_seconds": 180}
    check_config(changed(["presets", "ci", "hybridize", "repeats"],
                         {"mxnet": 3, "pytorch": 5}), SCHEMA)
    only_mxnet = changed(["presets", "ci", "hybridize", "processes"], {"mxnet": 2})
    only_mxnet["frameworks"] = ["mxnet"]
    check_config(only_mxnet, SCHEMA)


@pytest.mark.parametrize("path, value, message", [
    (["presets", "ci", "hybridize", "forward_passes"], {"mxnet": 100, "pytorch": 200},
     "config key presets.ci.hybridize.forward_passes = {'mxnet': 100, 'pytorch': 200}: one "
     "value for every framework (the frameworks do the same work); only how much is measured "
     "may differ by framework: budget_seconds, processes, repeats, warmup"),
    (["presets", "ci", "hybridize", "repeats"], {"mxnet": 3, "jax": 5},
     "config key presets.ci.hybridize.repeats: unknown framework 'jax'; allowed: mxnet, "
     "pytorch"),
    (["presets", "ci", "hybridize", "repeats"], {"mxnet": 3, "pytorch": 0},
     "config key presets.ci.hybridize.repeats.pytorch = 0: 0 is less than the minimum of 1"),
    (["presets", "ci", "hybridize", "repeats"], {},
     "config key presets.ci.hybridize.repeats = {}: a number, or one per framework"),
    (["presets", "ci", "hybridize", "repeats"], {"mxnet": 3},
     "config key presets.ci.hybridize.repeats names no value for pytorch (config key "
     "frameworks runs it); name one for each of: mxnet, pytorch"),
])
def test_bad_per_framework_values_name_the_key(path, value, message):
    with pytest.raises(ConfigError) as error:
        check_config(changed(path, value), SCHEMA)
    assert message in str(error.value)
