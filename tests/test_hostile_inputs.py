"""Hostile inputs: crafted archives, machine ids, folder names and config values.

Nothing from an archive, a folder name or the config ever runs as a command; a bad one
is refused with a message naming it, and nothing is written."""

import copy
import gzip
import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
import zlib
from pathlib import Path

import pytest
import test_kept_archives_robust as crafted
import yaml

from conftest import (
    CI_MACHINE,
    REPO,
    WORKFLOW_PYTHON,
    copy_workflow,
    crashing_python,
    jobs_planned,
    snakemake,
)
from d2lperf import archive, configcheck
from d2lperf import machine as machines
from d2lperf.archive import ArchiveError, import_archive
from d2lperf.configcheck import ConfigError, check_config
from d2lperf.data import find_fashion_mnist

SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"
CONFIG_SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
CONFIG = yaml.safe_load((REPO / "config/config.yaml").read_text())
SAMPLES = (b"section,case,metric,unit,repeat,value,epoch,devices\n"
           b"hybridize,mlp_before_hybridize,time,s,0,0.4,,\n")
MACHINE_JSON = json.dumps({"machine": "box", "cpu": {"model": "X", "logical_cores": 2},
                           "gpus": [], "memory_bytes": 1}).encode()
SUMMARY_COLUMNS = ("section,case,metric,epoch,unit,devices,label,count,min,median,max,"
                   "ci_low,ci_high,status")
SUMMARY = (SUMMARY_COLUMNS + "\n"
           "hybridize,mlp_before_hybridize,time,,s,,MLP,1,0.4,0.4,0.4,0.4,0.4,ok\n").encode()
VERDICTS = (b"claim,name,section,verdict,evidence,rule\n"
            b"hybridize is faster,hybridize_speeds_up_mlp,hybridize,inconclusive,n = 1,rule\n"
            )
GOOD = [("box/machine.json", MACHINE_JSON),
        ("box/hybridize/samples.csv", SAMPLES),
        ("box/hybridize/run.json", b'{"section": "hybridize", "status": "ok"}'),
        ("box/summary.csv", SUMMARY),
        ("box/verdicts.csv", VERDICTS)]


def tree(folder: Path) -> dict[str, str]:
    """Every file and folder under folder, hidden ones included, with its checksum."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest()
                                         if p.is_file() else "dir")
            for p in sorted(folder.rglob("*"))}


def tar(out: Path, entries, machine="box", files=None, manifest=None, level=1) -> Path:
    """A gzip'd tar of the entries (name, bytes) in order, duplicates and all, behind a
    manifest listing them (or the given files mapping, or the given raw manifest)."""
    if manifest is None:
        listed = files if files is not None else {n: archive.sha256(d) for n, d in entries}
        manifest = json.dumps({"format": 1, "machine": machine, "code": {},
                               "files": listed}).encode()
    with tarfile.open(out, "w:gz", compresslevel=level) as handle:
        for name, data in [("manifest.json", manifest), *entries]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            handle.addfile(info, io.BytesIO(data))
    return out


def replaced(name, data):
    return [(n, data if n == name else d) for n, d in GOOD]


def renamed(machine):
    return [(machine + n[len("box"):], d) for n, d in GOOD]


def claimed_but_absent(out: Path) -> Path:
    """A member whose header claims 1 GiB, with only a few bytes behind it: refused from
    the header, before any of its content is read (reading would find it truncated)."""
    listing = json.dumps({"format": 1, "machine": "box", "code": {},
                          "files": {"box/big.bin": "0" * 64}}).encode()
    raw = io.BytesIO()
    for name, data in (("manifest.json", listing),):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        raw.write(info.tobuf(tarfile.PAX_FORMAT))
        raw.write(data + b"\0" * (-len(data) % 512))
    info = tarfile.TarInfo("box/big.bin")
    info.size = 1 << 30
    raw.write(info.tobuf(tarfile.PAX_FORMAT) + b"\0" * 4096)
    out.write_bytes(gzip.compress(raw.getvalue()))
    return out


def extended_header(out: Path, claimed: int, present: int, kind=tarfile.XHDTYPE) -> Path:
    """An extended header (PAX, or GNU long name) claiming ``claimed`` bytes, with
    ``present`` bytes of zeros behind it (compressed as it is written: a header of 1 GB
    costs some MB on disk), before a member."""
    info = tarfile.TarInfo("././@PaxHeader" if kind == tarfile.XHDTYPE else "././@LongLink")
    info.type, info.size = kind, claimed
    gz = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(out, "wb") as handle:
        handle.write(gz.compress(info.tobuf(tarfile.USTAR_FORMAT)))
        zeros = b"\0" * (1 << 20)
        for _ in range(present >> 20):
            handle.write(gz.compress(zeros))
        handle.write(gz.compress(b"\0" * (present & ((1 << 20) - 1))))
        handle.write(gz.flush())
    return out


def many_members(out: Path) -> Path:
    entries = GOOD + [(f"box/many/{i}.txt", b"x") for i in range(archive.MAX_MEMBERS)]
    return tar(out, entries)


def too_much_in_total(out: Path) -> Path:
    part = b"\0" * (archive.MAX_MEMBER_BYTES - 1)
    count = archive.MAX_TOTAL_BYTES // len(part) + 1
    digest = archive.sha256(part)
    entries = GOOD + [(f"box/part{i}.bin", part) for i in range(count)]
    files = {n: archive.sha256(d) for n, d in GOOD} | {n: digest for n, _ in entries[len(GOOD):]}
    return tar(out, entries, files=files)


def duplicated_member(out: Path) -> Path:
    bad = SAMPLES.replace(b"0.4", b"9.9")
    files = {n: archive.sha256(d) for n, d in GOOD} | {"box/hybridize/samples.csv":
                                                      archive.sha256(bad)}
    return tar(out, GOOD + [("box/hybridize/samples.csv", bad)], files=files)


def duplicated_manifest(out: Path) -> Path:
    second = json.dumps({"format": 1, "machine": "box", "code": {},
                         "files": {n: archive.sha256(d) for n, d in GOOD}}).encode()
    return tar(out, [*GOOD, ("manifest.json", second)])


def written(make):
    """A maker of a crafted archive's bytes (test_kept_archives_robust) as a HOSTILE maker."""
    def write(out: Path) -> Path:
        out.write_bytes(make())
        return out
    return write


def negative_size() -> bytes:
    """A PAX header giving the member after it a size of -600 bytes (tarfile would step
    back a block, onto the header it has just read)."""
    return crafted.gz_tar(crafted.pax(crafted.record("size", "-600"))
                          + crafted.member("box/negative.bin", b""))


HOSTILE = {
    "2,000 PAX headers in a row": (written(lambda: crafted.pax_chain(2000)),
                                   "more than 4 extended headers in a row before member 5"),
    "2,000 GNU long names in a row": (written(lambda: crafted.long_name_chain(2000)),
                                      "more than 4 extended headers in a row"),
    "global PAX header": (written(crafted.global_header), "global extended header before "
                                                          "member 5"),
    "old GNU sparse member": (written(lambda: crafted.old_gnu_sparse(3)),
                              "refusing sparse file 'box/sparse.bin'"),
    "GNU sparse 0.0": (written(lambda: crafted.pax_sparse_00(3)),
                       "refusing sparse file 'box/sparse.bin'"),
    "GNU sparse 0.1": (written(lambda: crafted.pax_sparse_01(3)),
                       "refusing sparse file 'box/sparse.bin'"),
    "GNU sparse 1.0": (written(lambda: crafted.pax_sparse_10(3)),
                       "refusing sparse file 'box/sparse.bin'"),
    "GNU sparse keyword alone": (
        written(lambda: crafted.gz_tar(crafted.pax(crafted.record("GNU.sparse.realsize",
                                                                  "9" * 5000))
                                       + crafted.member("box/x.bin", b""))),
        "refusing sparse file 'box/x.bin'"),
    "member size negative": (written(negative_size), "box/negative.bin claims a size of -600"),
    "owner of 1,000 characters": (written(lambda: crafted.long_owner(1, 1020)),
                                  "its owner is 1000 characters, more than the limit of 400"),
    "manifest nested 200,000 deep": (lambda o: tar(o, GOOD, manifest=b"[" * 200_000),
                                     "manifest.json: JSON nested more than 32 levels deep"),
    "run.json nested 40 deep": (
        lambda o: tar(o, replaced("box/hybridize/run.json", b"[" * 40 + b"]" * 40)),
        "box/hybridize/run.json: JSON nested more than 32 levels deep"),
    "run.json over 1 MB": (
        lambda o: tar(o, replaced("box/hybridize/run.json",
                                  b"[" + b"{}," * (1 << 20) + b"{}]")),
        "box/hybridize/run.json: 3145732 bytes of JSON, more than the limit of 1048576"),
    "machine id of the record of kept archives": (
        lambda o: tar(o, renamed("kept-archives.json"), machine="kept-archives.json"),
        "its folder 'kept-archives.json' is not a valid machine id: the project writes "
        "kept-archives.json under results/ itself"),
    "machine id of the record of kept archives, in capitals": (
        lambda o: tar(o, renamed("KEPT-ARCHIVES.JSON"), machine="KEPT-ARCHIVES.JSON"),
        "the project writes kept-archives.json under results/ itself"),
    "machine id runs a command": (lambda o: tar(o, renamed("$(touch pwned)"),
                                                machine="$(touch pwned)"), "machine id"),
    "machine id of 300 characters": (lambda o: tar(o, renamed("m" * 300), machine="m" * 300),
                                     "machine id"),
    "machine id of a staging folder": (lambda o: tar(o, renamed(".import-x"),
                                                     machine=".import-x"), "machine id"),
    "machine id not a string": (lambda o: tar(o, GOOD, machine=["box"]), "machine id"),
    "member claims 1 GiB": (claimed_but_absent, "box/big.bin is 1073741824 bytes"),
    "members add up past the limit": (too_much_in_total, "in all, more than"),
    "too many members": (many_members, "more than 10000 members"),
    "member twice": (duplicated_member, "twice: box/hybridize/samples.csv"),
    "manifest twice": (duplicated_manifest, "twice: manifest.json"),
    "manifest not JSON": (lambda o: tar(o, GOOD, manifest=b"{not json"), "manifest.json"),
    "manifest files not a mapping": (lambda o: tar(o, GOOD, files=[n for n, _ in GOOD]),
                                     "manifest.json"),
    "manifest checksum not a SHA-256": (
        lambda o: tar(o, GOOD, files={n: "xyz" for n, _ in GOOD}),
        "unreadable manifest.json: files."),
    "manifest code not an object": (
        lambda o: tar(o, GOOD, manifest=json.dumps({
            "format": 1, "machine": "box", "code": "abc",
            "files": {n: archive.sha256(d) for n, d in GOOD}}).encode()),
        "unreadable manifest.json: code: 'abc' is not of type 'object'"),
    "machine.json not JSON": (lambda o: tar(o, replaced("box/machine.json", b"{oops")),
                              "box/machine.json: not JSON"),
    "machine.json not an object": (lambda o: tar(o, replaced("box/machine.json", b"[1, 2]")),
                                   "box/machine.json: not a JSON object"),
    "run.json not JSON": (lambda o: tar(o, replaced("box/hybridize/run.json", b"\xff\xfe")),
                          "box/hybridize/run.json: not JSON"),
    "summary.csv without its median column": (
        lambda o: tar(o, replaced("box/summary.csv", SUMMARY.replace(b",median,", b",mid,"))),
        "box/summary.csv: missing column median"),
    "summary.csv with a word for a number": (
        lambda o: tar(o, replaced("box/summary.csv", SUMMARY.replace(b",0.4,0.4,ok", b",0.4,"
                                                                     b"fast,ok"))),
        "box/summary.csv: row 2: ci_high"),
    "verdicts.csv with an unknown verdict": (
        lambda o: tar(o, replaced("box/verdicts.csv", VERDICTS.replace(b"inconclusive",
                                                                       b"proven"))),
        "box/verdicts.csv: row 2: verdict 'proven'"),
    "verdicts.csv with a claim twice": (
        lambda o: tar(o, replaced("box/verdicts.csv", VERDICTS + VERDICTS.splitlines(True)[1])),
        "box/verdicts.csv: row 3: claim 'hybridize_speeds_up_mlp' twice"),
    "summary.csv without verdicts.csv": (
        lambda o: tar(o, [(n, d) for n, d in GOOD if n != "box/verdicts.csv"]),
        "box/summary.csv without box/verdicts.csv"),
    "summary figures without their raw samples": (
        lambda o: tar(o, [(n, d) for n, d in GOOD if "/hybridize/" not in n]),
        "figures of hybridize but no box/hybridize/samples.csv"),
    "PAX header claims 1.5 GB": (lambda o: extended_header(o, 3 << 29, 4096),
                                "extended header of 1610612736 bytes"),
    "GNU long name claims 1 GiB": (lambda o: extended_header(o, 1 << 30, 4096,
                                                             tarfile.GNUTYPE_LONGNAME),
                                   "extended header of 1073741824 bytes"),
    "table over its limit": (
        lambda o: tar(o, replaced("box/hybridize/samples.csv", SAMPLES + SAMPLES.splitlines(
            True)[1] * (archive.MAX_TABLE_BYTES // 40))),
        "table box/hybridize/samples.csv is"),
    "summary.csv interval below its median": (
        lambda o: tar(o, replaced("box/summary.csv", SUMMARY.replace(b",0.4,0.4,ok",
                                                                     b",0.4,0.3,ok"))),
        "box/summary.csv: row 2: median 0.4 is above ci_high 0.3"),
    "summary.csv with a negative time": (
        lambda o: tar(o, replaced("box/summary.csv", SUMMARY.replace(b",1,0.4,", b",1,-5,"))),
        "box/summary.csv: row 2: min: -5.0 is less than or equal to the minimum of 0"),
    "summary.csv with a count that is not whole": (
        lambda o: tar(o, replaced("box/summary.csv", SUMMARY.replace(b",MLP,1,", b",MLP,2.5,"))),
        "box/summary.csv: row 2: count: 2.5 is not of type 'integer'"),
    "summary.csv with an infinite median": (
        lambda o: tar(o, replaced("box/summary.csv", SUMMARY.replace(b",0.4,0.4,0.4,0.4,0.4,",
                                                                     b",0.4,inf,0.4,0.4,0.4,"))),
        "box/summary.csv: row 2: median: 'inf' is not of type"),
    "samples.csv with nan": (
        lambda o: tar(o, replaced("box/hybridize/samples.csv", SAMPLES.replace(b"0.4", b"nan"))),
        "box/hybridize/samples.csv: row 2: value: 'nan' is not of type 'number'"),
    "samples.csv with inf": (
        lambda o: tar(o, replaced("box/hybridize/samples.csv", SAMPLES.replace(b"0.4", b"inf"))),
        "box/hybridize/samples.csv: row 2: value: 'inf' is not of type 'number'"),
    "samples.csv with a negative time": (
        lambda o: tar(o, replaced("box/hybridize/samples.csv", SAMPLES.replace(b"0.4", b"-5"))),
        "box/hybridize/samples.csv: row 2: value: -5.0 is less than or equal to the minimum"),
    "run.json cut short": (
        lambda o: tar(o, replaced("box/hybridize/run.json", b'{"section": "hybr')),
        "box/hybridize/run.json: not JSON"),
    "run.json an empty list": (lambda o: tar(o, replaced("box/hybridize/run.json", b"[]")),
                               "box/hybridize/run.json: not a JSON object"),
    "run.json without its section": (
        lambda o: tar(o, replaced("box/hybridize/run.json", b'{"status": "ok"}')),
        "box/hybridize/run.json: not a run record: the record: 'section' is a required"),
    "run.json of another section": (
        lambda o: tar(o, replaced("box/hybridize/run.json",
                                  b'{"section": "async_computation", "status": "ok",'
                                  b' "parameters": {"size": 2000}}')),
        "box/hybridize/run.json: the run record of async_computation"),
    "machine.json without its gpus": (
        lambda o: tar(o, replaced("box/machine.json", b'{"cpu": {"model": "X"}}')),
        "box/machine.json: the file: 'gpus' is a required property"),
    "member name with a newline": (lambda o: tar(o, GOOD + [("box/evil\nname.txt", b"x")]),
                                   "refusing member name"),
    "hidden member": (lambda o: tar(o, GOOD + [("box/.snakemake/metadata", b"x")]),
                      "refusing member name"),
}


@pytest.mark.slow  # over a second on 2 cores
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_archive_is_refused_and_nothing_is_written(tmp_path, kind):
    make, message = HOSTILE[kind]
    results_root = tmp_path / "results"
    (results_root / "existing").mkdir(parents=True)
    (results_root / "existing/summary.csv").write_bytes(SUMMARY)
    bad = make(tmp_path / "hostile.tar.gz")
    before = tree(tmp_path)
    with pytest.raises(ArchiveError) as refusal:
        import_archive(bad, results_root, SCHEMA)
    assert message in str(refusal.value)
    assert tree(tmp_path) == before


# VmHWM: this process's own peak resident memory. Not getrusage's ru_maxrss: Linux carries
# that high-water mark across exec, so a child of a large pytest process reports pytest's.
PEAK = """
import sys
from pathlib import Path
from d2lperf.archive import ArchiveError, import_archive
try:
    import_archive(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
    print("imported")
except ArchiveError as error:
    print("refused:", error)
status = Path("/proc/self/status").read_text()
print(int(next(l for l in status.splitlines() if l.startswith("VmHWM:")).split()[1]) // 1024)
"""


def at_the_limits(out: Path) -> Path:
    """A good archive whose members add up to just under the total limit."""
    part = b"\1" * (archive.MAX_MEMBER_BYTES - 1)
    count = (archive.MAX_TOTAL_BYTES - 4096) // len(part)
    return tar(out, GOOD + [(f"box/part{i}.bin", part) for i in range(count)])


@pytest.mark.slow  # over a second on 2 cores
@pytest.mark.parametrize("make, outcome", [
    (lambda o: extended_header(o, 600 << 20, 600 << 20), "refused: extended header"),
    (at_the_limits, "imported"),
    (written(lambda: crafted.pax_sparse_10(4_000_000)), "refused: refusing sparse file"),
    (written(lambda: crafted.old_gnu_sparse(20_000)), "refused: refusing sparse file"),
    (written(lambda: crafted.flat_json_member(16_000_000)),
     "refused: box/notes.json: 16000003 bytes of JSON"),
], ids=["PAX header of 600 MB", "at the limits", "GNU sparse 1.0 map of 4 million entries",
        "old GNU sparse map of 20,000 blocks", "JSON of 16 MB of empty objects"])
def test_peak_memory_of_an_import_stays_under_200_mb(tmp_path, make, outcome):
    """Measured in a fresh interpreter: the import's own peak resident memory (the
    workflow environment's modules take about 70 MB of it)."""
    bad = make(tmp_path / "archive.tar.gz")
    done = subprocess.run([str(WORKFLOW_PYTHON), "-c", PEAK, str(bad), str(tmp_path / "results"),
                           str(SCHEMA)], capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO / "scripts"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    said, peak = done.stdout.splitlines()[-2:]
    assert said.startswith(outcome)
    assert int(peak) < 200, f"peak {peak} MB"


def test_good_archive_of_the_same_shape_is_imported(tmp_path):
    """The hostile archives above differ from this one in one thing each."""
    target = import_archive(tar(tmp_path / "good.tar.gz", GOOD), tmp_path / "results", SCHEMA)
    assert (target / "summary.csv").read_bytes() == SUMMARY
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["box"]


@pytest.mark.slow  # over a second on 2 cores
@pytest.mark.parametrize("new_id", ["../../x", "/tmp/elsewhere", "$(touch pwned)", "a/b", "",
                                    "x" * 300, ".hidden"])
def test_import_as_a_bad_id_is_refused(tmp_path, new_id):
    good = tar(tmp_path / "good.tar.gz", GOOD)
    work = tmp_path / "work"
    work.mkdir()
    before = tree(tmp_path)
    done = subprocess.run(
        [str(WORKFLOW_PYTHON), "-m", "d2lperf", "import", str(good),
         "--as", new_id, "--results", str(work / "results")],
        cwd=work, capture_output=True, text=True)
    assert done.returncode != 0
    assert "machine id" in done.stderr and "Traceback" not in done.stderr
    assert tree(tmp_path) == before


def test_import_cleans_staging_folders_of_dead_imports(tmp_path):
    """An import killed half-way leaves its staging folder; the next import removes it."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    results_root = tmp_path / "results"
    stale = results_root / f".import-{gone.pid}-abc"
    stale.mkdir(parents=True)
    (stale / "summary.csv").write_bytes(SUMMARY)
    import_archive(tar(tmp_path / "good.tar.gz", GOOD), results_root, SCHEMA)
    assert sorted(p.name for p in results_root.iterdir()) == ["box"]


@pytest.mark.parametrize("text", ["amd-epyc-2c-nogpu", "ci-test-machine", "Box_1.2",
                                  "intel-xeon-8c-2xnvidia-a100--system-blas"])
def test_machine_ids_that_are_fine(text):
    assert machines.check_machine_id(text) == text


@pytest.mark.parametrize("text", ["", "../x", "/abs", "a/b", "$(id)", "a b", "a\nb", ".x",
                                  "-x", "x" * 121, "é", 7])
def test_machine_ids_that_are_refused(text):
    with pytest.raises(machines.MachineIdError, match="machine id"):
        machines.check_machine_id(text)


def test_the_derived_machine_id_passes():
    gpus = ["NVIDIA H100 80GB HBM3"] * 4 + ["NVIDIA A100-SXM4-80GB"] * 4 + ["Tesla V100"]
    derived = machines.machine_id(cpu="AMD EPYC 7763 64-Core Processor", cores=256,
                                  gpu_names=gpus)
    assert machines.check_machine_id(derived + "--system-blas")


def placeholders(rules_text: str) -> list[str]:
    """Every {placeholder} inside the shell: directives of a rules file."""
    found = []
    for block in re.findall(r"^(\s*)shell:\n((?:\1\s+.*\n)+)", rules_text, re.M):
        text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', block[1]))
        found += re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", text)
    return found


def test_every_shell_placeholder_is_quoted():
    found = [(path.name, p) for path in sorted((REPO / "workflow/rules").glob("*.smk"))
             for p in placeholders(path.read_text())]
    assert len(found) > 40
    assert [f for f in found if not f[1].endswith(":q")] == []


def test_threads_above_the_cores_are_refused():
    with pytest.raises(ConfigError, match=r"config key threads = 1000: more than the 2 cores"):
        configcheck.check_threads(1000, 2)
    configcheck.check_threads(2, 2)
    configcheck.check_threads("auto", 2)


def test_machine_of_300_characters_names_the_key():
    config = copy.deepcopy(CONFIG)
    config["machine"] = "m" * 300
    with pytest.raises(ConfigError, match="config key machine = 'mmm"):
        check_config(config, CONFIG_SCHEMA)


def fashion_mnist() -> Path:
    try:
        return find_fashion_mnist()
    except Exception:
        pytest.skip("no copy of Fashion-MNIST on this machine (make data)")


@pytest.mark.slow  # over a second on 2 cores
def test_data_dir_must_hold_the_four_verified_files(tmp_path):
    with pytest.raises(ConfigError, match=r"config key data_dir = .*missing: no such folder"):
        configcheck.check_data_dir(str(tmp_path / "nowhere"))
    source = fashion_mnist()
    folder = tmp_path / "data"
    shutil.copytree(source, folder)
    configcheck.check_data_dir(str(folder))
    labels = folder / "t10k-labels-idx1-ubyte.gz"
    labels.write_bytes(labels.read_bytes()[:100])
    with pytest.raises(ConfigError, match=r"config key data_dir = .*t10k-labels-idx1-ubyte"):
        configcheck.check_data_dir(str(folder))


@pytest.mark.slow  # Snakemake
@pytest.mark.parametrize("setting, key", [
    ("data_dir=$(touch pwned)/y", "data_dir"),
    ("threads=1000", "threads"),
    ("machine=" + "m" * 300, "machine"),
])
def test_bad_config_stops_before_any_job(tmp_path, setting, key):
    """A real run (not a dry run), so an unquoted value would execute."""
    work = copy_workflow(tmp_path / "wf")
    done = snakemake(work, "--cores", "1", "results/x/multi_gpu_gluon/run.json", "--config",
                     "preset=ci", "machine=x", f"experiment_python={WORKFLOW_PYTHON}", setting)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"config key {key} = " in said
    assert "Traceback" not in said and "OSError" not in said
    assert not (work / "results").exists() and not (work / "pwned").exists()


@pytest.mark.slow  # Snakemake
def test_data_dir_that_needs_quoting_runs_nothing(tmp_path):
    """A real Fashion-MNIST folder whose name is shell syntax reaches the job as one word."""
    source = fashion_mnist()
    work = copy_workflow(tmp_path / "wf")
    folder = work / "d $(touch pwned);"
    folder.mkdir()
    for path in source.iterdir():
        (folder / path.name).symlink_to(path.resolve())
    done = snakemake(work, "--cores", "1", "results/x/multi_gpu_gluon/run.json", "--config",
                     "preset=ci", "machine=x", "frameworks=[mxnet]",
                     f"experiment_python={crashing_python(tmp_path, 'mxnet')}",
                     f"data_dir={folder}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert not (work / "pwned").exists()
    run = json.loads((work / "results/x/multi_gpu_gluon/run.json").read_text())
    assert run["section"] == "multi_gpu_gluon" and run["status"] == "failed"


def planned_jobs(work: Path, *config: str) -> subprocess.CompletedProcess:
    return snakemake(work, "-n", "--cores", "1", "--config", "preset=ci", *config,
                     f"experiment_python={WORKFLOW_PYTHON}")


@pytest.mark.slow  # Snakemake
def test_results_folder_named_as_a_command_is_refused(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    hostile = work / "results" / "$(touch pwned)"
    hostile.mkdir(parents=True)
    (hostile / "summary.csv").write_bytes(SUMMARY)
    (hostile / "verdicts.csv").write_bytes(VERDICTS)
    done = planned_jobs(work, f"machine={CI_MACHINE}")
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "folder results/$(touch pwned)" in said and "machine id" in said


@pytest.mark.slow  # Snakemake
def test_staging_folder_is_never_a_machine(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    staging = work / "results" / ".import-123-abc"
    staging.mkdir(parents=True)
    (staging / "summary.csv").write_bytes(SUMMARY)
    (staging / "verdicts.csv").write_bytes(VERDICTS)
    done = planned_jobs(work, f"machine={CI_MACHINE}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "compare" not in jobs_planned(done.stdout + done.stderr)


@pytest.mark.slow  # Snakemake
def test_run_into_an_imported_folder_is_refused(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    target = import_archive(tar(tmp_path / "good.tar.gz", GOOD), work / "results", SCHEMA)
    done = planned_jobs(work, "machine=box")
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"results/{target.name} holds results imported from another machine" in said
