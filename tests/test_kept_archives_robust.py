"""Kept archives never stop `make report`: whatever is wrong with one (a header chain that
recurses, a sparse map that fills memory, JSON nested past any use, a name the project uses
itself), it is refused by name with the reason, the others are imported, the import ends 0
and stays under 200 MB; two imports at once never refuse a good archive; and an archive's
config.yaml is only ever data.

The hostile archives are built here block by block (tarfile would not write most of them),
small, and each differs from a good archive in one thing."""

import gzip
import json
import subprocess
import tarfile
import textwrap
from pathlib import Path

import pytest

from conftest import CI_MACHINE, REPO, WORKFLOW_PYTHON, copy_workflow, snakemake
from d2lperf import archive
from d2lperf.archive import ArchiveError, import_archive

SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"
SAMPLES = (b"section,case,metric,unit,repeat,value,epoch,devices\n"
           b"hybridize,mlp_before_hybridize,time,s,0,0.4,,\n")
MACHINE_JSON = json.dumps({"machine": "box", "cpu": {"model": "X", "logical_cores": 2},
                           "gpus": [], "memory_bytes": 1}).encode()
GOOD = {"box/machine.json": MACHINE_JSON,
        "box/hybridize/samples.csv": SAMPLES,
        "box/hybridize/run.json": b'{"section": "hybridize", "status": "ok"}'}


# --- tar blocks by hand -------------------------------------------------------------------

def pad(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % tarfile.BLOCKSIZE)


def header(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, size
    return info.tobuf(tarfile.USTAR_FORMAT if kind not in tarfile.GNU_TYPES
                      else tarfile.GNU_FORMAT)


def member(name: str, data: bytes) -> bytes:
    return header(name, len(data)) + pad(data)


def record(key: str, value: str) -> bytes:
    """One PAX record: '<length> <key>=<value>\\n', the length counting itself."""
    body = f" {key}={value}\n".encode()
    length = len(body) + 1
    while len(str(length)) + len(body) != length:
        length += 1
    return str(length).encode() + body


def pax(records: bytes, kind: bytes = tarfile.XHDTYPE) -> bytes:
    return header("././@PaxHeader", len(records), kind) + pad(records)


def with_checksum(block: bytearray) -> bytes:
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def listing(entries: dict[str, bytes], machine: str = "box", **extra) -> bytes:
    return json.dumps({"format": 1, "machine": machine, "code": {},
                       "files": {n: archive.sha256(d) for n, d in entries.items()},
                       **extra}).encode()


def gz_tar(*parts: bytes, manifest: bytes | None = None, entries=None) -> bytes:
    """A gzip'd tar: the manifest (of ``entries``, default GOOD), the good members, then
    the crafted blocks, then the end of the archive."""
    entries = GOOD if entries is None else entries
    body = member("manifest.json", listing(entries) if manifest is None else manifest)
    body += b"".join(member(n, d) for n, d in entries.items())
    return gzip.compress(body + b"".join(parts) + b"\0" * 2 * tarfile.BLOCKSIZE, 9)


def pax_chain(count: int) -> bytes:
    """``count`` extended headers in a row before one member: tarfile reads each by
    calling itself for the next (8.5 KB gzip'd at 2,000)."""
    one = pax(record("comment", "x"))
    return gz_tar(one * count + member("box/chained.txt", b"x"))


def long_name_chain(count: int) -> bytes:
    one = header("././@LongLink", 12, tarfile.GNUTYPE_LONGNAME) + pad(b"box/long.txt")
    return gz_tar(one * count + member("box/chained.txt", b"x"))


def old_gnu_sparse(blocks: int) -> bytes:
    """A GNU sparse member ('S') followed by ``blocks`` extension blocks of 21 entries
    each, every one but the last marked 'more follow'."""
    head = bytearray(header("box/sparse.bin", 0))
    head[156:157] = tarfile.GNUTYPE_SPARSE
    head[257:265] = b"ustar  \0"  # GNU magic
    head[482] = 1
    head[483:495] = b"%011o\0" % 1
    extension = bytearray(b"".join(b"%011o\0%011o\0" % (1, 1) for _ in range(21)) + b"\0" * 8)
    extension[504] = 1
    last = bytearray(extension)
    last[504] = 0
    return gz_tar(with_checksum(head) + bytes(extension) * (blocks - 1) + bytes(last))


def pax_sparse_00(pairs: int) -> bytes:
    records = record("GNU.sparse.size", "1") + record("GNU.sparse.numblocks", str(pairs))
    records += (record("GNU.sparse.offset", "0") + record("GNU.sparse.numbytes", "1")) * pairs
    return gz_tar(pax(records) + member("box/sparse.bin", b"x"))


def pax_sparse_01(pairs: int) -> bytes:
    records = record("GNU.sparse.size", "1") + record("GNU.sparse.map", ",".join(["0,1"] * pairs))
    return gz_tar(pax(records) + member("box/sparse.bin", b"x"))


def pax_sparse_10(fields: int) -> bytes:
    """GNU sparse 1.0: the map is at the start of the member's data, a count then two
    numbers per entry, one a line; tarfile reads all of it into a list. Zeros compress
    some thousand to one, so a map of millions of entries is tens of KB."""
    records = (record("GNU.sparse.major", "1") + record("GNU.sparse.minor", "0")
               + record("GNU.sparse.name", "box/sparse.bin")
               + record("GNU.sparse.realsize", "1"))
    data = b"%d\n" % fields + b"0\n" * (2 * fields)
    return gz_tar(pax(records) + member("box/GNUSparseFile.0/sparse.bin", data))


def global_header() -> bytes:
    return gz_tar(pax(record("comment", "applies to every later member"), tarfile.XGLTYPE)
                  + member("box/after.txt", b"x"))


def many_headers_kept(count: int, size: int) -> bytes:
    """``count`` members, each behind an extended header of ``size`` bytes: each small,
    together past any memory limit if tarfile's parsed headers were kept."""
    chunk = record("comment", "c" * (size - 20))
    parts = b"".join(pax(chunk) + member(f"box/many/{i}.txt", b"") for i in range(count))
    return gz_tar(parts)


def long_owner(count: int, size: int) -> bytes:
    """Members whose extended header names an owner of ``size`` characters."""
    chunk = record("uname", "u" * (size - 20))
    parts = b"".join(pax(chunk) + member(f"box/many/{i}.txt", b"") for i in range(count))
    return gz_tar(parts)


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def deep_member(name: str, depth: int) -> bytes:
    entries = {**GOOD, name: deep(depth)}
    return gz_tar(entries=entries)


def flat_json_member(size: int) -> bytes:
    """A JSON list of empty objects: some 24 bytes of memory per byte once parsed (16 MB
    of it took 425 MB), and a few KB gzip'd."""
    entries = {**GOOD, "box/notes.json": b"[" + b"{}," * (size // 3) + b"{}]"}
    return gz_tar(entries=entries)


def deep_code(depth: int) -> bytes:
    """A manifest that parses (within Python's recursion limit) with its code nested
    ``depth`` deep: every later step that walks it (the schema, imported.json) would
    recurse as deep."""
    text = listing(GOOD).replace(b'"code": {}', b'"code": ' + b'{"a": ' * depth + b"1"
                                 + b"}" * depth)
    return gz_tar(manifest=text)


def named(name: str) -> bytes:
    """A good archive: it is its file name that matters."""
    return gz_tar()


# (file name, builder, what the refusal must say)
HOSTILE_KEPT = {
    "2,000 PAX headers in a row": ("pax-chain.tar.gz", lambda: pax_chain(2000),
                                   "extended headers in a row"),
    "2,000 GNU long names in a row": ("long-chain.tar.gz", lambda: long_name_chain(2000),
                                      "extended headers in a row"),
    "old GNU sparse map of 20,000 blocks": ("old-sparse.tar.gz", lambda: old_gnu_sparse(20000),
                                            "refusing sparse file 'box/sparse.bin'"),
    "GNU sparse 0.0 in a PAX header": ("sparse-00.tar.gz", lambda: pax_sparse_00(1000),
                                       "refusing sparse file"),
    "GNU sparse 0.1 in a PAX header": ("sparse-01.tar.gz", lambda: pax_sparse_01(1000),
                                       "refusing sparse file"),
    "GNU sparse 1.0 map of 4 million entries": ("sparse-10.tar.gz",
                                                lambda: pax_sparse_10(4_000_000),
                                                "refusing sparse file"),
    "global PAX header": ("global.tar.gz", global_header, "global extended header"),
    "manifest nested 200,000 deep": ("deep-manifest.tar.gz",
                                     lambda: gz_tar(manifest=deep(200_000)),
                                     "manifest.json: JSON nested more than"),
    "machine.json nested 200,000 deep": ("deep-machine.tar.gz",
                                         lambda: deep_member("box/machine.json", 200_000),
                                         "box/machine.json: JSON nested more than"),
    "a JSON member nested 200,000 deep": ("deep-member.tar.gz",
                                          lambda: deep_member("box/notes.json", 200_000),
                                          "box/notes.json: JSON nested more than"),
    "manifest code nested 500 deep": ("deep-code.tar.gz", lambda: deep_code(500),
                                      "manifest.json: JSON nested more than"),
    "named after the record of kept archives": ("kept-archives.json.tar.gz",
                                                lambda: named("kept-archives.json"),
                                                "the project writes kept-archives.json "
                                                "under results/ itself"),
    "a JSON member of 16 MB of empty objects": ("flat-json.tar.gz",
                                                lambda: flat_json_member(16_000_000),
                                                "bytes of JSON, more than the limit of"),
    "owners of 60 KB on 250 members": ("long-owner.tar.gz", lambda: long_owner(250, 60_000),
                                       "its owner is 59980 characters, more than the limit"),
}

# What `make report` runs first, in a fresh interpreter that reports its own peak memory
# (VmHWM, not getrusage's ru_maxrss: Linux keeps that high-water mark across exec, so a
# child of a large pytest process would report pytest's).
RUN_MEASURED = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from d2lperf import cli
    code = cli.main(sys.argv[1:])
    status = Path("/proc/self/status").read_text()
    peak = next(l for l in status.splitlines() if l.startswith("VmHWM:")).split()[1]
    Path(os.environ["PEAK_FILE"]).write_text(str(int(peak) // 1024))
    sys.exit(code)
""")


def import_kept_cli(work: Path, *extra: str) -> tuple[subprocess.CompletedProcess, int]:
    """d2lperf import --kept report/machines in ``work``, as `make report` runs
    it; its result and its peak memory in MB."""
    peak = work / f"peak-{len(list(work.glob('peak-*')))}"
    done = subprocess.run(
        [str(WORKFLOW_PYTHON), "-c", RUN_MEASURED, "import",
         "--kept", "report/machines", "--results", "results", "--local-id", "this-box",
         *extra],
        cwd=work, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(REPO / "scripts"), "PATH": "/usr/bin:/bin",
             "PEAK_FILE": str(peak)})
    return done, int(peak.read_text()) if peak.exists() else -1


def good_kept(folder: Path, stem: str = "box-2026-12-01") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{stem}.tar.gz"
    out.write_bytes(gz_tar())
    return out


def test_the_hand_built_good_archive_is_imported(tmp_path):
    """The hostile archives below differ from this one in one thing each."""
    good = good_kept(tmp_path / "report/machines")
    target = import_archive(good, tmp_path / "results", SCHEMA)
    assert (target / "hybridize/samples.csv").read_bytes() == SAMPLES


@pytest.mark.slow  # over a second on 2 cores
@pytest.mark.parametrize("case", sorted(HOSTILE_KEPT))
def test_a_hostile_kept_archive_is_refused_by_name_and_the_run_goes_on(tmp_path, case):
    name, make, reason = HOSTILE_KEPT[case]
    folder = tmp_path / "report/machines"
    good_kept(folder)
    (folder / name).write_bytes(make())
    done, peak = import_kept_cli(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    line = next((line for line in done.stderr.splitlines() if f"/{name}: refused: " in line),
                done.stderr)
    assert line.startswith(f"report/machines/{name}: refused: "), line
    assert reason in line.split(": refused: ", 1)[1], line
    assert (tmp_path / "results/box-2026-12-01/imported.json").exists()
    refusals = archive.kept_refusals(tmp_path / "results" / archive.KEPT_RECORD)
    assert [r["archive"] for r in refusals] == [name]
    assert {p.name for p in (tmp_path / "results").iterdir()} == {
        "box-2026-12-01", archive.KEPT_RECORD}
    assert 0 < peak < 200, f"peak {peak} MB"
    # and the next `make report` sees the same, without an error of its own
    again, _ = import_kept_cli(tmp_path)
    assert again.returncode == 0 and "Traceback" not in again.stderr
    assert line in again.stderr.splitlines()


@pytest.mark.slow  # over half a second on 2 cores
def test_hostile_archives_stay_small():
    """Each is a few KB to a few hundred KB on disk, as a repository would hold it."""
    sizes = {case: len(make()) for case, (_, make, _) in HOSTILE_KEPT.items()}
    assert max(sizes.values()) < 200_000, sizes


def dense_headers(count: int, size: int) -> bytes:
    """``count`` members, each behind an extended header of ``size`` bytes of records as
    short as they come, 7 bytes (some 90 bytes of memory each once parsed)."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    keys = (a + b + c for a in letters for b in letters for c in letters)
    records = b"".join(record(next(keys), "") for _ in range(size // 7))  # '7 abc=\n'

    return gz_tar(b"".join(pax(records) + member(f"box/many/{i}.txt", b"")
                           for i in range(count)))


@pytest.mark.slow  # over a second on 2 cores
def test_extended_headers_are_not_kept_once_read(tmp_path):
    """250 members each behind a PAX header of 60 KB of short records (15 MB of headers in
    all, under their limit): tarfile keeps every member it has read, and each member its
    parsed header (the import peaked at 254 MB while it kept them), so the import drops
    each header once applied; the archive is then refused, for the members its manifest
    does not list, under 200 MB."""
    folder = tmp_path / "report/machines"
    folder.mkdir(parents=True)
    (folder / "many-headers.tar.gz").write_bytes(dense_headers(250, 60_000))
    done, peak = import_kept_cli(tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert ("report/machines/many-headers.tar.gz: refused: file not in the manifest: "
            "box/many/0.txt") in done.stderr
    assert 0 < peak < 200, f"peak {peak} MB"


@pytest.mark.slow  # over a second on 2 cores
def test_extended_headers_are_bounded_in_all(tmp_path):
    """3,000 members each behind a PAX header of 60 KB (180 MB of headers, 440 KB gzip'd):
    refused once their headers add up past the limit, before the rest is parsed."""
    bad = tmp_path / "many.tar.gz"
    bad.write_bytes(many_headers_kept(3000, 60_000))
    with pytest.raises(ArchiveError, match="extended headers add up to more than the limit "
                                           "of 16777216 bytes by member 284"):
        import_archive(bad, tmp_path / "results", SCHEMA)


@pytest.mark.parametrize("make, message", [
    (lambda: pax_chain(2000), "extended headers in a row"),
    (lambda: pax_sparse_10(1000), "refusing sparse file"),
    (lambda: gz_tar(manifest=deep(200_000)), "manifest.json: JSON nested more than"),
])
def test_the_same_archives_named_on_the_command_line_are_refused(tmp_path, make, message):
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(make())
    with pytest.raises(ArchiveError, match=message):
        import_archive(bad, tmp_path / "results", SCHEMA)
    assert not (tmp_path / "results").exists() or not any(
        p for p in (tmp_path / "results").iterdir() if not p.name.startswith("."))


@pytest.mark.parametrize("how", ["manifest", "--as"])
def test_no_import_takes_a_name_the_project_uses_under_results(tmp_path, how):
    """kept-archives.json is the record the report reads: a folder of that name would make
    every later import fail to write it."""
    reserved = archive.KEPT_RECORD
    bad = tmp_path / "bad.tar.gz"
    if how == "manifest":
        entries = {reserved + n[len("box"):]: d for n, d in GOOD.items()}
        bad.write_bytes(gz_tar(manifest=listing(entries, reserved), entries=entries))
    else:
        bad.write_bytes(gz_tar())
    said = f"{reserved}.* the project writes {reserved} under results/ itself"
    with pytest.raises(ArchiveError, match=said):
        import_archive(bad, tmp_path / "results", SCHEMA,
                       reserved if how == "--as" else None)
    assert not (tmp_path / "results" / reserved).exists()


def test_a_kept_archive_may_not_land_on_a_hidden_or_reserved_name():
    for name in archive.RESERVED_IDS:
        for spelling in (name, name.upper()):
            with pytest.raises(ArchiveError, match=f"the project writes {name} under"):
                archive.check_import_id(spelling, "its name")
    assert archive.check_import_id("box-2026-12-01", "its name") == "box-2026-12-01"


@pytest.mark.slow  # over a second on 2 cores
def test_two_imports_at_once_refuse_nothing(tmp_path):
    """Two `make report`s started together: each imports or finds imported, neither
    records a refusal (5 tries, fresh results each time)."""
    folder = tmp_path / "report/machines"
    for day in range(1, 5):
        good_kept(folder, f"box-2026-12-0{day}")
    for attempt in range(5):
        results = tmp_path / f"results-{attempt}"
        command = [str(WORKFLOW_PYTHON), "-m", "d2lperf", "import", "--kept",
                   "report/machines", "--results", str(results), "--local-id", "this-box"]
        both = [subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]
        said = [p.communicate(timeout=120) for p in both]
        for process, (_, err) in zip(both, said):
            assert process.returncode == 0, err
            assert "refused" not in err and "Traceback" not in err, (attempt, err)
        assert archive.kept_refusals(results / archive.KEPT_RECORD) == []
        assert sorted(p.name for p in results.iterdir() if not p.name.startswith(".")) == [
            "box-2026-12-01", "box-2026-12-02", "box-2026-12-03", "box-2026-12-04",
            archive.KEPT_RECORD]


def test_any_error_while_importing_one_kept_archive_refuses_only_that_one(tmp_path,
                                                                            monkeypatch):
    """Errors nobody foresaw (here, MemoryError and RecursionError from inside the checks)
    refuse that archive by name and reason; the next archive is still imported."""
    folder = tmp_path / "report/machines"
    good_kept(folder, "a-box")
    good_kept(folder, "b-box")
    real = archive.verify
    calls = []

    def failing(members, schema):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError()
        if len(calls) == 2:
            raise RecursionError("maximum recursion depth exceeded")
        return real(members, schema)

    monkeypatch.setattr(archive, "verify", failing)
    good_kept(folder, "c-box")
    done = archive.import_kept(folder, tmp_path / "results", SCHEMA)
    assert done[0] == ("a-box.tar.gz", "refused: could not be read (MemoryError)")
    assert done[1] == ("b-box.tar.gz", "refused: could not be read (RecursionError: maximum "
                                       "recursion depth exceeded)")
    assert done[2] == ("c-box.tar.gz", "imported")


def test_ctrl_c_during_a_kept_import_still_stops_it(tmp_path, monkeypatch):
    folder = tmp_path / "report/machines"
    good_kept(folder)

    def interrupted(members, schema):
        raise KeyboardInterrupt

    monkeypatch.setattr(archive, "verify", interrupted)
    with pytest.raises(KeyboardInterrupt):
        archive.import_kept(folder, tmp_path / "results", SCHEMA)


def test_a_refusal_reason_is_one_short_printable_line(tmp_path, monkeypatch):
    folder = tmp_path / "report/machines"
    good_kept(folder)

    def noisy(members, schema):
        raise ValueError("\x1b[31mred\x1b[0m\nsecond line " + "x" * 5000)

    monkeypatch.setattr(archive, "verify", noisy)
    (_, what), = archive.import_kept(folder, tmp_path / "results", SCHEMA)
    assert what.startswith("refused: could not be read (ValueError: \\x1b[31mred")
    assert "\n" not in what and "\x1b" not in what and len(what) < 400


YTE_CONFIG = textwrap.dedent("""\
    __use_yte__: true
    preset: ci
    ?if __import__("pathlib").Path("{canary}").write_text("evaluated") or True:
      machine: pwned
""")


def yte_archive(tmp_path: Path) -> tuple[Path, Path]:
    """A kept archive whose config.yaml asks for yte, with an expression that writes a
    file when evaluated."""
    canary = tmp_path / "yte-evaluated"
    entries = {**GOOD, "box/config.yaml": YTE_CONFIG.format(canary=canary).encode()}
    folder = tmp_path / "wf/report/machines"
    folder.mkdir(parents=True)
    out = folder / "yte-box.tar.gz"
    out.write_bytes(gz_tar(entries=entries))
    return out, canary


def test_the_yte_canary_is_real(tmp_path):
    """Snakemake's yte would evaluate the expression: this is what must never happen."""
    import yte

    _, canary = yte_archive(tmp_path)
    yte.process_yaml(YTE_CONFIG.format(canary=canary))
    assert canary.read_text() == "evaluated"


@pytest.mark.slow  # Snakemake
def test_an_imported_config_yaml_that_asks_for_yte_is_never_evaluated(tmp_path):
    """Imported, then the workflow planned over it (a dry run parses every rule file and
    loads the configuration, as `make report` does): the archive's config.yaml is only a
    file among its results."""
    out, canary = yte_archive(tmp_path)
    work = copy_workflow(tmp_path / "wf-copy")
    (work / "report/machines").mkdir(parents=True, exist_ok=True)
    (work / "report/machines" / out.name).write_bytes(out.read_bytes())
    done, _ = import_kept_cli(work)
    assert done.returncode == 0 and "refused" not in done.stderr, done.stderr
    imported = work / "results/yte-box/config.yaml"
    assert imported.read_text().startswith("__use_yte__: true")
    planned = snakemake(work, "-n", "--cores", "1", "--config", "preset=ci",
                        f"machine={CI_MACHINE}", f"experiment_python={WORKFLOW_PYTHON}")
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert not canary.exists()
    assert "pwned" not in planned.stdout + planned.stderr


def kept_import_folder(results: Path, name: str, kept: bool) -> Path:
    """results/<name>/ as an import made it (``kept``: from a kept archive of that name)."""
    folder = results / name
    folder.mkdir(parents=True)
    (folder / "machine.json").write_bytes(MACHINE_JSON)
    (folder / "imported.json").write_text(json.dumps({
        "archive": f"{name}.tar.gz", "kept": kept, "archive_sha256": "0" * 64}))
    return folder


@pytest.mark.slow  # over a second on 2 cores
def test_a_record_folder_left_by_an_earlier_kept_import_is_removed(tmp_path):
    """Earlier code imported kept-archives.json.tar.gz as results/kept-archives.json/, and
    every later run failed on it (IsADirectoryError): that folder goes, the archive is
    refused, and the record is written."""
    folder = tmp_path / "report/machines"
    good_kept(folder)
    (folder / f"{archive.KEPT_RECORD}.tar.gz").write_bytes(gz_tar())
    kept_import_folder(tmp_path / "results", archive.KEPT_RECORD, kept=True)
    done, _ = import_kept_cli(tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    record = tmp_path / "results" / archive.KEPT_RECORD
    assert record.is_file()
    assert [r["archive"] for r in archive.kept_refusals(record)] == [
        f"{archive.KEPT_RECORD}.tar.gz"]
    assert (tmp_path / "results/box-2026-12-01/imported.json").exists()


@pytest.mark.slow  # over a second on 2 cores
def test_a_record_folder_made_by_someone_else_is_left_and_the_run_goes_on(tmp_path):
    """A folder the user made there is never removed: the record cannot be written, which
    is said, and the import still ends 0 with the good archive imported."""
    folder = tmp_path / "report/machines"
    good_kept(folder)
    mine = kept_import_folder(tmp_path / "results", archive.KEPT_RECORD, kept=False)
    done, _ = import_kept_cli(tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (f"results/{archive.KEPT_RECORD} cannot be written (Is a directory); the report "
            "will not list the refused kept archives") in done.stderr
    assert "report/machines/box-2026-12-01.tar.gz: imported" in done.stdout
    assert (mine / "imported.json").exists()
    assert (tmp_path / "results/box-2026-12-01/imported.json").exists()


def test_a_record_nested_past_any_use_lists_no_refusal(tmp_path):
    """The report reads results/kept-archives.json: a hand-edited one nested 200,000 deep
    is unreadable, not an error of the report."""
    record = tmp_path / archive.KEPT_RECORD
    record.write_bytes(deep(200_000))
    assert archive.kept_refusals(record) == []
