"""The cross-machine comparison of verdicts (d2lperf compare): one row per claim by its
stable name, whatever wording each machine's tables carry; 'does not apply' its own
state, and an archive that holds it comparable, in today's words or the older ones."""

from d2lperf import archive
from d2lperf.claims import FAILS, HOLDS, NA, NOT_HERE
from d2lperf.commands import compare

COLUMNS = "framework,name,claim,verdict"


def verdicts(folder, rows):
    folder.mkdir(parents=True)
    path = folder / "verdicts.csv"
    path.write_text(COLUMNS + "\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


def test_a_reworded_claim_lands_in_one_row_with_the_current_wording(tmp_path):
    here = verdicts(tmp_path / "here", [
        ("pytorch", "hybridize_speeds_up_mlp", "compiling the MLP makes it faster", HOLDS),
        ("mxnet", "cpu_gpu_overlap", "CPU and GPU work overlap", NOT_HERE)])
    old = verdicts(tmp_path / "old-box", [
        ("pytorch", "hybridize_speeds_up_mlp", "hybridizing the MLP makes it faster", FAILS),
        ("mxnet", "cpu_gpu_overlap", "CPU and GPU work overlap", FAILS)])
    table = compare.verdicts_by_machine([here, old])
    assert len(table) == 2
    row = table.set_index("name").loc["hybridize_speeds_up_mlp"]
    assert row["claim"] == "compiling the MLP makes it faster"
    assert (row["here"], row["old-box"]) == (HOLDS, FAILS)
    overlap = table.set_index("name").loc["cpu_gpu_overlap"]
    assert (overlap["here"], overlap["old-box"]) == (NOT_HERE, FAILS)


def test_does_not_apply_is_its_own_state_never_a_failure(tmp_path):
    here = verdicts(tmp_path / "here", [("mxnet", "cpu_gpu_overlap", "c", NOT_HERE)])
    table = compare.verdicts_by_machine([here])
    assert table["here"].tolist() == [NOT_HERE]
    assert compare.readable_verdicts(here) is None
    proven = verdicts(tmp_path / "odd", [("mxnet", "cpu_gpu_overlap", "c", "proven")])
    assert "verdict 'proven' is not one of" in compare.readable_verdicts(proven)


def test_an_archive_with_does_not_apply_verdicts_is_imported(tmp_path):
    """A CPU-only machine's claims about GPUs read 'does not apply': its archive once
    was refused whole for that verdict, so the comparison never saw the machine."""
    members = {"box/verdicts.csv": (
        "claim,name,section,verdict,evidence,rule\n"
        f"c,cpu_gpu_overlap,auto_parallelism,{NOT_HERE},no GPU here,r\n").encode()}
    archive._check_verdicts(members, "box")  # raises ArchiveError if refused


def test_an_archive_in_the_older_words_is_imported_and_read_in_todays(tmp_path):
    """Kept archives written before the two verdicts were reworded say 'not applicable
    here' (does not apply) and 'not applicable' (not measured): imported, compared and
    shown in today's words, the document's verdict too."""
    from d2lperf.tables import read_table

    table = ("claim,name,section,verdict,evidence,rule,document_verdict\n"
             "c,cpu_gpu_overlap,auto_parallelism,not applicable here,no GPU here,r,holds\n"
             "c,two_devices_speed_up_resnet,multi_gpu_gluon,not applicable,skipped,r,"
             "not applicable\n")
    archive._check_verdicts({"box/verdicts.csv": table.encode()}, "box")
    old = tmp_path / "old-box" / "verdicts.csv"
    old.parent.mkdir()
    old.write_text(table)
    read = read_table(old)
    assert read["verdict"].tolist() == [NOT_HERE, NA]
    assert read["document_verdict"].tolist() == [HOLDS, NA]
    assert compare.readable_verdicts(old) is None


def test_the_machines_facts_that_can_make_a_verdict_differ(tmp_path):
    """The CPU, its cores and vector unit, MXNet's BLAS kernel and the GPUs, from each
    machine.json; one that cannot be read gives empty facts, not a failed comparison."""
    import json

    good = tmp_path / "box" / "machine.json"
    good.parent.mkdir()
    good.write_text(json.dumps({
        "cpu": {"model": "AMD EPYC", "logical_cores": 2,
                "vector": {"instructions": "AVX-512", "bits": 512}},
        "gpus": [{"name": "NVIDIA H200", "driver": "580", "memory": "141 GiB"}],
        "software": {"mxnet": {"blas": {"core": "Barcelona"}}}}))
    bad = tmp_path / "broken" / "machine.json"
    bad.parent.mkdir()
    bad.write_text('{"cpu": "x"}')
    table = compare.machine_facts([good, bad])
    assert table.to_dict("records")[0] == {
        "machine": "box", "cpu": "AMD EPYC", "cores": 2, "vector": "AVX-512",
        "kernel": "Barcelona", "gpus": "NVIDIA H200", "python": "", "numpy": ""}
    assert table.iloc[1]["machine"] == "broken" and table.iloc[1]["gpus"] == "none"
