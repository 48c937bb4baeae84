import csv
import json

import pytest

from d2lperf.results import COLUMNS, Recorder, write_csv, write_json


def test_recorder_numbers_every_repeat():
    rec = Recorder("hybridize")
    rec.samples("mlp_before_hybridize", "time", "s", [0.3, 0.2, 0.1])
    assert [r["repeat"] for r in rec.rows] == [0, 1, 2]
    assert [r["value"] for r in rec.rows] == [0.3, 0.2, 0.1]
    assert all(r["epoch"] == "" and r["devices"] == "" for r in rec.rows)


def test_csv_round_trip(tmp_path):
    rec = Recorder("x")
    rec.samples("a", "accuracy", "fraction", [0.5], epoch=2, devices="cpu(0),cpu(1)")
    path = tmp_path / "deep" / "samples.csv"
    write_csv(path, rec.rows)
    rows = list(csv.DictReader(path.open()))
    assert tuple(rows[0]) == COLUMNS
    assert rows[0]["epoch"] == "2" and rows[0]["devices"] == "cpu(0),cpu(1)"


def test_failed_write_leaves_no_partial_file(tmp_path):
    path = tmp_path / "run.json"
    with pytest.raises(TypeError):
        write_json(path, {"not json": object()})
    assert list(tmp_path.iterdir()) == []
    write_json(path, {"ok": 1})
    assert json.loads(path.read_text()) == {"ok": 1}
