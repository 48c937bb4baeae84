"""The library in layers, as docs/design.md's table draws them ("The library in layers"):
every module is in the table once, every import goes down a layer, a worker reaches
nothing of the judging half (nor scipy or pandas), no import cycle; the leaves (errors,
argument types, the tables of sections and frameworks) import nothing of the library
above them; the report's parts (d2lperf.report) are the top layer, which nothing below
imports; one version of each twin."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

PACKAGE = REPO / "scripts/d2lperf"
REPORT = "report"  # the subpackage of the report's view model
COMMANDS = "commands"  # the subpackage of the command's steps, above the report
SUBPACKAGES = (REPORT, COMMANDS)
# The leaves: what every other layer may import; they import no layer above them.
LEAVES = {"errors": set(), "frameworks": set(), "sections": set(),
          "arguments": {"devices", "sections"}, "devices": set()}


def module_name(dotted: str) -> str:
    """A module's name in the graph from its import path: ``d2lperf.claims`` -> ``claims``,
    ``d2lperf.report.overview`` -> ``report.overview`` (the package ``d2lperf.report``
    itself -> ``report``; ``d2lperf.commands.site`` -> ``commands.site``)."""
    parts = dotted.split(".")[1:]
    return ".".join(parts[:2] if parts[0] in SUBPACKAGES else parts[:1])


def imports(path: Path) -> set[str]:
    """The d2lperf modules a file imports anywhere in it (top level or inside a function:
    either completes a cycle when it runs)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module in ("d2lperf", *(f"d2lperf.{sub}" for sub in SUBPACKAGES)):
                found |= {module_name(f"{node.module}.{a.name}") for a in node.names}
            elif node.module.startswith("d2lperf."):
                found.add(module_name(node.module))
        elif isinstance(node, ast.Import):
            found |= {module_name(a.name) for a in node.names
                      if a.name.startswith("d2lperf.")}
    return found


def module_paths() -> dict[str, Path]:
    """Every module of the library by its name in the graph, the report's parts and the
    commands too (``__main__``, ``python -m d2lperf``, only calls the command line, cli)."""
    found = {p.stem: p for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    for sub in SUBPACKAGES:
        found[sub] = PACKAGE / sub / "__init__.py"
        found |= {f"{sub}.{p.stem}": p for p in (PACKAGE / sub).glob("*.py")
                  if p.stem != "__init__"}
    return found


def graph() -> dict[str, set[str]]:
    paths = module_paths()
    return {m: imports(path) & set(paths) for m, path in paths.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the import graph, as the modules along it, or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


DESIGN = REPO / "docs/design.md"
JUDGING_PACKAGES = {"scipy", "pandas", "matplotlib"}  # the workflow environment's


def layer_table(text: str) -> dict[str, tuple[int, str]]:
    """The design document's table of layers: each module's (layer, half), the half
    ``measuring`` or ``judging``; a row without a layer number continues the one above."""
    block = text.split("## The library in layers", 1)[1].split("```")[1]
    found: dict[str, tuple[int, str]] = {}
    layer = None
    for line in block.splitlines()[2:]:
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) != 3:
            continue
        if cells[0]:
            layer = int(cells[0])
        for half, names in zip(("measuring", "judging"), cells[1:]):
            for name in names.split():
                assert name not in found, f"{name} is in the table twice"
                found[name] = (layer, half)
    return found


def going_up(edges: dict[str, set[str]], table: dict[str, tuple[int, str]]) -> list[str]:
    """The imports that do not go down a layer."""
    return sorted(f"{m} (layer {table[m][0]}) imports {n} (layer {table[n][0]})"
                  for m, found in edges.items() for n in found if table[n][0] >= table[m][0])


def reachable(edges: dict[str, set[str]], start: set[str]) -> set[str]:
    seen, todo = set(), list(start)
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo += edges.get(node, ())
    return seen


def third_party(path: Path) -> set[str]:
    """The top-level packages a file imports (anywhere in it)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def worker_modules() -> set[str]:
    """Every module of the library a section script (a worker) imports, through others: a
    framework's script in a section's folder, and its declaration (section.py), which the
    workers read; not its claims.py, which only the judging half loads."""
    start = set()
    for script in (REPO / "scripts/sections").glob("*/*.py"):
        if script.name == "claims.py":
            continue
        start |= imports(script) & set(module_paths())
    return reachable(graph(), start)


def test_every_module_is_in_the_design_documents_table_of_layers_once():
    table = layer_table(DESIGN.read_text(encoding="utf-8"))
    assert set(table) == set(module_paths()), (
        f"missing from the table: {sorted(set(module_paths()) - set(table))}; "
        f"in the table, not in the code: {sorted(set(table) - set(module_paths()))}")


def test_every_import_goes_down_a_layer():
    assert going_up(graph(), layer_table(DESIGN.read_text(encoding="utf-8"))) == []


def test_the_layer_check_catches_an_import_that_goes_up():
    table = {"results": (1, "measuring"), "harness": (2, "measuring"),
             "timing": (0, "measuring")}
    assert going_up({"results": {"harness", "timing"}, "harness": {"results"}, "timing": set()},
                    table) == ["results (layer 1) imports harness (layer 2)"]
    assert going_up({"results": {"results"}}, table)  # its own layer is not below it


@pytest.mark.slow  # over a second on 2 cores
def test_a_worker_imports_nothing_that_judges():
    """The section scripts (workers, in the frameworks' environments) reach only the
    measuring half: no claim, no comparison statistics, no stages, no scipy or pandas."""
    table = layer_table(DESIGN.read_text(encoding="utf-8"))
    reached = worker_modules()
    assert {"harness", "timing", "results", "mxnet", "torch", "memory"} <= reached
    judging = sorted(m for m in reached if table[m][1] != "measuring")
    assert judging == [], f"a worker imports the judging half: {judging}"
    paths = module_paths()
    heavy = {m: sorted(third_party(paths[m]) & JUDGING_PACKAGES) for m in reached}
    assert not {m: found for m, found in heavy.items() if found}
    # and the half the table calls measuring is what a worker may import: nothing there
    # imports the judging half either
    measuring = {m for m, (_, half) in table.items() if half == "measuring"}
    assert reachable(graph(), measuring) <= measuring


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


@pytest.mark.slow  # over a second on 2 cores
def test_no_import_cycle_in_the_library():
    cycle = find_cycle(graph())
    assert cycle is None, " -> ".join(cycle or [])


@pytest.mark.slow  # over a second on 2 cores
def test_the_leaves_import_nothing_above_them():
    edges = graph()
    for leaf, allowed in LEAVES.items():
        assert edges[leaf] <= allowed, (leaf, sorted(edges[leaf] - allowed))


@pytest.mark.slow  # over a second on 2 cores
def test_the_graph_sees_the_report_parts_and_their_imports():
    """The walk reads the subpackage: else the next test would pass on nothing."""
    edges = graph()
    assert {"report.claims_view", "report.overview", "report.values"} <= set(edges)
    assert {"claims", "report.values"} <= edges["report.claims_view"]
    assert module_name("d2lperf.report.values") == "report.values"
    assert module_name("d2lperf.claims") == "claims"


@pytest.mark.slow  # over a second on 2 cores
def test_the_report_parts_are_the_top_of_the_library():
    """The report's parts may import any module of the library; below the commands, no
    module imports one of them back."""
    below = {m: found for m, found in graph().items()
             if m.split(".")[0] not in SUBPACKAGES}
    up = {m: sorted(n for n in found if n.split(".")[0] == REPORT) for m, found in below.items()}
    assert not {m: found for m, found in up.items() if found}


def test_every_step_is_a_command_and_nothing_edits_the_import_path():
    """scripts/ holds the package, the section scripts and shell: a step is a subcommand of
    d2lperf (its table names a module that exists), and no file under scripts/ puts a
    folder on sys.path (the package is installed; the workflow and the manager hand their
    children its folder on PYTHONPATH)."""
    from d2lperf import cli

    assert sorted(p.name for p in (REPO / "scripts").glob("*.py")) == []
    for name, command in cli.COMMANDS.items():
        path = REPO / "scripts" / (command.module.replace(".", "/") + ".py")
        assert path.is_file(), (name, command.module)
    commands = {f"{COMMANDS}.{p.stem}" for p in (PACKAGE / COMMANDS).glob("*.py")
                if p.stem != "__init__"}
    named = {"d2lperf." + m for m in commands}
    assert named <= {c.module for c in cli.COMMANDS.values()}, "a command module no name runs"
    edits = [str(p.relative_to(REPO)) for p in (REPO / "scripts").rglob("*.py")
             if "sys.path.insert" in p.read_text(encoding="utf-8")
             or "sys.path.append" in p.read_text(encoding="utf-8")]
    assert edits == []


@pytest.mark.parametrize("text", ["inf", "-1", "0", "nan", "x"])
def test_learning_rates_refuse_what_is_not_a_finite_positive_number(text):
    from d2lperf import training

    p = training.parser("toy", "multi_gpu_scratch")
    with pytest.raises(SystemExit):
        p.parse_args(["--csv", "a", "--sidecar", "b", "--learning-rates", text, text])


def test_one_list_of_device_kinds():
    from d2lperf import devices
    from d2lperf.frameworks import REGISTRY

    for entry in REGISTRY.values():  # every framework's module takes the one list
        source = (REPO / "scripts" / (entry.module.replace(".", "/") + ".py")).read_text(
            encoding="utf-8")
        assert "KINDS = " not in source, entry.module
    assert devices.KINDS == ("gpu", "cpu")


def project_text_files() -> list[Path]:
    """The project's own text: its code, rules, profiles, docs and tests (not results,
    environments or the documents' tests data)."""
    keep = (".py", ".smk", ".yaml", ".md", ".sh", ".j2")
    found = [REPO / name for name in ("Makefile", "Snakefile", "README.md")]
    for folder in ("scripts", "workflow", "tests", "bench", "docs", "config", "envs", "profiles"):
        found += [p for p in (REPO / folder).rglob("*") if p.is_file() and p.suffix in keep
                  and "__pycache__" not in p.parts and "data" not in p.parts[-2:-1]]
    return found


def test_every_design_pointer_names_a_heading_of_the_design_document():
    """Comments cite docs/design.md by heading; each heading cited must be there."""
    import re

    headings = {line.lstrip("#").strip()
                for line in (REPO / "docs/design.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("#")}
    cited = {}
    for path in project_text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for found in re.finditer(r"docs/design\.md,\s*(?:#\s*)?[\"'“]([^\"'”]+)[\"'”]", text):
            cited.setdefault(" ".join(found.group(1).split()), path)
    assert cited, "no pointer found: the pattern is wrong"
    missing = {h: str(p.relative_to(REPO)) for h, p in cited.items() if h not in headings}
    assert not missing, missing


def test_nothing_cites_a_document_or_an_issue_outside_the_project():
    import re

    stale = re.compile(r"DESIGN\.md|STYLE\.md|(?i:\bdecision \d+|\bissues? #?\d+)")
    me = Path(__file__).resolve()
    hits = [f"{p.relative_to(REPO)}: {m.group(0)}" for p in project_text_files() if p != me
            for m in [stale.search(p.read_text(encoding="utf-8", errors="replace"))] if m]
    assert not hits, hits
