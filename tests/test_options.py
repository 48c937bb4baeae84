"""A section's options are declared once, in its ``section.py``: the JSON schema of its
preset entry and its documents' preset. The scripts' command lines are made from that
declaration (``arguments.add_options``): every option a script takes has its flag, typed
as the schema bounds it, its default the documents' value. Fast: no framework is
imported, only the parsers the scripts build."""

from __future__ import annotations

import argparse

import pytest

from d2lperf import arguments, groups, memory, sections, training
from d2lperf.arguments import non_negative_int, option_argument, positive_float, positive_int
from d2lperf.frameworks import REGISTRY
from d2lperf.presets import cli_args, for_framework

# The command line each section's scripts build where it is not ``harness.parser(...,
# section=<name>)``'s alone (their ``build_parser``): a section added by the recipe takes
# the default.
BUILDERS = {
    "async_memory": lambda name, framework: memory.parser(name),
    "auto_parallelism": lambda name, framework: arguments.two_gpu_parser(name),
    "ceilings": lambda name, framework: arguments.ceilings_parser(name),
    "data_parallel": lambda name, framework: groups.parser(name),
    "multi_gpu_gluon": lambda name, framework: training.parser(name, name),
    "multi_gpu_scratch": lambda name, framework: training.parser(name, name),
}
# Preset keys a script leaves to its manager (d2lperf.manager), which runs it.
MANAGERS = ("processes", "budget_seconds")


def script_parser(section: str, framework: str) -> argparse.ArgumentParser:
    build = BUILDERS.get(section, lambda name, f: arguments.parser(
        name, section=name, framework=f))
    return build(section, framework)


def scripts() -> list[tuple[str, str]]:
    """Every section and framework that has its script."""
    return [(name, framework) for name, entry in sections.SECTIONS.items()
            for framework in REGISTRY if entry.has(framework)]


def flags(p: argparse.ArgumentParser) -> set[str]:
    return {option for action in p._actions for option in action.option_strings}


def required(p: argparse.ArgumentParser) -> list[str]:
    """A value for each option the parser requires (--csv, --sidecar, --export-dir)."""
    return [word for action in p._actions if action.required
            for word in (action.option_strings[0], "x")]


@pytest.mark.parametrize("section, framework", scripts())
def test_every_option_a_script_takes_defaults_to_the_documents_value(section, framework):
    """Or to the default its schema declares, where leaving it out means something of its
    own (data-parallel's cpu_models: every model)."""
    p = script_parser(section, framework)
    documents = sections.SECTIONS[section].presets["documents"]
    schemas = arguments.option_schemas(section)
    keys = arguments.option_keys(section, framework)
    assert keys, f"{section} declares no workload option"
    for key in keys:
        wanted = schemas[key].get("default", documents.get(key))
        assert sections.flag(key) in flags(p), (section, framework, key)
        assert p.get_default(key) == wanted, (section, framework, key)


def test_an_option_whose_absence_means_every_model_keeps_that_default():
    """The documents train LeNet alone on CPU cores; left out, every model is trained
    there, on the command line as in a config that sets it to null."""
    p = groups.parser("data_parallel")
    assert sections.SECTIONS["data_parallel"].presets["documents"]["cpu_models"] == ["lenet"]
    assert p.get_default("cpu_models") is None


@pytest.mark.parametrize("preset", ["documents", "ci"])
@pytest.mark.parametrize("section, framework", scripts())
def test_every_preset_key_a_script_is_given_parses_back_to_its_value(preset, section,
                                                                      framework):
    """What ``plan.arguments`` hands a script from a preset (less what its manager
    takes) is on its command line, and reads back as the preset's value."""
    p = script_parser(section, framework)
    given = {k: v for k, v in for_framework(sections.SECTIONS[section].presets[preset],
                                            framework).items() if k not in MANAGERS}
    missing = {sections.flag(k) for k in given} - flags(p)
    assert not missing, (section, framework, missing)
    args = p.parse_args(required(p) + cli_args(given))
    assert {k: getattr(args, k) for k in given} == given


def test_a_scripts_command_line_leaves_out_what_only_another_framework_takes():
    assert "--compile-runs" in flags(arguments.parser("h", section="hybridize",
                                                      framework="pytorch"))
    assert "--compile-runs" not in flags(arguments.parser("h", section="hybridize",
                                                          framework="mxnet"))
    assert "--compile-runs" not in flags(arguments.parser("h", section="hybridize"))


@pytest.mark.parametrize("section, framework", scripts())
def test_every_workload_flag_says_what_it_is_and_the_documents_value(section, framework):
    """Its help is its option's own description (not a shared definition's, such as a
    count's), with the documents' value where they set one."""
    documents = sections.SECTIONS[section].presets["documents"]
    generic = arguments.definitions()["count"]["description"]
    schemas = arguments.option_schemas(section)
    for key in arguments.option_keys(section, framework):
        words = option_argument(schemas[key], documents.get(key))["help"]
        assert words and not words.startswith(" ".join(generic.split())), (section, key)
        if key in documents:
            assert words.endswith(f"(documents: {arguments.shown(documents[key])})")


@pytest.mark.parametrize("schema, documents, wanted", [
    (sections.COUNT, 1000, {"type": positive_int, "default": 1000}),
    (sections.TRAINING_SEED, None, {"type": non_negative_int, "default": None}),
    ({"type": ["integer", "null"], "minimum": 1}, None, {"type": positive_int,
                                                         "default": None}),
    ({"type": "array", "items": {"type": "number", "exclusiveMinimum": 0}}, [0.2, 0.1],
     {"type": positive_float, "nargs": "+", "default": [0.2, 0.1]}),
    ({"type": "array", "items": {"enum": ["lenet", "resnet18"]}}, ["lenet"],
     {"choices": ["lenet", "resnet18"], "nargs": "+", "default": ["lenet"]}),
    # a default of its own goes before the documents' value; the help names both
    ({"type": "array", "items": {"enum": ["lenet"]}, "default": None}, ["lenet"],
     {"choices": ["lenet"], "nargs": "+", "default": None}),
])
def test_an_options_schema_gives_its_flags_type_and_default(schema, documents, wanted):
    got = option_argument({**schema, "description": "what it is"}, documents)
    assert {k: v for k, v in got.items() if k != "help"} == wanted
    assert got["help"] == ("what it is" if documents is None else
                           f"what it is (documents: {arguments.shown(documents)})")


def test_a_schema_no_argument_type_checks_is_refused():
    """A flag that took what the config check refuses would be two rules: none is made."""
    for schema in ({"type": "integer", "minimum": 2}, {"type": "number"},
                   {"type": "string"}):
        with pytest.raises(TypeError, match="no command-line type"):
            option_argument(schema, None)


def test_the_declarations_give_their_scripts_options_and_nothing_else():
    """The declaration is the one place: no section carries a second list of its flags."""
    for entry in sections.SECTIONS.values():
        assert not hasattr(entry, "document_options") and not hasattr(entry, "document_runs")
