import csv
import json
import os
import stat

import pytest

from d2lperf.results import COLUMNS, Recorder, write_csv, write_json, write_text


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


def test_a_written_file_is_as_readable_as_any_file_this_user_writes(tmp_path):
    """A write goes through a temporary file, which mkstemp makes 0600; the file it leaves
    has the modes the user's umask gives (a results folder shared with a group, a report
    served from it), as a plain open() would."""
    old = os.umask(0o022)
    try:
        write_json(tmp_path / "run.json", {"ok": 1})
        write_text(tmp_path / "report.html", "<p>")
        write_csv(tmp_path / "samples.csv", [])
        os.umask(0o027)
        write_text(tmp_path / "group.txt", "x")
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == {"run.json": 0o644, "report.html": 0o644, "samples.csv": 0o644,
                     "group.txt": 0o640}
