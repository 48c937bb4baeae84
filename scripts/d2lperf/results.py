"""Tidy result rows, printed outputs and the JSON sidecar of one section run.

One CSV row per measured sample (docs/design.md, "Tidy results, every sample kept");
statistics are computed downstream from the raw rows, never stored instead of them. Files
are written atomically so that an interrupted run never leaves half a table behind.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import os
import re
import shutil
import statistics
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from d2lperf import energy
from d2lperf.errors import NEEDS_GPU_CODE, NEEDS_GPUS
from d2lperf.frameworks import DOCUMENTS, FRAMEWORKS, rule_name
from d2lperf.records import Output, RunRecord, SampleRow
from d2lperf.sections import SECTIONS
from d2lperf.timing import Sample

COLUMNS = ("section", "framework", "case", "metric", "unit", "process", "repeat", "position",
           "value", "epoch", "devices", "format_version")
# The run record's format. 1: no format_version, and a record without a framework is the
# documents' framework's (written before there were two). 2: format_version, and the
# framework always named. 3: a section is called a section (``section``, which older
# records called ``experiment``), what a skipped section needs is a field of its own
# (``needs``), each training run not run is {devices, reason, needs}, and an output that
# differs by framework design says so in its ``by_design`` field. The samples.csv beside
# a run record has that record's format.
FORMAT_VERSION = 3
# The tables (samples.csv and the summaries made from them) carry it in a column of
# their own from format 3; a table without one is older (``older_columns``).


# Two verdicts older tables (verdicts.csv of kept and imported archives) worded otherwise:
# today's words are d2lperf.verdicts' NOT_HERE and NA. Read as today's by tables.read_table
# and the archive's check (``current_verdict``).
OLDER_VERDICTS = {"not applicable here": "does not apply", "not applicable": "not measured"}


def current_verdict(word: str) -> str:
    """A verdict in today's words (``OLDER_VERDICTS``); any other word as it is."""
    return OLDER_VERDICTS.get(word, word)


def older_columns(columns: Iterable[str]) -> dict[str, str]:
    """The renames that bring an older table's columns to the current format: before 3,
    a table named the section ``experiment`` and the documents' heading ``section`` (a
    table with a format_version column is of 3 or later, one without an ``experiment``
    column had neither name: the verdicts, whose ``section`` was the section already)."""
    columns = list(columns)
    if "format_version" in columns or "experiment" not in columns:
        return {}
    return {old: new for old, new in (("section", "heading"), ("experiment", "section"))
            if old in columns}


def current_rows(reader: csv.DictReader) -> tuple[list[str], list[SampleRow]]:
    """A CSV table's columns and rows (csv.DictReader's), named as the current format
    names them (``older_columns``)."""
    renames = older_columns(reader.fieldnames or [])
    return ([renames.get(c, c) for c in reader.fieldnames or []],
            [{renames.get(k, k): v for k, v in row.items()} for row in reader])


def unknown_format(version: Any) -> str:
    """What a record or a table of a format this code does not read is told."""
    return (f"format_version {version!r} is not one this code reads (1 to {FORMAT_VERSION}); "
            "a newer format needs newer code")


def newer_format(version: Any) -> str | None:
    """Why a table's format_version cell is none this code reads (a newer format, or no
    version number at all), or None where it reads it (an empty cell: a table from before
    the column)."""
    text = "" if version is None else str(version).strip()
    if not text or (text.isdigit() and 1 <= int(text) <= FORMAT_VERSION):
        return None
    return unknown_format(version)


def migrate_run(record: Mapping[str, Any]) -> RunRecord:
    """A run record of any format this code knows, in the current one: the one place that
    knows the older formats, so no reader guesses at what an older record left out."""
    version = record.get("format_version", 1)
    if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise ValueError(f"run record {unknown_format(version)}")
    migrated = dict(record)
    if version < 2:
        migrated["framework"] = record.get("framework") or DOCUMENTS
    if version < 3:
        if "experiment" in migrated:  # format 3 calls a section a section
            migrated["section"] = migrated.pop("experiment")
        migrated.update(_fields_from_older_words(migrated))
    migrated["format_version"] = FORMAT_VERSION
    return migrated


def _fields_from_older_words(record: Mapping[str, Any]) -> dict[str, Any]:
    """What format 3 keeps in fields, read from the words older records said it in: the
    only place any of those words are read (a reworded message in a newer record changes
    nothing). A GPU shortfall was "needs N GPUs, found M", a GPU without code for it named
    its compute capability, a training run not run was keyed by its case name (ending in
    _N_device(s)) with the reason as the value, and an output ruled out by a framework's
    design read "not applicable in ..."."""
    fields: dict[str, Any] = {}
    reason = str(record.get("reason") or "")
    if record.get("status") == "skipped":
        if "compute capability" in reason:
            fields["needs"] = NEEDS_GPU_CODE
        elif re.search(r"needs \d+ GPUs?, found", reason):
            fields["needs"] = NEEDS_GPUS
    notes = record.get("notes") or {}
    if isinstance(notes.get("runs_not_run"), dict):
        runs = {}
        for case, why in notes["runs_not_run"].items():
            count = re.search(r"_(\d+)_devices?$", case)
            runs[case] = {"devices": int(count.group(1)) if count else None,
                          "reason": str(why), "needs": NEEDS_GPUS}
        fields["notes"] = {**notes, "runs_not_run": runs}
    outputs = record.get("outputs")
    if isinstance(outputs, dict):
        fields["outputs"] = {
            name: ({**got, "by_design": got["text"]}
                   if isinstance(got, dict) and "by_design" not in got
                   and str(got.get("text", "")).startswith("not applicable in ") else got)
            for name, got in outputs.items()}
    return fields


def section_folder(section: str, framework: str = DOCUMENTS) -> str:
    """The folder of one section's run under results/<machine>/, named like its rule."""
    return rule_name(section, framework)


class Recorder:
    """Collects one section's samples, printed outputs and artifacts as it runs.

    ``process`` is the index of this process among the fresh processes a section
    runs in (docs/design.md, "Measured side by side"); every row carries it.
    """

    def __init__(self, section: str, framework: str = DOCUMENTS, process: int = 0) -> None:
        if framework not in FRAMEWORKS:
            raise ValueError(f"unknown framework {framework!r}; allowed: {', '.join(FRAMEWORKS)}")
        self.section = section
        self.framework = framework
        self.process = process
        self.rows: list[SampleRow] = []
        self.outputs: dict[str, Output] = {}
        self.artifacts: list[str] = []
        self.notes: dict[str, object] = {}

    def samples(
        self,
        case: str,
        metric: str,
        unit: str,
        values: Sequence[float],
        *,
        epoch: int | None = None,
        devices: str | None = None,
    ) -> None:
        """Record every raw sample of one case, numbered by repeat (values that were
        not measured side by side with other cases: epochs, memory, rates)."""
        for repeat, value in enumerate(values):
            self._row(case, metric, unit, repeat, "", value, epoch, devices)

    def timings(self, samples: Iterable[Sample], *, devices: str | None = None,
                metric: str = "time", unit: str = "s") -> None:
        """Record the samples of ``timing.compare``: round as repeat, and the position
        each sample had in its round."""
        for sample in samples:
            self._row(sample.case, metric, unit, sample.round, sample.position, sample.value,
                      None, devices)

    def _row(self, case: str, metric: str, unit: str, repeat: int, position: int | str,
             value: float, epoch: int | None, devices: str | None) -> None:
        self.rows.append({
            "section": self.section,
            "framework": self.framework,
            "case": case,
            "metric": metric,
            "unit": unit,
            "process": self.process,
            "repeat": repeat,
            "position": position,
            "value": float(value),
            "epoch": "" if epoch is None else epoch,
            "devices": "" if devices is None else devices,
            "format_version": FORMAT_VERSION,
        })

    def output(self, name: str, text: str, values: Any = None, *,
               by_design: str | None = None) -> None:
        """Record a printed output: the text as printed, and its numbers when it has any;
        ``by_design``: why this framework prints something else by its design (the report
        shows it as such, not as a failed reproduction)."""
        entry: Output = {"text": text}
        if values is not None:
            entry["values"] = values
        if by_design:
            entry["by_design"] = by_design
        self.outputs[name] = entry


def _umask() -> int:
    """This process's umask (setting it is the only portable way to read it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _atomic_write(path: Path, write) -> None:
    """Write through a temporary file in the same folder, then rename it over ``path``.
    mkstemp makes the file 0600; it gets the modes a plain open() would give (the umask's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_csv(path: str | Path, rows: Iterable[Mapping[str, object]]) -> None:
    def write(handle):
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)

    _atomic_write(Path(path), write)


def write_text(path: str | Path, text: str) -> None:
    """Replace a file with ``text`` atomically: a reader (or a run stopped midway) sees the
    old file or the new one, never half of one."""
    _atomic_write(Path(path), lambda h: h.write(text))


def write_json(path: str | Path, data: Mapping[str, object]) -> None:
    _atomic_write(Path(path), lambda h: h.write(json.dumps(data, indent=2, sort_keys=True) + "\n"))


def write_run(csv_path: str | Path, sidecar: str | Path, rows: Iterable[Mapping[str, object]],
              record: Mapping[str, object]) -> None:
    """A section's good run: its samples, then its record. The last good run a failure kept
    beside them (KEPT_FOLDER) is then out of date and nothing points at it: it goes (a link
    planted there is removed, never followed)."""
    write_csv(csv_path, rows)
    write_json(sidecar, record)
    kept = Path(sidecar).parent / KEPT_FOLDER
    if kept.is_symlink() or kept.is_file():
        kept.unlink()
    elif kept.is_dir():
        shutil.rmtree(kept)


def read_json(path: str | Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


SCHEMAS = Path(__file__).resolve().parents[2] / "workflow/schemas"


class RecordError(ValueError):
    """A run record (run.json) that cannot be one: the message names the file and what is
    wrong with it."""


def is_finite_number(checker, instance) -> bool:
    """JSON Schema's "number", finite: NaN passes every bound (each comparison with it is
    false) and infinity every lower one, and neither is a figure a page can show; a bool
    is none (Python counts it an int). The rule of a sample, a run record, a machine record
    and the config alike."""
    if isinstance(instance, bool):
        return False
    return isinstance(instance, int) or (isinstance(instance, float) and math.isfinite(instance))


@functools.cache
def finite_validator():
    """Draft 2020-12's validator class with finite numbers only (``is_finite_number``):
    every schema of workflow/schemas/ is checked with it. Workflow environment only."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    return jsonschema.validators.extend(
        base, type_checker=base.TYPE_CHECKER.redefine("number", is_finite_number))


@functools.cache
def _run_validator(schema_folder: str):
    """The run record schema's validator, read once per folder (a summary or an archive
    checks every section's record against it), its framework names the registry's."""
    import yaml

    schema = yaml.safe_load((Path(schema_folder) / "run.schema.yaml").read_text("utf-8"))
    schema["properties"]["framework"]["enum"] = list(FRAMEWORKS)
    schema["allOf"] = [*schema.get("allOf", []), *rate_rules()]
    return finite_validator()(schema)


# The types of the parameters a sample of a section with a process per device is counted
# from (d2lperf.workloads.examples): its models, and the images of a sample, one per model.
PER_SAMPLE_PARAMETERS = {"models": {"type": "array", "items": {"type": "string"}},
                         "images": {"type": "array", "items": {"$ref": "#/$defs/count"}}}


def rate_rules() -> list[dict[str, Any]]:
    """The run schema's rule per section whose timings become rates
    (``d2lperf.workloads.work``): a good run keeps the parameters they are computed from
    (``Section.rate_parameters``), so that a record that passes always has them."""
    rules = []
    for entry in SECTIONS.values():
        needed = entry.rate_parameters()
        if not needed:
            continue
        typed = {k: v for k, v in PER_SAMPLE_PARAMETERS.items() if k in needed}
        parameters = {"required": needed, **({"properties": typed} if typed else {})}
        rules.append({
            "if": {"properties": {"section": {"const": entry.name}, "status": {"const": "ok"}}},
            "then": {"required": ["parameters"], "properties": {"parameters": parameters}}})
    return rules


# The folder a failed run's record keeps its section's last good run in (run.json and
# samples.csv, as they were), inside the section's own folder (d2lperf record-failure).
KEPT_FOLDER = "previous"


def schema_message(error) -> str:
    """jsonschema's message of ``error``, of a length a reader reads: a text over its
    ``maxLength`` by its start and its length (jsonschema's own repeats it whole, all
    200,000 characters of a planted name), any other message cut in the middle."""
    if error.validator == "maxLength" and isinstance(error.instance, str):
        return (f"{error.instance[:40]!r}... is longer than {error.validator_value} characters "
                f"({len(error.instance)} here)")
    message = error.message
    return message if len(message) <= 400 else f"{message[:200]} ... {message[-150:]}"


def schema_error_words(error) -> str:
    """Where in a record a schema error is, in words: ``field 'a.b'``, or ``the record``
    for the record as a whole, then jsonschema's message (``schema_message``)."""
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{f'field {where!r}' if where else 'the record'}: {schema_message(error)}"


def _readings(record: Mapping[str, Any]):
    """Every NVML reading a run record holds, with where it is: the section's body's
    (``notes.gpu_energy``) and each training epoch's (``notes.gpu_energy_epochs``)."""
    notes = record.get("notes") or {}
    if isinstance(notes.get("gpu_energy"), dict):
        yield "notes.gpu_energy", notes["gpu_energy"]
    for case, epochs in (notes.get("gpu_energy_epochs") or {}).items():
        for epoch, reading in (epochs or {}).items():
            yield f"notes.gpu_energy_epochs.{case}.{epoch}", reading


def energy_problem(record: Mapping[str, Any]) -> str | None:
    """Where a run record's readings hold an energy or a power no GPU draws
    (``energy.implausible``: JSON Schema cannot compare a field with another), in words;
    None where none does. The record has passed the schema."""
    for where, reading in _readings(record):
        seconds = reading.get("seconds")
        for index, gpu in enumerate(reading.get("gpus") or []):
            for key, unit in (("energy_j", "J"), ("mean_w", "W")):
                value = gpu.get(key)
                problem = None if value is None else energy.implausible(value, unit, seconds)
                if problem:
                    return f"field '{where}.gpus.{index}.{key}': {problem}"
    return None


def check_run(record: Any, name: str, folder: str, schema_folder: str | Path = SCHEMAS) -> None:
    """Refuse a run record that fails workflow/schemas/run.schema.yaml (every number in it
    finite), holds an energy or a power no GPU draws (``energy_problem``), or that belongs in
    another section's folder (one copied from elsewhere would show its figures as missing
    beside its own). A record kept in a section's KEPT_FOLDER (``name`` its path) belongs
    to the section folder above it. Workflow environment only: it needs jsonschema."""
    error = next(iter(_run_validator(str(schema_folder)).iter_errors(record)), None)
    if error is not None:
        raise RecordError(f"{name}: not a run record: {schema_error_words(error)}")
    problem = energy_problem(record)
    if problem:
        raise RecordError(f"{name}: not a run record: {problem}")
    if folder == KEPT_FOLDER:  # a last good run kept beside a failed one: the folder above
        folder = PurePosixPath(Path(name).as_posix()).parent.parent.name
    own = section_folder(record["section"], record.get("framework") or DOCUMENTS)
    if own != folder:
        raise RecordError(f"{name}: the run record of {own} (section "
                          f"{record['section']!r}, framework "
                          f"{record.get('framework') or DOCUMENTS!r}), not of {folder}")


def _load_json(path: str | Path) -> Any:
    """A JSON file's value; RecordError names the file when it is no JSON (cut short,
    empty, corrupt) or cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (ValueError, UnicodeDecodeError) as error:
        raise RecordError(f"{path}: not JSON (cut short or corrupt?): {error}") from None
    except OSError as error:
        raise RecordError(f"{path}: cannot be read: {error.strerror}") from None


def read_run(path: str | Path, schema_folder: str | Path = SCHEMAS) -> RunRecord:
    """A section's run.json, checked (``check_run``) and in the current format whatever
    format it was written in (``migrate_run``): RecordError names the file when it is no
    JSON, is cut short, is not this folder's run record, or is of a format this code does
    not know."""
    return current_run(_load_json(path), str(path), Path(path).parent.name, schema_folder)


@functools.cache
def _machine_validator(schema_folder: str):
    import yaml

    schema = yaml.safe_load((Path(schema_folder) / "machine.schema.yaml").read_text("utf-8"))
    return finite_validator()(schema)


def read_machine(path: str | Path, schema_folder: str | Path = SCHEMAS) -> dict[str, Any]:
    """A machine.json, checked against workflow/schemas/machine.schema.yaml: every field the
    report's views read has its type, so a corrupt one is refused here, naming the file and
    the field, instead of crashing a view. Workflow environment only (jsonschema)."""
    record = _load_json(path)
    error = next(iter(_machine_validator(str(schema_folder)).iter_errors(record)), None)
    if error is not None:
        raise RecordError(f"{path}: not a machine record: {schema_error_words(error)}")
    return record


def machine_traits(record: Mapping[str, Any]) -> dict[str, object]:
    """What tells a machine's figures from another's, from its machine.json: the CPU, its
    logical cores and vector unit, the kernel its MXNet's OpenBLAS runs, the GPUs' names
    ("none" without); "" where the record does not say."""
    cpu = record.get("cpu") or {}
    blas = ((record.get("software") or {}).get("mxnet") or {}).get("blas") or {}
    return {"cpu": cpu.get("model") or "", "cores": cpu.get("logical_cores"),
            "vector": (cpu.get("vector") or {}).get("instructions") or "",
            "kernel": blas.get("core") or "",
            "gpus": ", ".join(str(g.get("name")) for g in record.get("gpus") or []) or "none"}


def current_run(record: Any, name: str, folder: str,
                schema_folder: str | Path = SCHEMAS) -> Any:
    """A run record of any format this code knows, brought to the current one
    (``migrate_run``) and then checked as such (``check_run``): what every reader of a
    record written elsewhere (a results folder, an archive) goes through. RecordError
    names ``name``."""
    if isinstance(record, dict):
        try:
            record = migrate_run(record)
        except ValueError as error:
            raise RecordError(f"{name}: {error}") from None
    check_run(record, name, folder, schema_folder)
    return record


def report(samples: Iterable[Sample], what: str = "") -> None:
    """One log line per case of a comparison: its median over this process's rounds."""
    by_case: dict[str, list[float]] = {}
    for sample in samples:
        by_case.setdefault(sample.case, []).append(sample.value)
    for case, values in by_case.items():
        print(f"{case}: median {statistics.median(values):.4f} s over {len(values)} rounds "
              f"{what}".rstrip(), flush=True)
