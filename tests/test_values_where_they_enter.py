"""Every value is checked where it enters: a data-parallel option the worker would refuse
is refused by the config check, naming the config key; a run record with a number that
is no number (NaN, infinity), an energy or power no GPU draws or a name of a page's width
is refused wherever it is read (a results folder, an archive), and the manager never
writes one over the last good run; an NVML reading that is negative, not finite or
implausible is no reading, with the reason; and the site never writes into the results
it reads."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time

import pytest
from test_energy import nvml  # noqa: F401 -- the NVML stand-in, as pynvml
from test_hostile_inputs import MACHINE_JSON, replaced, tar

from conftest import REPO, shipped_config
from d2lperf import energy, hostlock, results
from d2lperf.archive import ArchiveError, import_archive
from d2lperf.commands import site
from d2lperf.configcheck import ConfigError, check_config
from d2lperf.results import RecordError, check_run

CONFIG_SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
SAMPLES_SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"
CONFIG = shipped_config()


# --- The config: what the data-parallel worker (d2lperf.groups) would refuse ---------

def data_parallel(**options):
    """The shipped config with the ci preset's data-parallel options changed (it trains
    lenet on 1024 images a sample, counts [1, 2], batch 256, train_limit 4096); an option
    given as None is left out, as a config's null leaves out a section's declared key."""
    config = copy.deepcopy(CONFIG)
    config["presets"]["ci"]["data_parallel"].update(options)
    return config


def refused(config) -> str:
    with pytest.raises(ConfigError) as error:
        check_config(config, CONFIG_SCHEMA)
    return str(error.value)


KEY = "config key presets.ci.data_parallel."


@pytest.mark.parametrize("options, said", [
    ({"seed": 2**32}, KEY + "seed = 4294967296: out of bounds; allowed: an integer from 0 to "
     "4294967295"),
    ({"device_counts": [1, 1_000_000]}, KEY + "device_counts.1 = 1000000: out of bounds; "
     "allowed: an integer from 1 to 1024"),
    ({"images": [1000]}, KEY + "images = [1000]: 1000 images of lenet do not split into whole "
     "steps of 256 images (batch_size) on each of 1 and 2 devices (device_counts); allowed: "
     "a multiple of 512"),
    ({"images": [1024, 2048], "models": ["lenet", "resnet18"], "learning_rates": [0.2, 0.1],
      "device_counts": [1, 3]},
     KEY + "images = [1024, 2048]: 1024 images of lenet do not split into whole steps of 256 "
     "images (batch_size) on each of 1 and 3 devices (device_counts); allowed: a multiple "
     "of 768"),
    ({"train_limit": 100}, KEY + "train_limit = 100: leaves each of 2 devices "
     "(device_counts) 50 images, less than one batch of 256 (batch_size); allowed: at least "
     "512"),
    ({"train_limit": 10**6}, KEY + "train_limit = 1000000: out of bounds; allowed: an integer "
     "from 1 to 60000"),
    ({"device_counts": [1, 512], "images": [131072], "train_limit": None},
     KEY + "device_counts = [1, 512]: Fashion-MNIST's 60000 training images (train_limit not "
     "set) leave each of 512 devices 117 images, less than one batch of 256 (batch_size); "
     "allowed: at most 234 devices"),
    ({"cpu_models": ["resnet18"]}, KEY + "cpu_models = ['resnet18']: resnet18 is not one of "
     "the models trained (models = ['lenet']); allowed: some of ['lenet']"),
])
def test_a_data_parallel_option_the_worker_refuses_is_refused_naming_the_config_key(
        options, said):
    message = refused(data_parallel(**options))
    print(message)
    assert said in message
    assert "--" not in message  # a key of the config, not a flag of the worker


def test_data_parallel_options_at_their_bounds_pass():
    check_config(data_parallel(seed=2**32 - 1, train_limit=512), CONFIG_SCHEMA)
    check_config(data_parallel(train_limit=60000, device_counts=[1, 2, 4, 8],
                               images=[2048]), CONFIG_SCHEMA)


# --- Run records: finite numbers, physical bounds, names of a sane length -----------------

def reading(**gpu):
    """An NVML reading of one GPU through 9.87 s, as the harness keeps it."""
    return {"source": "NVML", "what": energy.WHAT, "seconds": 9.87, "throttled": False,
            "gpus": [{"index": 0, "cuda_ordinal": 0, "name": "NVIDIA H200",
                      "energy_j": 2960.18, "energy_source": "total_energy_counter",
                      "mean_w": 299.9, "start": {"sm_mhz": 1980}, "end": {"sm_mhz": 1965},
                      **gpu}]}


def record(**fields):
    return {"format_version": results.FORMAT_VERSION, "section": "multi_gpu_gluon",
            "framework": "pytorch", "status": "ok", "parameters": {"train_limit": None},
            "wall_seconds": 12.5, **fields}


def with_reading(**gpu):
    return record(notes={"gpu_energy": reading(**gpu)})


FIELD = "field 'notes.gpu_energy.gpus.0."
BAD_RECORDS = {
    "energy of infinity": (with_reading(energy_j=float("inf")),
                           FIELD + "energy_j': inf is not of type 'number', 'null'"),
    "power of NaN": (with_reading(mean_w=float("nan")),
                     FIELD + "mean_w': nan is not of type 'number'"),
    "energy of 1e308": (with_reading(energy_j=1e308),
                        FIELD + "energy_j': 1e+308 J in 9.87 s is more than a GPU draws "
                        "(at most 5000 W"),
    "negative energy": (with_reading(energy_j=-2960.18),
                        FIELD + "energy_j': -2960.18 is less than the minimum of 0"),
    "power of a megawatt": (with_reading(mean_w=1e6),
                            FIELD + "mean_w': 1e+06 W is more than a GPU draws (at most "
                            "5000 W"),
    "a GPU name of 200,000 characters": (with_reading(name="H" * 200_000),
                                         FIELD + "name': 'HHHHH"),
    "an epoch's energy of 1e308": (
        record(notes={"gpu_energy_epochs": {"resnet18_1_device": {
            "1": reading(energy_j=1e308)}}}),
        "field 'notes.gpu_energy_epochs.resnet18_1_device.1.gpus.0.energy_j': 1e+308 J in "
        "9.87 s is more than a GPU draws"),
    "wall seconds of infinity": (record(wall_seconds=float("inf")),
                                 "field 'wall_seconds': inf is not of type 'number'"),
    "a probe that moved NaN": (
        record(steadiness={"probe_before_s": 0.2, "probe_after_s": 0.2,
                           "probe_moved": float("nan"), "flags": []}),
        "field 'steadiness.probe_moved': nan is not of type 'number'"),
}


@pytest.mark.parametrize("case", BAD_RECORDS)
def test_a_run_record_with_a_value_no_step_can_show_is_refused_naming_the_field(case):
    bad, said = BAD_RECORDS[case]
    text = json.dumps(bad)  # as a file holds it: Infinity, NaN
    with pytest.raises(RecordError) as error:
        check_run(json.loads(text), "r/multi_gpu_gluon_pytorch/run.json",
                  "multi_gpu_gluon_pytorch")
    message = str(error.value)
    print(message[:300])
    assert said in message
    assert len(message) < 1000  # a name of 200,000 characters is not repeated whole


def test_a_run_record_within_the_bounds_passes():
    check_run(with_reading(), "run.json", "multi_gpu_gluon_pytorch")
    check_run(with_reading(energy_j=None, energy_reason="no reading", name="H" * 200),
              "run.json", "multi_gpu_gluon_pytorch")
    # a short region is held to a second's worth: the counter moves in steps
    check_run(record(notes={"gpu_energy": {**reading(energy_j=700.0, mean_w=70000.0),
                                           "seconds": 0.01}}),
              "run.json", "multi_gpu_gluon_pytorch")


def test_an_archive_with_a_record_or_machine_no_page_can_show_is_refused(tmp_path):
    run = json.dumps({"section": "hybridize", "status": "ok",
                      "notes": {"gpu_energy": reading(energy_j=float("inf"))}}).encode()
    with pytest.raises(ArchiveError, match="gpus.0.energy_j': inf is not of type"):
        import_archive(tar(tmp_path / "a.tar.gz", replaced("box/hybridize/run.json", run)),
                       tmp_path / "results", SAMPLES_SCHEMA)
    machine = json.loads(MACHINE_JSON)
    machine["gpus"] = [{"name": "G" * 200_000, "driver": "550", "memory": "80 GiB"}]
    with pytest.raises(ArchiveError, match=r"gpus.0.name: 'GGGG.*'... is longer than 200 "
                                           r"characters \(200000 here\)"):
        import_archive(tar(tmp_path / "b.tar.gz",
                           replaced("box/machine.json", json.dumps(machine).encode())),
                       tmp_path / "results", SAMPLES_SCHEMA)
    assert not (tmp_path / "results" / "box").exists()
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(machine))
    with pytest.raises(RecordError, match="field 'gpus.0.name'"):
        results.read_machine(path)
    machine["cpu"]["model"], machine["gpus"] = "C" * 201, []
    path.write_text(json.dumps(machine))
    with pytest.raises(RecordError, match="field 'cpu.model'"):
        results.read_machine(path)


def test_long_names_wrap_on_the_site_and_the_report():
    """A name within its cap (200 characters, no space) still wraps rather than widening
    the machines table."""
    index = (REPO / "report/templates/site.html.j2").read_text(encoding="utf-8")
    assert '<td class="name">{{ m.cpu }}' in index and '<td class="name">{{ m.gpus }}' in index
    assert "td.name { overflow-wrap: anywhere;" in index
    page = (REPO / "report/templates/report.html.j2").read_text(encoding="utf-8")
    assert "caption { text-align: left; font-weight: 600; padding: .2rem 0; " \
           "overflow-wrap: anywhere; }" in page


# --- NVML: a reading no GPU gives is no reading, with the reason -------------------------

def metered(seconds=0.1):
    with energy.Meter() as meter:
        time.sleep(seconds)
    return meter.reading()


@pytest.mark.parametrize("how, said", [
    ("-300 W", "NVML's power reading: -300 W is negative"),
    ("NaN W", "NVML's power reading: nan W is not a finite number"),
    ("10 MW", "NVML's power reading: 1e+07 W is more than a GPU draws (at most 5000 W"),
    ("counter jump", "NVML's total-energy counter: 1e+30 J in "),
    ("counter NaN", "NVML's total-energy counter: nan J is not a finite number"),
])
def test_an_nvml_reading_no_gpu_gives_is_no_reading_with_the_reason(nvml, monkeypatch,  # noqa: F811
                                                                    how, said):
    if how in ("-300 W", "NaN W", "10 MW"):
        monkeypatch.setenv("FAKE_NVML_NO_ENERGY_COUNTER", "1")
        watts = {"-300 W": -300, "NaN W": float("nan"), "10 MW": 10_000_000}[how]
        monkeypatch.setattr(nvml, "nvmlDeviceGetPowerUsage",
                            lambda handle: watts * 1000 if isinstance(watts, float)
                            else int(1000 * watts))
    else:
        counts = iter([7_000_000_000, 7_000_000_000 + 10**33] if how == "counter jump"
                      else [7_000_000_000, float("nan")])
        monkeypatch.setattr(nvml, "nvmlDeviceGetTotalEnergyConsumption",
                            lambda handle: next(counts))
    found = metered()
    [gpu] = found["gpus"]
    print(gpu)
    assert gpu["energy_j"] is None and "mean_w" not in gpu
    assert said in gpu["energy_reason"]
    assert energy.joules(found) is None
    check_run(record(notes={"gpu_energy": json.loads(json.dumps(found))}), "run.json",
              "multi_gpu_gluon_pytorch")


def test_a_good_nvml_reading_is_kept(nvml):  # noqa: F811
    [gpu] = metered()["gpus"]
    assert gpu["energy_j"] > 0 and "energy_reason" not in gpu


# --- The manager writes no record that fails the schema over the last good one --------

WORKER = """
import json, sys
sidecar, csv = sys.argv[sys.argv.index("--sidecar") + 1], sys.argv[sys.argv.index("--csv") + 1]
open(csv, "w").write("section,framework,case,metric,unit,process,repeat,value\\n"
                     "toy,pytorch,a,time,s,0,0,0.5\\n")
json.dump({{"format_version": 3, "section": "toy", "framework": "pytorch", "status": "ok",
           "started": "2026-01-02T03:04:00+00:00", "finished": "2026-01-02T03:04:05+00:00",
           "wall_seconds": 5.0, "notes": {{"gpu_energy": {reading}}}}}, open(sidecar, "w"))
"""


def measure(tmp_path, gpu_reading):
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(reading=repr(gpu_reading)))
    return subprocess.run(
        [sys.executable, "-m", "d2lperf", "measure", "--section", "toy", "--framework",
         "pytorch", "--python", sys.executable, "--script", str(script), "--csv",
         str(tmp_path / "samples.csv"), "--sidecar", str(tmp_path / "run.json"),
         "--probe-seconds", "0.01"], capture_output=True, text=True, timeout=300,
        env={**os.environ, hostlock.LOCK_VARIABLE: str(tmp_path / "host.lock")})


@pytest.mark.slow  # a timing job, though its worker is a few lines of plain Python
def test_the_manager_keeps_the_last_good_run_when_its_workers_record_fails_the_schema(
        tmp_path):
    done = measure(tmp_path, reading())
    assert done.returncode == 0, done.stderr
    good = {name: (tmp_path / name).read_bytes() for name in ("run.json", "samples.csv")}
    assert json.loads(good["run.json"])["notes"]["gpu_energy"]["gpus"][0]["energy_j"] > 0
    done = measure(tmp_path, reading(energy_j=-2960.18, mean_w=-299.9))
    print(done.stderr)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert ("not a run record: field 'notes.gpu_energy.gpus.0.energy_j': -2960.18 is less "
            "than the minimum of 0") in done.stderr
    assert "nothing written" in done.stderr
    assert {name: (tmp_path / name).read_bytes() for name in good} == good


# --- The site never writes into the results it reads -------------------------------------

def test_the_site_refuses_an_out_inside_the_results_it_reads(tmp_path, capsys):
    results_folder = tmp_path / "results"
    imported = results_folder / "box"
    imported.mkdir(parents=True)
    (imported / "report.html").write_text("the archive's own, checksummed")
    elsewhere = tmp_path / "kept-box"
    elsewhere.mkdir()
    (results_folder / "linked").symlink_to(elsewhere)
    (tmp_path / "to-results").symlink_to(results_folder)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    for out in (results_folder, imported, results_folder / "site", tmp_path / "to-results",
                elsewhere / "site"):
        with pytest.raises(SystemExit) as ended:
            site.main(["--results", str(results_folder), "--out", str(out)])
        assert ended.value.code == 2
        said = capsys.readouterr().err
        print(said)
        assert f"--out {out}" in said and "lies inside" in said
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert (imported / "report.html").read_text() == "the archive's own, checksummed"
