"""Archives: deterministic, verified on import, and refused whole when anything is off."""

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import (
    CI_CONFIG,
    CI_MACHINE,
    REPO,
    WORKFLOW_PYTHON,
    copy_workflow,
    jobs_planned,
    snakemake,
)
from d2lperf import archive
from d2lperf.archive import ArchiveError, import_archive, import_kept

SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"
SAMPLES = ("section,case,metric,unit,repeat,value,epoch,devices\n"
           "hybridize,mlp_before_hybridize,time,s,0,0.4,,\n")
MACHINE_JSON = {"machine": "box", "cpu": {"model": "X", "logical_cores": 2}, "gpus": [],
                "memory_bytes": 1}


def make_results(root, name="box", machine=None):
    folder = root / name
    (folder / "hybridize").mkdir(parents=True)
    (folder / "hybridize/samples.csv").write_text(SAMPLES)
    (folder / "hybridize/run.json").write_text('{"section": "hybridize", "status": "ok"}')
    (folder / "machine.json").write_text(json.dumps(machine or MACHINE_JSON))
    return folder


def build(tmp_path, name="box"):
    results = make_results(tmp_path / "source", name)
    out = tmp_path / f"{name}.tar.gz"  # beside its source, so each build needs its own folder
    archive.write_archive(out, name, archive.collect(results, {}), {"commit": "abc"})
    return out


def snapshot(folder):
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def tampered(tmp_path, entries, manifest_files=None, extra_infos=()):
    """An archive with the given members and a manifest listing manifest_files (default:
    the right checksums of all members)."""
    files = manifest_files if manifest_files is not None else {
        name: archive.sha256(data) for name, data in entries.items()}
    listing = {"format": 1, "machine": "box", "code": {}, "files": files}
    out = tmp_path / "bad.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        for name, data in {"manifest.json": json.dumps(listing).encode(), **entries}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra_infos:
            tar.addfile(info)
    return out


GOOD = {"box/machine.json": json.dumps(MACHINE_JSON).encode(),
        "box/hybridize/samples.csv": SAMPLES.encode()}


def test_archiving_twice_gives_the_same_bytes(tmp_path):
    results = make_results(tmp_path / "r")
    first, second = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    for out in (first, second):
        archive.write_archive(out, "box", archive.collect(results, {}), {"commit": "abc"})
    assert first.read_bytes() == second.read_bytes()


def test_round_trip_under_another_id(tmp_path):
    results_root = tmp_path / "results"
    target = import_archive(build(tmp_path), results_root, SCHEMA, rename="box-2")
    assert target == results_root / "box-2"
    assert (target / "hybridize/samples.csv").read_text() == SAMPLES
    imported = json.loads((target / "imported.json").read_text())
    assert imported["machine_in_archive"] == "box" and imported["imported_as"] == "box-2"


def symlink_info():
    info = tarfile.TarInfo("box/link")
    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
    return info


def device_info():
    info = tarfile.TarInfo("box/dev")
    info.type = tarfile.CHRTYPE
    return info


@pytest.mark.parametrize("make, message", [
    (lambda t: tampered(t, {**GOOD, "/etc/evil": b"x"}), "refusing absolute path"),
    (lambda t: tampered(t, {**GOOD, "box/../../evil": b"x"}), "refusing path with '..'"),
    (lambda t: tampered(t, GOOD, extra_infos=[symlink_info()]), "refusing link 'box/link'"),
    (lambda t: tampered(t, GOOD, extra_infos=[device_info()]), "refusing special file"),
    (lambda t: tampered(t, {**GOOD, "box/extra.txt": b"x"},
                        {n: archive.sha256(d) for n, d in GOOD.items()}),
     "file not in the manifest: box/extra.txt"),
    (lambda t: tampered(t, GOOD, {**{n: archive.sha256(d) for n, d in GOOD.items()},
                                  "box/gone.csv": "0" * 64}),
     "manifest entry with no file: box/gone.csv"),
    (lambda t: tampered(t, GOOD, {n: "0" * 64 for n in GOOD}), "checksum mismatch"),
    (lambda t: tampered(t, {**GOOD, "box/hybridize/samples.csv": SAMPLES.replace(
        "0.4", "fast").encode()}), "box/hybridize/samples.csv: row 2: value"),
    (lambda t: truncated(t), "truncated or not a gzip'd tar archive"),
    (lambda t: not_gzip(t), "truncated or not a gzip'd tar archive"),
    (lambda t: fifo(t), "a FIFO, not a regular file"),
])
def test_bad_archives_are_refused_and_nothing_changes(tmp_path, make, message):
    results_root = tmp_path / "results"
    make_results(results_root, "existing")
    before = snapshot(results_root)
    bad = make(tmp_path)
    with pytest.raises(ArchiveError, match=message.replace("(", r"\(").replace(")", r"\)")):
        import_archive(bad, results_root, SCHEMA)
    assert snapshot(results_root) == before
    assert sorted(p.name for p in results_root.iterdir()) == ["existing"]


def truncated(tmp_path):
    good = build(tmp_path)
    out = tmp_path / "truncated.tar.gz"
    out.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    return out


def fifo(tmp_path):
    """Named on the command line: refused at once, never waited on."""
    out = tmp_path / "pipe.tar.gz"
    os.mkfifo(out)
    return out


def test_a_long_name_behind_a_pax_header_is_imported(tmp_path):
    """Names over 100 characters need a PAX header: a small one is read as usual."""
    results = make_results(tmp_path / "source")
    long_name = "a" * 110 + ".txt"
    (results / long_name).write_text("x")
    out = tmp_path / "long.tar.gz"
    archive.write_archive(out, "box", archive.collect(results, {}), {"commit": "abc"})
    target = import_archive(out, tmp_path / "results", SCHEMA)
    assert (target / long_name).read_text() == "x"


def not_gzip(tmp_path):
    out = tmp_path / "plain.tar.gz"
    out.write_bytes(b"this is not an archive\n" * 10)
    return out


def test_colliding_machine_id_is_refused(tmp_path):
    results_root = tmp_path / "results"
    make_results(results_root, "box", {**MACHINE_JSON, "cpu": {"model": "Other", "cores": 64}})
    before = snapshot(results_root)
    with pytest.raises(ArchiveError, match="collides with a different machine"):
        import_archive(build(tmp_path), results_root, SCHEMA)
    assert snapshot(results_root) == before


def test_same_machine_twice_is_refused(tmp_path):
    results_root = tmp_path / "results"
    import_archive(build(tmp_path / "first"), results_root, SCHEMA)
    with pytest.raises(ArchiveError, match="already present"):
        import_archive(build(tmp_path / "again"), results_root, SCHEMA)


def kept(tmp_path, stem, name="box"):
    """An archive of machine ``name`` kept as report/machines/<stem>.tar.gz."""
    folder = tmp_path / "report/machines"
    folder.mkdir(parents=True, exist_ok=True)
    made = build(tmp_path / f"build-{stem}-{len(list(folder.iterdir()))}", name)
    return Path(shutil.copyfile(made, folder / f"{stem}.tar.gz"))


def test_kept_archives_are_imported_under_their_file_name_once(tmp_path):
    # the GPU check keeps <machine>-<date>.tar.gz: never the id of a machine running here
    kept(tmp_path, "box-2026-12-01")
    results_root = tmp_path / "results"
    assert import_kept(tmp_path / "report/machines", results_root, SCHEMA) == [
        ("box-2026-12-01.tar.gz", "imported")]
    target = results_root / "box-2026-12-01"
    assert json.loads((target / "imported.json").read_text())["kept"] is True
    before = snapshot(results_root)
    assert import_kept(tmp_path / "report/machines", results_root, SCHEMA) == [
        ("box-2026-12-01.tar.gz", "already imported")]
    assert snapshot(results_root) == before


def test_a_kept_archive_replaced_in_the_repository_replaces_its_import(tmp_path):
    results_root = tmp_path / "results"
    first = kept(tmp_path, "box-2026-12-01")
    import_kept(first.parent, results_root, SCHEMA)
    shutil.copyfile(other_figures(tmp_path), first)  # the same machine, later figures
    assert import_kept(first.parent, results_root, SCHEMA) == [
        ("box-2026-12-01.tar.gz", "replaced an earlier import")]
    samples = (results_root / "box-2026-12-01/hybridize/samples.csv").read_text()
    assert ",0.5," in samples


def other_figures(tmp_path):
    results = make_results(tmp_path / "other-figures")
    (results / "hybridize/samples.csv").write_text(SAMPLES.replace(",0.4,", ",0.5,"))
    out = tmp_path / "other-figures.tar.gz"
    archive.write_archive(out, "box", archive.collect(results, {}), {"commit": "abc"})
    return out


@pytest.mark.parametrize("present", ["a local run", "an import of the user's"])
def test_a_kept_archive_never_replaces_what_it_did_not_import(tmp_path, present):
    results_root = tmp_path / "results"
    if present == "a local run":
        make_results(results_root, "box-2026-12-01")
    else:
        import_archive(build(tmp_path / "mine"), results_root, SCHEMA, "box-2026-12-01")
    kept(tmp_path, "box-2026-12-01")
    before = snapshot(results_root)
    done = import_kept(tmp_path / "report/machines", results_root, SCHEMA)
    assert done[0][0] == "box-2026-12-01.tar.gz"
    assert done[0][1].startswith("refused: results/box-2026-12-01 holds")
    assert {k: v for k, v in snapshot(results_root).items()
            if k != archive.KEPT_RECORD} == before


@pytest.mark.parametrize("stem", ["$(touch pwned)", ".hidden", "x" * 130])
def test_a_kept_archive_whose_name_is_no_machine_id_is_refused(tmp_path, stem):
    kept(tmp_path, stem)
    done = import_kept(tmp_path / "report/machines", tmp_path / "results", SCHEMA)
    assert len(done) == 1 and done[0][1].startswith("refused: its name")
    assert "is not a valid machine id" in done[0][1]
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == [archive.KEPT_RECORD]
    assert not (tmp_path / "pwned").exists()


def kept_member(tmp_path, info, data=b""):
    """A kept archive like a good one, with one crafted member more."""
    entries = {n: d for n, d in GOOD.items()}
    entries["box/hybridize/run.json"] = b'{"section": "hybridize", "status": "ok"}'
    out = tampered(tmp_path, entries)
    raw = tarfile.open(out, "r:gz")
    members = [(m, raw.extractfile(m).read()) for m in raw.getmembers()]
    raw.close()
    with tarfile.open(out, "w:gz") as tar:
        for member, content in members:
            tar.addfile(member, io.BytesIO(content))
        info.size = len(data) if info.isfile() else 0
        tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return out


def link_member(kind):
    info = tarfile.TarInfo("box/link")
    info.type, info.linkname = kind, "box/machine.json" if kind == tarfile.LNKTYPE \
        else "/etc/passwd"
    return info


def bad_kept(tmp_path, case, folder):
    """Put one bad kept archive named ``bad-box.tar.gz`` (or as the case needs) in folder."""
    good = build(tmp_path / "bad-source", "bad-box")
    target = folder / "bad-box.tar.gz"
    if case == "bad name":
        shutil.copyfile(good, folder / "$(touch pwned) x.tar.gz")
        return "$(touch pwned) x.tar.gz", "is not a valid machine id"
    if case == "truncated":
        target.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
        return target.name, "truncated or not a gzip'd tar archive"
    if case == "symlink to a file outside":
        target.symlink_to(good)
        return target.name, "a symbolic link, not a regular file"
    if case == "symlink to /dev/stdin":
        target.symlink_to("/dev/stdin")
        return target.name, "a symbolic link, not a regular file"
    if case == "FIFO":
        os.mkfifo(target)
        return target.name, "a FIFO, not a regular file"
    members = {
        "'..' member": (tarfile.TarInfo("box/../../escaped"), "refusing path with '..'"),
        "absolute member": (tarfile.TarInfo("/tmp/absolute-evil"), "refusing absolute path"),
        "symlink member": (link_member(tarfile.SYMTYPE), "refusing link 'box/link'"),
        "hardlink member": (link_member(tarfile.LNKTYPE), "refusing link 'box/link'"),
    }
    info, message = members[case]
    made = kept_member(tmp_path / "bad-member", info, b"x")
    shutil.copyfile(made, target)
    return target.name, message


BAD_KEPT = ["bad name", "truncated", "symlink to a file outside", "symlink to /dev/stdin",
            "FIFO", "'..' member", "absolute member", "symlink member", "hardlink member"]


@pytest.mark.slow  # over a second on 2 cores
@pytest.mark.parametrize("case", BAD_KEPT)
def test_a_bad_kept_archive_is_refused_by_name_and_the_others_go_on(tmp_path, case):
    """What `make report` runs first: it must end 0 (the user's own run goes on), name the
    bad file and the reason, import the good kept archive beside it, and leave the refusal
    in results/kept-archives.json for the report."""
    good = kept(tmp_path, "box-2026-12-01")
    (tmp_path / "bad-member").mkdir()
    name, reason = bad_kept(tmp_path, case, good.parent)
    done = subprocess.run(
        [str(WORKFLOW_PYTHON), "-m", "d2lperf", "import", "--kept",
         "report/machines", "--results", "results", "--local-id", "this-box"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert f"report/machines/{name}: refused: " in done.stderr and reason in done.stderr
    assert (tmp_path / "results/box-2026-12-01/imported.json").exists()
    assert archive.kept_refusals(tmp_path / "results" / archive.KEPT_RECORD) == [
        {"archive": name, "reason": next(line for line in done.stderr.splitlines()
                                         if name in line).split(": refused: ", 1)[1]}]
    results = {p.name for p in (tmp_path / "results").iterdir()}
    assert results == {"box-2026-12-01", archive.KEPT_RECORD}
    assert not (tmp_path / "pwned").exists() and not Path("/tmp/absolute-evil").exists()
    assert not (tmp_path / "escaped").exists()


def test_a_kept_archive_named_after_this_machine_never_takes_its_id(tmp_path):
    """A GPU check kept on the machine it ran on: imported beside the local run, so that
    the local run (whose folder results/<id> is) is never refused."""
    kept(tmp_path, "this-box")
    results_root = tmp_path / "results"
    done = import_kept(tmp_path / "report/machines", results_root, SCHEMA,
                       local_ids=("this-box",))
    assert done == [("this-box.tar.gz", "imported as this-box--kept (its name is this "
                     "machine's own id)")]
    assert not (results_root / "this-box").exists()
    assert json.loads((results_root / "this-box--kept/imported.json").read_text())["kept"]
    assert import_kept(tmp_path / "report/machines", results_root, SCHEMA,
                       local_ids=("this-box",))[0][1].startswith("already imported")


def test_an_earlier_kept_import_under_this_machines_id_gives_it_back(tmp_path):
    """Imported under the machine's own id by earlier code: moved aside to <id>--kept."""
    kept(tmp_path, "this-box")
    results_root = tmp_path / "results"
    import_kept(tmp_path / "report/machines", results_root, SCHEMA)
    assert (results_root / "this-box/imported.json").exists()
    import_kept(tmp_path / "report/machines", results_root, SCHEMA, local_ids=("this-box",))
    assert not (results_root / "this-box").exists()
    assert (results_root / "this-box--kept/imported.json").exists()


@pytest.mark.slow  # over half a second on 2 cores
def test_the_derived_id_is_a_local_id_by_default(tmp_path):
    from d2lperf.machine import machine_id

    local = machine_id()
    kept(tmp_path, local)
    done = subprocess.run(
        [str(WORKFLOW_PYTHON), "-m", "d2lperf", "import", "--kept",
         "report/machines", "--results", "results"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "results" / local).exists()
    assert (tmp_path / "results" / f"{local}--kept/imported.json").exists()


def test_no_kept_archives_is_nothing_to_do(tmp_path):
    assert import_kept(tmp_path / "report/machines", tmp_path / "results", SCHEMA) == []
    assert not (tmp_path / "results").exists()


@pytest.mark.slow  # over a second on 2 cores
def test_make_report_imports_the_kept_archives_before_snakemake_runs():
    dry = subprocess.run(["make", "-n", "report"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    lines = dry.stdout.splitlines()
    kept_line = next(i for i, line in enumerate(lines)
                     if "d2lperf import --kept report/machines" in line)
    snakemake_line = next(i for i, line in enumerate(lines) if "snakemake --cores" in line)
    assert kept_line < snakemake_line


def test_archive_import_and_compare_end_to_end(ci_run, tmp_path, experiment_python):
    """Archive the CI results through Snakemake, import them into a fresh checkout under a
    second machine id, and render the comparison report there."""
    work, results = ci_run
    config = [*CI_CONFIG, f"experiment_python={experiment_python}"]
    done = snakemake(work, "archive", "--cores", "1", *config)
    assert done.returncode == 0, done.stderr[-3000:]
    made = work / "archives" / f"{CI_MACHINE}.tar.gz"
    first = made.read_bytes()
    done = snakemake(work, "archive", "--forcerun", "archive", "--cores", "1", *config)
    assert done.returncode == 0 and made.read_bytes() == first  # same content twice

    fresh = copy_workflow(tmp_path / "fresh")
    # this checkout's own results: copied now, so newer than its scripts
    shutil.copytree(results, fresh / "results" / CI_MACHINE, copy_function=shutil.copy)
    imported = subprocess.run(
        [str(WORKFLOW_PYTHON), "-m", "d2lperf", "import", str(made), "--as", "second-box"],
        cwd=fresh, capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr
    assert "imported as" in imported.stdout
    untouched = snapshot(fresh / "results/second-box")
    # what `make report` runs first, with a broken kept archive: refused, and the run goes on
    (fresh / "report/machines").mkdir(parents=True, exist_ok=True)
    (fresh / "report/machines/broken-box.tar.gz").write_bytes(first[: len(first) // 2])
    kept_import = subprocess.run(
        [str(WORKFLOW_PYTHON), "-m", "d2lperf", "import", "--kept", "report/machines"],
        cwd=fresh, capture_output=True, text=True, timeout=300)
    assert kept_import.returncode == 0, kept_import.stderr
    assert "report/machines/broken-box.tar.gz: refused: truncated" in kept_import.stderr
    done = snakemake(fresh, "--cores", "2", *config)
    assert done.returncode == 0, done.stderr[-3000:]
    ran = jobs_planned(done.stdout + done.stderr)
    assert "hybridize" not in ran and "compare" in ran
    page = (fresh / "results" / CI_MACHINE / "report.html").read_text(encoding="utf-8")
    assert "Across machines" in page and "second-box" in page
    assert "Kept archives refused" in page and "broken-box.tar.gz" in page
    assert (fresh / "results" / CI_MACHINE / "comparison.csv").exists()
    assert snapshot(fresh / "results/second-box") == untouched  # never re-run or rewritten


def test_the_configured_machine_id_is_a_local_id_too(tmp_path):
    sys.path.insert(0, str(REPO / "scripts"))
    from d2lperf.commands import import_results

    config = tmp_path / "config.yaml"
    config.write_text("machine: my-box\n")
    assert "my-box" in import_results.local_ids([], config)
    assert "my-box--system-blas" in import_results.local_ids([], config)
    config.write_text('machine: ""\n')
    assert "my-box" not in import_results.local_ids([], config)
    assert import_results.local_ids(["given"], config) == ("given", "given--system-blas")


@pytest.mark.slow  # over a second on 2 cores
def test_every_reference_machine_kept_here_imports_as_any_archive_would(tmp_path):
    """The archives the project ships in report/machines/ pass the same checks as any import
    (what `make report` runs first), each under an id of its own, each at most 3 MB."""
    shipped = sorted((REPO / "report/machines").glob("*.tar.gz"))
    assert shipped, "no reference machine is kept"
    assert all(p.stat().st_size <= 3 * 2**20 for p in shipped), shipped
    done = subprocess.run(
        [str(WORKFLOW_PYTHON), "-m", "d2lperf", "import", "--kept",
         str(REPO / "report/machines"), "--results", "results", "--local-id", "this-box"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "refused" not in done.stderr, done.stderr
    ids = [p.name[: -len(".tar.gz")] for p in shipped]
    for name in ids:
        record = json.loads((tmp_path / "results" / name / "machine.json").read_text())
        assert record["cpu"]["model"]
    assert len(set(ids)) == len(ids)


def archive_results(tmp_path, results: Path) -> subprocess.CompletedProcess:
    """d2lperf archive as the rule runs it, with a host lock of the test's own."""
    from d2lperf import hostlock

    return subprocess.run(
        [str(WORKFLOW_PYTHON), "-m", "d2lperf", "archive", "--results",
         str(results), "--schema", str(SCHEMA), "--out", str(tmp_path / "out.tar.gz")],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, hostlock.LOCK_VARIABLE: str(tmp_path / "host.lock")})


@pytest.mark.slow  # over half a second on 2 cores
def test_a_huge_log_is_archived_capped_and_its_import_takes_it(tmp_path):
    """A results folder holding a 100 MB log was archived without a word, and its own
    import refused the archive: the log is archived with its head and tail, the cut said."""
    from d2lperf import logcap

    results = make_results(tmp_path / "source")
    log = results / "logs/hybridize.log"
    log.parent.mkdir()
    with open(log, "wb") as handle:
        handle.write(b"the job started\n")
        handle.truncate(100 << 20)
        handle.seek(0, os.SEEK_END)
        handle.write(b"Error: the job ended here\n")
    done = archive_results(tmp_path, results)
    assert done.returncode == 0, done.stderr
    target = import_archive(tmp_path / "out.tar.gz", tmp_path / "results", SCHEMA)
    kept = (target / "logs/hybridize.log").read_bytes()
    assert len(kept) < logcap.MAX_LOG_BYTES + 200
    assert kept.startswith(b"the job started\n") and kept.endswith(b"Error: the job ended here\n")
    cut = (100 << 20) + 26 - logcap.MAX_LOG_BYTES
    assert f"[... {cut} bytes cut here".encode() in kept


@pytest.mark.slow  # over a second on 2 cores
@pytest.mark.parametrize("name, size, refusal", [
    ("hybridize/samples.csv", archive.MAX_TABLE_BYTES + 1,
     "table box/hybridize/samples.csv is {size} bytes, more than the limit of {limit} per table"),
    ("plots/hybridize.svg", archive.MAX_MEMBER_BYTES + 1,
     "member box/plots/hybridize.svg is {size} bytes, more than the limit of {limit} per file"),
])
def test_archive_results_never_writes_an_archive_its_import_would_refuse(
        tmp_path, name, size, refusal):
    """What it cannot cap, it refuses, naming the file and the import's limit."""
    results = make_results(tmp_path / "source")
    path = results / name
    path.parent.mkdir(exist_ok=True)
    row = SAMPLES.splitlines()[1] + "\n"
    path.write_text((SAMPLES + row * (size // len(row) + 1))[:size] if name.endswith(".csv")
                    else "x" * size)
    done = archive_results(tmp_path, results)
    assert done.returncode == 1
    limit = archive.MAX_TABLE_BYTES if name.endswith(".csv") else archive.MAX_MEMBER_BYTES
    assert refusal.format(size=size, limit=limit) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out.tar.gz").exists()
    assert not list(tmp_path.glob(".out.tar.gz*"))


def test_an_archive_with_a_case_its_section_does_not_plan_is_refused(tmp_path):
    """Summarise refuses a row of a case no section plans; so does an import."""
    entries = {**GOOD, "box/hybridize/samples.csv": (
        SAMPLES + "hybridize,mlp_before_hybridise,time,s,1,0.4,,\n").encode()}
    with pytest.raises(ArchiveError, match="box/hybridize/samples.csv: row 3: case "
                       "'mlp_before_hybridise' is not one section hybridize plans; allowed: "):
        import_archive(tampered(tmp_path, entries), tmp_path / "results", SCHEMA)
