"""The cross-machine comparison of verdicts (d2lperf compare): one row per claim by its
stable name, whatever wording each machine's tables carry; 'not applicable here' its own
state, and an archive that holds it comparable."""

from d2lperf import archive
from d2lperf.claims import FAILS, HOLDS, NOT_HERE
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


def test_not_applicable_here_is_its_own_state_never_a_failure(tmp_path):
    here = verdicts(tmp_path / "here", [("mxnet", "cpu_gpu_overlap", "c", NOT_HERE)])
    table = compare.verdicts_by_machine([here])
    assert table["here"].tolist() == [NOT_HERE]
    assert compare.readable_verdicts(here) is None
    proven = verdicts(tmp_path / "odd", [("mxnet", "cpu_gpu_overlap", "c", "proven")])
    assert "verdict 'proven' is not one of" in compare.readable_verdicts(proven)


def test_an_archive_with_not_applicable_here_verdicts_is_imported(tmp_path):
    """A CPU-only machine's claims about GPUs read 'not applicable here': its archive once
    was refused whole for that verdict, so the comparison never saw the machine."""
    members = {"box/verdicts.csv": (
        "claim,name,section,verdict,evidence,rule\n"
        f"c,cpu_gpu_overlap,auto_parallelism,{NOT_HERE},no GPU here,r\n").encode()}
    archive._check_verdicts(members, "box")  # raises ArchiveError if refused


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
