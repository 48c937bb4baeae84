"""Bad configuration stops the run before any rule, naming the key and what is allowed."""

import copy

import pytest
import yaml

from conftest import REPO, copy_workflow, shipped_config, snakemake
from d2lperf.configcheck import ConfigError, check_config
from d2lperf.frameworks import REGISTRY

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
CONFIG = shipped_config()


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


def test_more_nodes_than_the_largest_device_count_is_refused():
    config = changed(["presets", "ci", "data_parallel", "nodes"], 3)  # counts [1, 2]
    with pytest.raises(ConfigError) as error:
        check_config(config, SCHEMA)
    assert "presets.ci.data_parallel.nodes = 3: at most the largest of device_counts (2)" in str(
        error.value)
    check_config(changed(["presets", "ci", "data_parallel", "nodes"], 2), SCHEMA)


def test_unknown_key_lists_the_allowed_ones():
    config = changed(["presets", "ci", "hybridize", "passes"], 10)
    with pytest.raises(ConfigError) as error:
        check_config(config, SCHEMA)
    assert str(error.value) == (
        "unknown config key 'passes' in presets.ci.hybridize; "
        "allowed keys there: budget_seconds, compile_runs, forward_passes, processes, repeats, "
        "seed, warmup")


@pytest.mark.slow  # Snakemake
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


def test_a_framework_a_value_does_not_name_takes_its_default_else_the_documents():
    """A framework added later needs no edit of the presets."""
    from d2lperf.presets import for_framework

    check_config(changed(["presets", "ci", "hybridize", "repeats"], {"mxnet": 3}), SCHEMA)
    check_config(changed(["presets", "ci", "hybridize", "repeats"],
                         {"pytorch": 5, "default": 4}), SCHEMA)
    assert for_framework({"repeats": {"mxnet": 3}}, "pytorch") == {"repeats": 3}
    assert for_framework({"repeats": {"mxnet": 3, "default": 4}}, "pytorch") == {"repeats": 4}
    assert for_framework({"repeats": {"mxnet": 3, "default": 4}}, "mxnet") == {"repeats": 3}


@pytest.mark.parametrize("path, value, message", [
    (["presets", "ci", "hybridize", "forward_passes"], {"mxnet": 100, "pytorch": 200},
     "config key presets.ci.hybridize.forward_passes = {'mxnet': 100, 'pytorch': 200}: one "
     "value for every framework (the frameworks do the same work); only how much is measured "
     "may differ by framework: budget_seconds, processes, repeats, warmup"),
    (["presets", "ci", "hybridize", "repeats"], {"mxnet": 3, "tensorflow": 5},
     "config key presets.ci.hybridize.repeats: unknown framework 'tensorflow'; allowed: "
     + ", ".join(REGISTRY)),
    (["presets", "ci", "hybridize", "repeats"], {"mxnet": 3, "pytorch": 0},
     "config key presets.ci.hybridize.repeats.pytorch = 0: out of bounds; allowed: an "
     "integer from 1 to 10000"),
    (["presets", "ci", "hybridize", "repeats"], {},
     "config key presets.ci.hybridize.repeats = {}: a number, or one per framework"),
    (["presets", "ci", "hybridize", "repeats"], {"pytorch": 3},
     "config key presets.ci.hybridize.repeats names no value for mxnet (config key "
     "frameworks runs it); name one for each, or a 'default' (a framework not named takes "
     "it, else mxnet's value)"),
])
def test_bad_per_framework_values_name_the_key(path, value, message):
    with pytest.raises(ConfigError) as error:
        check_config(changed(path, value), SCHEMA)
    assert message in str(error.value)


# JSON Schema's "integer" admits 2.0 and its comparisons let NaN through every bound, so
# the check tells numbers apart by their Python type: what reaches a command line or an
# environment variable (OMP_NUM_THREADS=2.0 stops libgomp without naming the key) must
# already be what the scripts parse.
@pytest.mark.parametrize("path, value, message", [
    (["threads"], 2.0, "config key threads = 2.0: must be a positive integer (written without "
     "a decimal point: 2, not 2.0) or 'auto'"),
    (["threads"], True, "config key threads = True: must be a positive integer"),
    (["presets", "ci", "hybridize", "repeats"], 2.0,
     "config key presets.ci.hybridize.repeats = 2.0: must be an integer from 1 to 10000, "
     "written without a decimal point (2, not 2.0)"),
    (["presets", "ci", "hybridize", "repeats"], 2.5,
     "config key presets.ci.hybridize.repeats = 2.5: must be an integer from 1 to 10000"),
    (["presets", "ci", "hybridize", "repeats"], True,
     "config key presets.ci.hybridize.repeats = True: must be an integer from 1 to 10000 "
     "(true and false are not numbers)"),
    (["presets", "ci", "hybridize", "repeats"], {"mxnet": 2.0, "pytorch": 3},
     "config key presets.ci.hybridize.repeats.mxnet = 2.0: must be an integer from 1 to "
     "10000, written without a decimal point (2, not 2.0)"),
    (["presets", "ci", "hybridize", "warmup"], 1.0,
     "config key presets.ci.hybridize.warmup = 1.0: must be an integer from 0 to 1000"),
    (["presets", "ci", "hybridize", "seed"], 0.0,
     "config key presets.ci.hybridize.seed = 0.0: must be an integer of at least 0"),
    (["presets", "ci", "async_computation", "size"], 500.0,
     "config key presets.ci.async_computation.size = 500.0: must be an integer from 1 to "
     "100000"),
    (["presets", "ci", "ceilings", "copy_mb"], "32",
     "config key presets.ci.ceilings.copy_mb = '32': must be an integer from 1 to 16384 "
     "(a string here: write the number without quotes; inside [...] or {...} on Snakemake's "
     "--config line every value is a string, so set it in a config file)"),
    (["presets", "ci", "ceilings", "dot_sizes"], [500, 1e3],
     "config key presets.ci.ceilings.dot_sizes.1 = 1000.0: must be an integer from 1 to 100000"),
    (["presets", "ci", "multi_gpu_gluon", "devices"], [1, 2.0],
     "config key presets.ci.multi_gpu_gluon.devices.1 = 2.0: must be an integer from 1 to 16"),
    (["presets", "ci", "multi_gpu_gluon", "epochs"], False,
     "config key presets.ci.multi_gpu_gluon.epochs = False: must be an integer from 1 to "
     "1000"),
    (["presets", "ci", "multi_gpu_gluon", "data_workers"], -1,
     "config key presets.ci.multi_gpu_gluon.data_workers = -1"),
    (["presets", "ci", "multi_gpu_gluon", "data_workers"], 0.0,
     "config key presets.ci.multi_gpu_gluon.data_workers = 0.0: must be an integer from 0 "
     "to 64"),
    (["presets", "ci", "multi_gpu_gluon", "train_limit"], 128.0,
     "config key presets.ci.multi_gpu_gluon.train_limit = 128.0: must be an integer"),
    (["presets", "ci", "multi_gpu_gluon", "learning_rates"], [0.1, float("nan")],
     "config key presets.ci.multi_gpu_gluon.learning_rates.1 = nan: must be a finite number "
     "above 0 (nan is not one)"),
    (["presets", "ci", "multi_gpu_gluon", "learning_rates"], [0.1, float("inf")],
     "config key presets.ci.multi_gpu_gluon.learning_rates.1 = inf: must be a finite number "
     "above 0 (inf is not one)"),
    (["presets", "ci", "multi_gpu_gluon", "learning_rates"], [0.1, True],
     "learning_rates.1 = True: must be a finite number above 0 (true and false are not "
     "numbers)"),
    (["presets", "ci", "hybridize", "budget_seconds"], float("nan"),
     "config key presets.ci.hybridize.budget_seconds = nan: must be a finite number above 0 "
     "and at most 86400 (nan is not one)"),
    (["presets", "ci", "hybridize", "budget_seconds"], {"mxnet": 2, "pytorch": float("nan")},
     "config key presets.ci.hybridize.budget_seconds.pytorch = nan: must be a finite number"),
    (["practical_band"], float("nan"),
     "config key practical_band = nan: must be a finite number above 0 and below 1 (nan is "
     "not one)"),
    (["practical_band"], "0.05",
     "config key practical_band = '0.05': must be a finite number above 0 and below 1 (a "
     "string here: write the number without quotes;"),
    (["probe_seconds"], float("-inf"),
     "config key probe_seconds = -inf: must be a finite number above 0 and at most 10 (-inf "
     "is not one)"),
    (["probe_seconds"], False, "config key probe_seconds = False: must be a finite number"),
    (["data_download"], "false", "config key data_download = 'false': must be true or false"),
    (["data_download"], 1, "config key data_download = 1: must be true or false"),
    (["machine"], 123, "config key machine = 123: must be a string (123 here: Snakemake's "
     "--config reads a value of digits as a number, quoted or not; write it in a config file, "
     "in quotes: machine: \"123\")"),
    (["data_dir"], True, "config key data_dir = True: must be a string (True here: YAML "
     "reads an unquoted yes, no, true or false as one; put it in quotes)"),
    (["machine"], None, "config key machine = None: must be a string (null here: on "
     "Snakemake's command line, machine= with nothing after it gives null; leave the key "
     "out instead)"),
])
def test_numbers_and_booleans_have_their_exact_type(path, value, message):
    with pytest.raises(ConfigError) as error:
        check_config(changed(path, value), SCHEMA)
    assert message in str(error.value)


@pytest.mark.parametrize("path, value", [
    (["presets", "ci", "hybridize", "budget_seconds"], 2.5),
    (["presets", "ci", "hybridize", "budget_seconds"], {"mxnet": 2, "pytorch": 2.5}),
    (["practical_band"], 0.1),
    (["probe_seconds"], 1),
    (["presets", "ci", "multi_gpu_gluon", "learning_rates"], [1, 0.5]),
])
def test_numbers_where_any_number_is_meant_may_be_whole(path, value):
    check_config(changed(path, value), SCHEMA)


@pytest.mark.parametrize("broken", [False, True])
def test_a_preset_name_must_be_a_string(broken):
    """YAML reads an unquoted name of digits as a number; sorting the names, or the errors
    by where they are, would fail."""
    preset = copy.deepcopy(CONFIG["presets"]["ci"])
    config = changed(["presets", 2024], preset)
    if broken:
        preset["hybridize"]["repeats"] = 0
        config["presets"]["ci"]["hybridize"]["repeats"] = 0
    with pytest.raises(ConfigError) as error:
        check_config(config, SCHEMA)
    assert str(error.value).startswith("config section presets: the name 2024 is not a "
                                       "string; allowed: a name in quotes ('2024')")


@pytest.mark.parametrize("value, message", [
    ("kept-archives.json", "config key machine = 'kept-archives.json' is not a valid machine "
     "id: the project writes kept-archives.json under results/ itself; choose another name "
     "(or empty)"),
    ("KEPT-ARCHIVES.JSON", "the project writes kept-archives.json under results/ itself"),
    ("box--kept", "config key machine = 'box--kept' is not a valid machine id for this "
     "machine's results: '--' separates the folder names the project derives from an id "
     "(<id>--system-blas, <id>--<kernel>-kernel, <id>--kept); allowed: 1 to 120 characters"),
    ("box--system-blas", "config key machine = 'box--system-blas' is not a valid machine id"),
    ("box--haswell-kernel", "'--' separates the folder names the project derives"),
])
def test_machine_may_not_take_a_name_the_project_writes_under_results(value, message):
    with pytest.raises(ConfigError) as error:
        check_config(changed(["machine"], value), SCHEMA)
    assert message in str(error.value)


def test_baseline_may_name_a_variant_but_not_a_file_of_the_project():
    """The baseline names any folder under results/, a BLAS variant's or a kept archive's
    included; never the kept archives' record."""
    check_config(changed(["baseline_machine"], "box--system-blas"), SCHEMA)
    check_config(changed(["baseline_machine"], "box--kept"), SCHEMA)
    with pytest.raises(ConfigError, match="config key baseline_machine = 'kept-archives.json' "
                       "is not a valid machine id: the project writes"):
        check_config(changed(["baseline_machine"], "kept-archives.json"), SCHEMA)


@pytest.mark.slow  # Snakemake
@pytest.mark.parametrize("setting, message", [
    ("threads=2.0", "config key threads = 2.0: must be a positive integer"),
    ("practical_band=nan", "config key practical_band = nan: must be a finite number"),
    ("machine=kept-archives.json", "config key machine = 'kept-archives.json' is not a valid "
     "machine id"),
])
def test_snakemake_refuses_wrong_types_before_any_job(tmp_path, setting, message):
    """Snakemake's --config reads 2.0 as a float and nan as a float NaN."""
    work = copy_workflow(tmp_path / "wf")
    done = snakemake(work, "-n", "--cores", "1", "--config", "preset=ci", setting)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Invalid configuration" in said and message in said
    assert "Traceback" not in said


def test_a_config_that_asks_for_yte_runs_python_before_any_check(tmp_path):
    """What the README warns of: Snakemake renders a config file that sets __use_yte__ as a
    template, running its expressions, as it loads the file, before the workflow's code
    (and so its config check) runs; and the marker is gone from what the check sees. So a
    config file is read like a script, and the check cannot refuse it."""
    from snakemake.common.configfile import load_configfile

    ran = tmp_path / "ran"
    path = tmp_path / "config.yaml"
    path.write_text(f'__use_yte__: true\nthreads: ?open({str(ran)!r}, "w").write("x")\n')
    config = load_configfile(str(path))
    assert ran.exists()
    assert config == {"threads": 1}


def integer_schemas(schema, path=()):
    """Every integer a config may hold, by where it is: (path, its schema), $refs followed."""
    root = schema
    def walk(node, where):
        if isinstance(node, dict):
            if "$ref" in node:
                yield from walk(root["$defs"][node["$ref"].rsplit("/", 1)[-1]], where)
                return
            if node.get("type") == "integer":
                yield where, node
            for key, value in node.items():
                if key != "$defs":
                    yield from walk(value, (*where, key))
        elif isinstance(node, list):
            for item in node:
                yield from walk(item, where)
    return list(walk(schema, path))


def test_every_count_has_an_upper_bound_and_says_why():
    """repeats: 1000000000 once passed the check and grew the manager to 2 GB before any
    timing: every count a config may set is bounded, the bound documented where it is."""
    from d2lperf.configcheck import load_schema

    counts = [(where, node) for where, node in integer_schemas(load_schema(SCHEMA))
              if "seed" not in where]
    assert len(counts) > 20
    unbounded = [".".join(where) for where, node in counts if "maximum" not in node]
    assert not unbounded
    schema = yaml.safe_load(SCHEMA.read_text())
    for name in ("count", "repeats", "processes", "warmup"):
        assert str(schema["$defs"][name]["maximum"]) in schema["$defs"][name]["description"] \
            .replace(",", "").replace("a million", "1000000")


@pytest.mark.parametrize("path, value, message", [
    (["presets", "ci", "hybridize", "repeats"], 1_000_000_000,
     "config key presets.ci.hybridize.repeats = 1000000000: out of bounds; allowed: an "
     "integer from 1 to 10000 (timed rounds per process, each a sample row per case"),
    (["presets", "ci", "hybridize", "processes"], {"mxnet": 2, "pytorch": 5000},
     "config key presets.ci.hybridize.processes.pytorch = 5000: out of bounds; allowed: an "
     "integer from 1 to 100 ("),
    (["presets", "ci", "hybridize", "forward_passes"], 10**9,
     "config key presets.ci.hybridize.forward_passes = 1000000000: out of bounds; allowed: "
     "an integer from 1 to 1000000 (a workload's count"),
    (["presets", "ci", "multi_gpu_gluon", "epochs"], 10**6,
     "config key presets.ci.multi_gpu_gluon.epochs = 1000000: out of bounds; allowed: an "
     "integer from 1 to 1000 ("),
    (["presets", "ci", "hybridize", "budget_seconds"], 1e9,
     "config key presets.ci.hybridize.budget_seconds = 1000000000.0: out of bounds; allowed: "
     "a number above 0 and at most 86400 (seconds a section's stages"),
])
def test_a_count_past_its_bound_is_refused_naming_key_value_and_bounds(path, value, message):
    with pytest.raises(ConfigError) as error:
        check_config(changed(path, value), SCHEMA)
    assert message in str(error.value)


@pytest.mark.parametrize("written, advice", [
    ("1.0e9", "write 1.0e+9 or 1000000000"),
    ("1e3", "write 1.0e+3 or 1000"),
    ("25e-2", "write 25.0e-2 or 0.25"),
])
def test_a_number_yaml_reads_as_text_gets_advice_that_fits_it(written, advice):
    """YAML 1.1 reads 1.0e9 (no sign in the exponent) as text: the advice is how to write
    it as a number, not to remove quotes that are not there."""
    config = yaml.safe_load(yaml.safe_dump(CONFIG).replace(
        "budget_seconds: 2\n", f"budget_seconds: {written}\n", 1))
    with pytest.raises(ConfigError) as error:
        check_config(config, SCHEMA)
    said = str(error.value)
    assert f"budget_seconds = '{written}': must be a finite number above 0 and at most 86400 " \
           f"(YAML reads {written} as text, not a number: {advice})" in said
    assert "quotes" not in said
