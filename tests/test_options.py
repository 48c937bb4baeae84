"""A section's options are declared once, in its ``section.py``: the JSON schema of its
preset entry and its documents' preset. The scripts' command lines are made from that
declaration (``arguments.add_options``): every option a script takes has its flag, typed
as the schema bounds it, its default the documents' value. Fast: no framework is
imported, only the parsers the scripts build."""

from __future__ import annotations

import pytest

from d2lperf import arguments, sections
from d2lperf.arguments import non_negative_int, option_argument, positive_float, positive_int


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
