"""Loading and checking the tables the report is built from (workflow environment).

Raw samples are validated row by row against workflow/schemas/samples.schema.yaml;
the documents' reference table is checked for duplicate keys. Errors name the
file and the row, because a user has to find and fix them.
"""

from __future__ import annotations

import csv
import fnmatch
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import yaml

from d2lperf import sections
from d2lperf.describe import Stats
from d2lperf.frameworks import DOCUMENTS, FRAMEWORKS
from d2lperf.results import FORMAT_VERSION, OLDER_VERDICTS, newer_format, older_columns

# A measurement is named by KEY; a document figure by REFERENCE_KEY (the same
# measurement may be printed by two documents, or for two platforms).
KEY = ["section", "case", "metric", "epoch"]
REFERENCE_KEY = ["document", "variant", *KEY]
SAMPLE_GROUP = ["framework", "section", "case", "metric", "unit", "epoch", "devices"]
# Tables written before a section ran in several processes or frameworks: MXNet, one process.
SAMPLE_DEFAULTS = {"framework": DOCUMENTS, "process": "0", "position": "",
                   "format_version": ""}
# Printed float32 figures agree "to float32 precision" within these bounds; a float32
# sum over millions of terms depends on the summation order, so it gets a wider one.
OUTPUT_REL_TOL = 1e-6
OUTPUT_ABS_TOL = 1e-7
SUM_REL_TOL = 1e-4
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


class TableError(ValueError):
    """A results or reference table is malformed; the message names file and row."""


REPORT = Path(__file__).resolve().parents[2] / "report"  # the report's templates and captions
# The cases there are: the documents' figures (each section's reference.csv) and the labels
# of the others (its labels.csv). A case in neither is one the report cannot name: no
# section plans it.
Plan = dict[str, list[str]]  # section -> names (or fnmatch patterns) of the cases it plans


def plan_tables() -> list[Path]:
    """The tables that name every case a section plans, the sections' own."""
    return [*sections.tables("reference"), *sections.tables("labels")]


def case_plan(tables: Iterable[Path] | None = None) -> Plan:
    """The cases each section plans, from the tables that name them for the report
    (reference.csv: the documents' figures; labels.csv: every other case, or a pattern;
    by default the sections' own, ``plan_tables``)."""
    plan: Plan = {}
    for path in plan_tables() if tables is None else tables:
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                cases = plan.setdefault(row["section"], [])
                if row["case"] not in cases:
                    cases.append(row["case"])
    return plan


def check_planned(samples: pd.DataFrame, plan: Plan, table: str | Path) -> None:
    """Refuse a row of a case its section does not plan: a name that fits the pattern but
    that no document printed and no label names (a worker's typo, a case of another
    version) would be summarised as a figure the report cannot tell about. Row numbers
    count the header as row 1."""
    pairs = samples[["section", "case"]].drop_duplicates()
    for index, section, case in pairs.itertuples(name=None):
        allowed = plan.get(section, [])
        if not any(fnmatch.fnmatchcase(case, name) for name in allowed):
            raise TableError(
                f"{table}: row {index + 2}: case {case!r} is not one section {section} plans; "
                f"allowed: {', '.join(allowed) or 'none'} (the cases the section's "
                f"reference.csv and labels.csv name, scripts/sections/{section}/: a new "
                "case needs its label in labels.csv)")


def _typed(text: str, kind: type) -> Any:
    """A CSV cell as the schema wants it; left as text when it is not one (nor a finite
    number: ``nan``, ``inf``), so the schema names the bad cell."""
    if text == "":
        return None
    try:
        value = kind(text)
    except ValueError:
        return text
    return value if kind is not float or math.isfinite(value) else text


# The numbers of a summary.csv row, as another machine's is read; the rest stays text.
SUMMARY_NUMBERS = ("epoch", "count", "min", "q1", "median", "q3", "max", "iqr", "mean",
                   "stddev", "ci_low", "ci_high", "outliers", "ratio", "achieved", "ceiling",
                   "fraction_of_ceiling", "document_value")
# Each pair must be in order wherever both are given (a check JSON Schema cannot state).
SUMMARY_ORDER = (("min", "median"), ("median", "max"), ("ci_low", "median"),
                 ("median", "ci_high"), ("q1", "median"), ("median", "q3"))


def summary_schema(schema_folder: str | Path) -> jsonschema.protocols.Validator:
    path = Path(schema_folder) / "summary.schema.yaml"
    return jsonschema.Draft202012Validator(yaml.safe_load(path.read_text(encoding="utf-8")))


def check_summary_rows(rows: list[dict[str, str]], name: str, validator) -> None:
    """Refuse another machine's summary.csv whose figures mean nothing: a number that is
    not one (or not finite), a count that is not whole, a time that is not positive (by
    the schema), an interval or a range that does not hold its median (here). TableError
    names the file, the row (the header is row 1) and the column."""
    for number, row in enumerate(rows, start=2):
        typed = {k: (_typed(v or "", float) if k in SUMMARY_NUMBERS else v)
                 for k, v in row.items() if k is not None}
        error = next(iter(validator.iter_errors(typed)), None)
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path) or "row"
            raise TableError(f"{name}: row {number}: {where}: {error.message}")
        for low, high in SUMMARY_ORDER:
            a, b = typed.get(low), typed.get(high)
            if a is not None and b is not None and not a <= b:
                raise TableError(f"{name}: row {number}: {low} {a:g} is above {high} {b:g}: "
                                 "the figures do not hold their median")


def read_table(path: str | Path, **options: Any) -> pd.DataFrame:
    """A table of results (samples, summary, outputs, verdicts) as pandas reads it
    (``options``: read_csv's), its columns named as the current format names them,
    whatever format it was written in (``results.older_columns``), and its verdicts in
    today's words (``results.OLDER_VERDICTS``)."""
    frame = pd.read_csv(path, **options)
    frame = frame.rename(columns=older_columns(frame.columns))
    for column in ("verdict", "document_verdict"):  # an older table's verdict words
        if column in frame:
            frame[column] = frame[column].replace(OLDER_VERDICTS)
    return frame


def load_samples(path: str | Path, schema_path: str | Path) -> pd.DataFrame:
    """Read one samples.csv and check every row; row numbers count the header as row 1."""
    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    schema["properties"]["framework"]["enum"] = list(FRAMEWORKS)  # the registry's names
    validator = jsonschema.Draft202012Validator(schema)
    try:
        raw = read_table(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise TableError(f"{path}: not a readable CSV: {error}") from None
    rows = []
    for index, record in enumerate(raw.to_dict("records")):
        newer = newer_format(record.get("format_version"))
        if newer:
            raise TableError(f"{path}: row {index + 2}: {newer}")
        # an older table reads as the current format: nothing it holds changed meaning
        record = {**SAMPLE_DEFAULTS, **record}
        row = {**record, "repeat": _typed(record.get("repeat", ""), int),
               "process": _typed(record["process"], int),
               "position": _typed(record["position"], int),
               "value": _typed(record.get("value", ""), float),
               "epoch": _typed(record.get("epoch", ""), int),
               "devices": record.get("devices") or None,
               "format_version": FORMAT_VERSION}
        error = next(iter(validator.iter_errors(row)), None)
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path) or "row"
            raise TableError(f"{path}: row {index + 2}: {where}: {error.message}")
        rows.append(row)
    columns = list(dict.fromkeys([*raw.columns, *SAMPLE_DEFAULTS])) if len(raw.columns) else \
        list(schema["properties"])
    frame = pd.DataFrame(rows, columns=columns)
    for column in ("epoch", "process", "position", "format_version"):
        frame[column] = frame[column].astype("Int64")
    frame["value"] = frame["value"].astype(float)
    return frame


def load_reference(*paths: str | Path) -> pd.DataFrame:
    """The documents' printed figures, from each table given (by default every section's
    own, ``sections.tables("reference")``), in order; one row per (section, case, metric,
    epoch)."""
    frames = []
    first_row: dict[tuple[str, ...], tuple[str | Path, int]] = {}
    for path in paths or sections.tables("reference"):
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        for index, key in enumerate(frame[REFERENCE_KEY].itertuples(index=False, name=None)):
            if key in first_row:
                name = "/".join(filter(None, key))
                where, row = first_row[key]
                first = f"row {row}" if where == path else f"{where}: row {row}"
                raise TableError(f"{path}: row {index + 2}: duplicate key {name} "
                                 f"(first at {first})")
            first_row[key] = (path, index + 2)
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    frame["epoch"] = pd.to_numeric(frame["epoch"]).astype("Int64")
    return frame


def summarise_samples(samples: pd.DataFrame) -> pd.DataFrame:
    """One row per case (per epoch where there are epochs): the statistics of its raw
    samples; for epoch times also one row over all epochs (epoch left empty), the
    figure behind a "sec/epoch" average."""
    rows = []
    if len(samples):
        for key, group in samples.groupby(SAMPLE_GROUP, dropna=False, sort=False):
            rows.append({**dict(zip(SAMPLE_GROUP, key)), **Stats(group["value"]).as_dict()})
        epoch_times = samples[samples["epoch"].notna() & (samples["metric"] == "time")]
        over_epochs = [c for c in SAMPLE_GROUP if c != "epoch"]
        for key, group in epoch_times.groupby(over_epochs, dropna=False, sort=False):
            rows.append({**dict(zip(over_epochs, key)), "epoch": None,
                         **Stats(group["value"]).as_dict()})
    table = pd.DataFrame(rows, columns=SAMPLE_GROUP + list(Stats([0]).as_dict()))
    table["epoch"] = table["epoch"].astype("Int64")
    return table


def numbers_in(text: str) -> list[float]:
    """The numbers of printed arrays, in order, without shapes or contexts
    (``<NDArray 1x2 @cpu(0)>``, ``ctx=gpu(1)``)."""
    body = re.sub(r"<NDArray[^>]*>|ctx=\w+\(\d+\)", "", text)
    return [float(x) for x in _NUMBER.findall(body)]


def module_name(text: str) -> str:
    match = re.search(r"<module '([^']+)'", text)
    return match.group(1) if match else text.strip()


def output_matches(document: str, measured: dict[str, Any], how: str) -> tuple[bool, str]:
    """Whether a printed output agrees with the document's, and the rule applied."""
    if how == "numbers":
        expected = numbers_in(document)
        got = [float(v) for v in _flatten(measured.get("values", numbers_in(measured["text"])))]
        same = len(expected) == len(got) and all(
            math.isclose(a, b, rel_tol=OUTPUT_REL_TOL, abs_tol=OUTPUT_ABS_TOL)
            for a, b in zip(got, expected)
        )
        return same, f"every number within rel {OUTPUT_REL_TOL:g} / abs {OUTPUT_ABS_TOL:g}"
    if how == "sum":
        expected, got = numbers_in(document), _flatten(measured["values"])
        same = len(expected) == len(got) and all(
            math.isclose(a, b, rel_tol=SUM_REL_TOL) for a, b in zip(got, expected))
        return same, f"within rel {SUM_REL_TOL:g} (float32 summation order)"
    if how == "shape":
        expected, got = numbers_in(document), _flatten(measured.get("values", []))
        return len(expected) == len(got), f"same number of values ({len(expected)})"
    if how == "module":
        return module_name(measured["text"]) == module_name(document), "same module"
    if how == "text":
        return measured["text"].strip() == document.strip(), "same text"
    raise TableError(f"unknown match rule {how!r}; allowed: numbers, sum, shape, module, text")


def _flatten(values: Any) -> list[Any]:
    if isinstance(values, list):
        return [x for v in values for x in _flatten(v)]
    return [values]
