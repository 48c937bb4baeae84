"""summarise.py with two frameworks: every document figure once per framework, verdicts and
printed outputs per framework."""

import json
import subprocess

import pandas as pd
import pytest

from conftest import REPO, WORKFLOW_PYTHON
from d2lperf.commands import summarise
from d2lperf.results import migrate_run
from d2lperf.tables import load_reference

HEADER = "section,framework,case,metric,unit,process,repeat,position,value,epoch,devices\n"


def section(root, folder, framework, cases, outputs=None):
    out = root / folder
    out.mkdir(parents=True)
    rows = [f"hybridize,{framework},{case},time,s,{p},{r},{i},{value},,"
            for i, (case, value) in enumerate(cases.items()) for p in range(2) for r in range(3)]
    (out / "samples.csv").write_text(HEADER + "\n".join(rows) + "\n")
    (out / "run.json").write_text(json.dumps({
        "section": "hybridize", "framework": framework, "status": "ok",
        "parameters": {"forward_passes": 1000}, "outputs": outputs or {}}))
    return out / "run.json"


@pytest.mark.slow  # over a second on 2 cores
def test_two_frameworks_side_by_side(tmp_path):
    mxnet = section(tmp_path, "hybridize", "mxnet",
                    {"mlp_before_hybridize": 0.4, "mlp_before_hybridize_twin": 0.4,
                     "mlp_after_hybridize": 0.2},
                    {"symbolic_program_result": {"text": "10"},
                     "mlp_symbolic_output": {"text": "<Symbol dense5_fwd>"}})
    torch = section(tmp_path, "hybridize_pytorch", "pytorch",
                    {"mlp_before_hybridize": 0.3, "mlp_before_hybridize_twin": 0.3,
                     "mlp_after_hybridize": 0.3},
                    {"symbolic_program_result": {"text": "10"},
                     "mlp_symbolic_output": {"text": "graph(%x : Tensor) ..."}})
    out = {name: tmp_path / f"{name}.csv" for name in ("summary", "outputs", "verdicts")}
    done = subprocess.run(
        [str(WORKFLOW_PYTHON), "-m", "d2lperf", "summarise", "--runs", str(mxnet),
         str(torch),
         "--schema", str(REPO / "workflow/schemas/samples.schema.yaml"),
         *[x for name, path in out.items() for x in (f"--{name}", str(path))]],
        capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    summary = pd.read_csv(out["summary"])
    before = summary[(summary["case"] == "mlp_before_hybridize") & summary["document"].notna()]
    assert sorted(before["framework"]) == ["mxnet", "pytorch"]  # the document figure twice
    assert set(before["median"]) == {0.4, 0.3}
    verdicts = pd.read_csv(out["verdicts"]).set_index(["framework", "name"])
    assert verdicts.loc[("mxnet", "hybridize_speeds_up_mlp"), "verdict"] == "holds"
    assert verdicts.loc[("pytorch", "hybridize_speeds_up_mlp"), "verdict"] == "does not hold"
    assert verdicts.loc[("pytorch", "hybridize_speeds_up_mlp"), "effect"] == (
        "no meaningful difference")
    outputs = pd.read_csv(out["outputs"]).set_index(["framework", "case"])
    assert outputs.loc[("pytorch", "symbolic_program_result"), "match"] == "no document figure"
    assert outputs.loc[("pytorch", "mlp_symbolic_output"), "match"] == "counterpart"
    assert outputs.loc[("mxnet", "mlp_symbolic_output"), "match"] == "yes"


def test_an_output_that_differs_by_design_is_shown_so_and_not_a_failed_reproduction():
    reference = load_reference()
    zeros = "[0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0.]"
    runs = {"pytorch": {"multi_gpu_scratch": {
        "status": "ok", "parameters": {},
        "outputs": {"b1_weight": {"text": zeros, "values": [0.0] * 20},
                    "b1_grad": {"text": "None", "by_design": "no .grad before backward"}}}}}
    outputs = summarise.outputs_table(runs, reference).set_index("case")
    assert outputs.loc["b1_grad", "match"] == "by design"
    assert "no .grad before backward" in outputs.loc["b1_grad", "rule"]
    verdict = summarise.outputs_verdict(outputs.reset_index(), "pytorch")
    assert verdict.verdict == "holds", verdict.evidence
    assert "different by the framework's design: b1_grad" in verdict.evidence


def test_a_twins_output_is_by_design_from_its_field_never_from_its_words():
    """An output with the field is by design whatever its words."""
    reference = load_reference()
    runs = {"pytorch": {"hybridize": {"status": "ok", "parameters": {}, "outputs": {
        "hybridnet_F_imperative": {"text": "forward saw a Tensor",
                                   "by_design": "forward takes no F"}}}}}
    outputs = summarise.outputs_table(runs, reference).set_index("case")
    assert outputs.loc["hybridnet_F_imperative", "match"] == "by design"
    assert "forward takes no F" in outputs.loc["hybridnet_F_imperative", "rule"]


def test_an_older_records_not_applicable_text_is_read_as_by_design():
    """Records written before the field said so in the text alone; they still show the
    output as differing by design (read_run's migration, the one place that reads it),
    and it is not compared."""
    old = {"text": "not applicable in PyTorch (forward takes no F): forward saw a Tensor"}
    migrated = migrate_run({"section": "hybridize", "framework": "pytorch", "status": "ok",
                            "format_version": 2, "outputs": {"hybridnet_F_imperative": old,
                                                            "x": {"text": "Tensor"}}})
    assert migrated["outputs"]["hybridnet_F_imperative"]["by_design"] == old["text"]
    assert "by_design" not in migrated["outputs"]["x"]
    reference = load_reference()
    runs = {"pytorch": {"hybridize": {"status": "ok", "parameters": {}, "outputs": {
        "hybridnet_F_imperative": migrated["outputs"]["hybridnet_F_imperative"]}}}}
    outputs = summarise.outputs_table(runs, reference).set_index("case")
    assert outputs.loc["hybridnet_F_imperative", "match"] == "by design"
    assert old["text"] in outputs.loc["hybridnet_F_imperative", "rule"]
    verdict = summarise.outputs_verdict(outputs.reset_index(), "pytorch")
    assert "different by the framework's design: hybridnet_F_imperative" in verdict.evidence
