import pandas as pd
import pytest

from conftest import REPO
from d2lperf import sections
from d2lperf.tables import (
    TableError,
    load_reference,
    load_samples,
    numbers_in,
    output_matches,
)

SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"
HEADER = "section,case,metric,unit,repeat,value,epoch,devices\n"


def test_valid_samples_load(tmp_path):
    path = tmp_path / "samples.csv"
    path.write_text(HEADER + "hybridize,mlp,time,s,0,0.25,,\n"
                    "multigpu,lenet,accuracy,fraction,0,0.7,3,cpu(0)\n")
    frame = load_samples(path, SCHEMA)
    assert list(frame["value"]) == [0.25, 0.7]
    assert frame["epoch"].isna().tolist() == [True, False]


@pytest.mark.parametrize("row, complaint", [
    ("hybridize,mlp,time,s,0,fast,,", "row 3: value"),
    ("hybridize,mlp,speed,s,0,0.1,,", "row 3: metric"),
    ("hybridize,mlp,time,s,-1,0.1,,", "row 3: repeat"),
    ("Hybridize!,mlp,time,s,0,0.1,,", "row 3: section"),
])
def test_bad_sample_rows_name_file_and_row(tmp_path, row, complaint):
    path = tmp_path / "samples.csv"
    path.write_text(HEADER + "hybridize,mlp,time,s,0,0.25,,\n" + row + "\n")
    with pytest.raises(TableError) as error:
        load_samples(path, SCHEMA)
    assert str(error.value).startswith(f"{path}: {complaint}")


def test_shipped_reference_has_unique_keys():
    reference = load_reference()
    assert len(reference) > 0
    # every section's own table names only that section, and they read in the report's order
    for path in sections.tables("reference") + sections.tables("labels"):
        assert set(pd.read_csv(path)["section"]) == {path.parent.name}, path
    assert list(dict.fromkeys(reference["section"])) == [
        s for s in sections.names() if s in set(reference["section"])]


def test_duplicate_reference_key_names_both_rows(tmp_path):
    lines = (REPO / "scripts/sections/hybridize/reference.csv").read_text(
        encoding="utf-8").splitlines()
    path = tmp_path / "reference.csv"
    path.write_text("\n".join(lines[:3] + [lines[1]]) + "\n", encoding="utf-8")
    with pytest.raises(TableError, match=r"row 4: duplicate key seeds/000/hybridize/"
                                         r"mlp_before_hybridize/time \(first at row 2\)"):
        load_reference(path)


def test_a_key_in_two_sections_tables_names_both_files(tmp_path):
    first = REPO / "scripts/sections/hybridize/reference.csv"
    copy = tmp_path / "reference.csv"
    copy.write_text(first.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(TableError, match=rf"{copy}: row 2: duplicate key .* \(first at "
                                         rf"{first}: row 2\)"):
        load_reference(first, copy)


def test_numbers_in_a_printed_array():
    printed = "\n[[-0.1137567  -0.05474833]]\n<NDArray 1x2 @cpu(0)>"
    assert numbers_in(printed) == [-0.1137567, -0.05474833]
    assert numbers_in("[2.0003661e+09]") == [2.0003661e9]
    pair = "[\n[[1. 1.]]\n<NDArray 1x2 @cpu(0)>,\n[[2. 2.]]\n<NDArray 1x2 @cpu(1)>]"
    assert numbers_in(pair) == [1.0, 1.0, 2.0, 2.0]
    assert numbers_in("(array([[ 9.4e-07, -8.7e-08]], ctx=gpu(1)))") == [9.4e-07, -8.7e-08]


def test_output_rules():
    doc = "[[-0.1137567  -0.05474834]]"
    assert output_matches(doc, {"text": "", "values": [[-0.1137567, -0.05474833]]}, "numbers")[0]
    assert not output_matches(doc, {"text": "", "values": [[-0.1137567, -0.0548]]}, "numbers")[0]
    assert not output_matches(doc, {"text": "", "values": [[-0.1137567]]}, "numbers")[0]
    module = "<module 'mxnet.symbol' from 'D:\\\\x\\\\__init__.py'>"
    assert output_matches(module, {"text": "mxnet.symbol"}, "module")[0]
    assert not output_matches(module, {"text": "mxnet.ndarray"}, "module")[0]
    assert output_matches("<Symbol data>", {"text": "<Symbol data>"}, "text")[0]
    assert output_matches("[2.0003661e+09]", {"text": "", "values": [2.00035e9]}, "sum")[0]
    assert not output_matches("[2.0003661e+09]", {"text": "", "values": [2.1e9]}, "sum")[0]
    assert output_matches("[[1e-06 2e-06]]", {"text": "", "values": [[5, 6]]}, "shape")[0]
    with pytest.raises(TableError, match="unknown match rule"):
        output_matches("x", {"text": "x"}, "fuzzy")


NEW_HEADER = ("section,framework,case,metric,unit,process,repeat,position,value,epoch,"
              "devices\n")


def test_samples_with_framework_process_and_position_load(tmp_path):
    path = tmp_path / "samples.csv"
    path.write_text(NEW_HEADER + "hybridize,pytorch,mlp,time,s,3,1,2,0.25,,\n")
    frame = load_samples(path, SCHEMA)
    row = frame.iloc[0]
    assert (row["framework"], row["process"], row["repeat"], row["position"]) == (
        "pytorch", 3, 1, 2)


def test_tables_from_before_processes_and_frameworks_read_as_mxnet_process_0(tmp_path):
    path = tmp_path / "samples.csv"
    path.write_text(HEADER + "hybridize,mlp,time,s,0,0.25,,\n")
    row = load_samples(path, SCHEMA).iloc[0]
    assert (row["framework"], row["process"]) == ("mxnet", 0) and pd.isna(row["position"])


@pytest.mark.parametrize("cells, where", [
    ("hybridize,tensorflow,mlp,time,s,0,0,0,0.25,,", "framework"),
    ("hybridize,mxnet,mlp,time,s,-1,0,0,0.25,,", "process"),
    ("hybridize,mxnet,mlp,time,s,0,0,first,0.25,,", "position"),
])
def test_bad_framework_process_or_position_names_the_row(tmp_path, cells, where):
    path = tmp_path / "samples.csv"
    path.write_text(NEW_HEADER + cells + "\n")
    with pytest.raises(TableError, match=f"row 2: {where}"):
        load_samples(path, SCHEMA)
