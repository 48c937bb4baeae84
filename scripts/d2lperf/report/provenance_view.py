"""Where and how it was measured: the machine, each framework's software stack, the
ceilings measured here and a BLAS kernel narrower than the CPU, when it ran, the code's
commit and Snakemake's time per job."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from d2lperf import frameworks, workloads
from d2lperf.blas import CORE_BITS, narrow_kernels
from d2lperf.frameworks import DOCUMENTS, REGISTRY
from d2lperf.report.values import FRAMEWORKS, Row
from d2lperf.results import section_folder


def machine_rows(machine: Row) -> dict[str, str]:
    """The machine section as label -> text; any field of machine.json may be absent."""
    cpu = machine.get("cpu", {})
    gpus = machine.get("gpus") or []
    memory = machine.get("memory_bytes")
    return dict([
        ("machine id", f"{machine.get('machine')} (derived from the hardware: "
                       f"{machine.get('derived_machine_id')})"),
        ("CPU", f"{cpu.get('model')}, {cpu.get('logical_cores')} logical cores, "
                f"{cpu.get('architecture')}, frequency governor "
                f"{cpu.get('governor') or 'not readable'}"),
        ("memory", f"{memory / 2**30:.1f} GiB" if memory else "unknown"),
        ("OS", str(machine.get("os", {}).get("platform"))),
        ("GPUs", "; ".join(f"{g['name']} (driver {g['driver']}, {g['memory']})" for g in gpus)
         + (f"; CUDA {machine['cuda_driver_version']}" if machine.get("cuda_driver_version")
            else "") if gpus else "none"),
    ])


def machine_line(machine: Row) -> str:
    """The machine in one line: CPU, cores, GPUs."""
    cpu = machine.get("cpu", {})
    gpus = machine.get("gpus") or []
    names = {g["name"]: sum(1 for h in gpus if h["name"] == g["name"]) for g in gpus}
    return (f"{cpu.get('model')}, {cpu.get('logical_cores')} logical cores; GPUs: "
            + (", ".join(f"{n} × {name}" for name, n in names.items()) or "none"))


def mxnet_stack(machine: Row, runs: Iterable[Row]) -> dict[str, str] | None:
    """MXNet's build, BLAS and GPU support, from machine.json or else a run's record."""
    software = machine.get("software", {})
    mxnet = software.get("mxnet") or next((r["mxnet"] for r in runs if r.get("mxnet")), None)
    if not mxnet:
        return None
    blas = mxnet.get("blas") or {}
    support = machine.get("mxnet_gpu_support") or {}
    gpus = "; ".join(f"GPU {g.get('index')}: {'usable' if g.get('usable') else 'not usable'}"
                     f" ({g.get('reason')})" for g in support.get("gpus") or [])
    return {
        "version": f"MXNet {mxnet.get('version')}"
                   + (f", {mxnet['gpus_visible']} GPU(s) visible" if mxnet.get("gpus_visible")
                      else ""),
        "build": ", ".join(mxnet.get("features", [])) or str(mxnet.get("error", "")),
        "BLAS": ", ".join(filter(None, [blas.get("config") or blas.get("path"),
                                        blas.get("core") and f"kernel {blas['core']}"]))
                or "unknown",
        "Python": f"Python {software.get('python')}, numpy {software.get('numpy')}",
        **({"GPU support": gpus or f"no GPU: nvidia-smi {support.get('nvidia_smi')}"}
           if support else {}),
    }


def torch_stack(machine: Row, runs: Iterable[Row]) -> dict[str, str] | None:
    """PyTorch's build, BLAS, threads and precision settings, and its GPUs."""
    torch = (machine.get("software", {}).get("torch")
             or next((r["torch"] for r in runs if r.get("torch")), None))
    if not torch:
        return None
    threads = torch.get("threads") or {}
    gpus = torch.get("gpus") or []
    tf32 = torch.get("tf32") or {}
    cudnn = torch.get("cudnn") or {}
    rows = {
        "version": f"PyTorch {torch.get('version')} ({torch.get('build')} build"
                   + (f", CUDA {torch['cuda_version']}" if torch.get("cuda_version") else "")
                   + (f", cuDNN {torch['cudnn_version']}" if torch.get("cudnn_version") else "")
                   + ")",
        "BLAS": str(torch.get("blas") or "unknown"),
        "threads": f"intra-op {threads.get('intra_op')}, inter-op {threads.get('inter_op')}",
        "settings": f"float32 matmul precision {torch.get('float32_matmul_precision')}; TF32 "
                    f"matmul {tf32.get('matmul')}, cuDNN {tf32.get('cudnn')}; cuDNN benchmark "
                    f"{cudnn.get('benchmark')}, deterministic {cudnn.get('deterministic')}",
    }
    if gpus:
        rows["GPUs"] = "; ".join(
            f"{g.get('name')} (compute capability {g.get('compute_capability')}, "
            f"{g.get('memory_gb')} GB)" for g in gpus)
    return rows


# Each framework's software stack for the report's machine table, by the run record's key
# of its build (the registry's package name).
STACKS = {"mxnet": mxnet_stack, "torch": torch_stack}


def described_stack(name: str, machine: Row, runs: Iterable[Row]) -> dict[str, str] | None:
    """A framework's stack as its own module describes its build (``stack(build)``), the
    build from machine.json or a run record of its own; its version alone where the module
    says nothing."""
    package = REGISTRY[name].package
    build = (machine.get("software", {}).get(package)
             or next((r[package] for r in runs if r.get(package)), None))
    if not build:
        return None
    describe = getattr(frameworks.module(name), "stack", None)
    if describe:
        return describe(build)
    return {"version": f"{REGISTRY[name].label} {build.get('version')}"}


def stacks(machine: Row, runs: dict[tuple[str, str], Row]) -> dict[str, dict[str, str]]:
    """Each framework's software stack by its label, in the registry's order, where a build
    is recorded (in machine.json or a run record of its own): MXNet's and PyTorch's by the
    functions in STACKS, any other as its module describes it."""
    found = {}
    for name, f in REGISTRY.items():
        own = [r for k, r in runs.items() if k[0] == name and r]
        found[f.label] = (STACKS[f.package](machine, iter(own)) if f.package in STACKS
                          else described_stack(name, machine, own))
    return {name: rows for name, rows in found.items() if rows}


def ceiling_kernels(runs: dict[tuple[str, str], Row]) -> dict[str, str]:
    """Which library and kernel reached each ceiling, from both ceilings sections."""
    return {case: kernel for (_, section), run in runs.items() if section == "ceilings"
            for case, kernel in ((run or {}).get("notes") or {}).get("kernels", {}).items()}


def ceilings_text(summary: list[Row], runs: dict[tuple[str, str], Row] | None = None,
                  machine: Row | None = None) -> str:
    """Every ceiling with the library and kernel that reached it, a CPU product's share
    of the CPU's theoretical peak (a range: the FMA pipes cannot be read), and the peak."""
    kernels = ceiling_kernels(runs or {})
    peak = ((machine or {}).get("cpu") or {}).get("peak_float32")
    rates = sorted((r for r in summary if r["section"] == "ceilings"
                    and r["metric"] == "rate" and r["median"] is not None),
                   key=lambda r: (r["unit"], -r["median"]))
    parts = []
    medians = {r["case"]: r["median"] for r in rates}
    for r in rates:
        notes = [kernels[r["case"]]] if r["case"] in kernels else []
        notes += beside_float32(r["case"], medians)
        if (peak and r["unit"] == "GFLOP/s" and not r["case"].startswith("gpu")
                and workloads.precision_of(r["case"]) == "fp32"):
            notes.append(f"{100 * r['median'] / peak['gflops_high']:.0f}–"
                         f"{100 * r['median'] / peak['gflops_low']:.0f}% of the CPU's "
                         "float32 peak, 2 or 1 FMA units a core")
        parts.append(f"{r['case']} {r['median']:.1f} {r['unit']}"
                     + (f" ({', '.join(notes)})" if notes else ""))
    if peak:
        parts.append(f"CPU peak {peak['gflops_low']:.0f}–{peak['gflops_high']:.0f} GFLOP/s "
                     f"float32: {peak['how']}")
    return "; ".join(parts) or "not measured"


def beside_float32(case: str, medians: dict[str, float]) -> list[str]:
    """A product in another precision (bfloat16, float16, TF32) beside the same library's
    float32 product of the same size, measured in the same run: a bfloat16 unit's gain, or,
    where it runs slower than float32, that it is not a bfloat16 unit's rate."""
    precision = workloads.precision_of(case)
    if precision in (None, "fp32"):  # a copy, or float32 itself
        return []
    float32 = case.replace(f"_{precision}_", "_", 1)
    if not medians.get(float32):
        return []
    times = medians[case] / medians[float32]
    slower = ": slower than float32, not a bfloat16 unit's rate" if (
        times < 1 and precision == "bf16") else ""
    return [f"{times:.2f}× float32 {float32}{slower}"]


def forced_kernel_ratios(comparison_csv: Path | None, machine_id: str) -> list[str]:
    """Each forced-kernel variant of this machine (results/<machine>--<kernel>-kernel, in the
    cross-machine table when it ran) in words: its MXNet dot rate over this run's."""
    if not comparison_csv:
        return []
    table = pd.read_csv(comparison_csv)
    if "framework" not in table:
        table = table.assign(framework=DOCUMENTS)
    dots = table[(table["framework"] == "mxnet") & (table["section"] == "ceilings")
                 & (table["metric"] == "rate") & table["case"].str.startswith("mxnet_dot_")]
    stock = machine_id.split("--")[0]
    rates = {m: g.set_index("case")["median"] for m, g in dots.groupby("machine")}
    if machine_id not in rates:
        return []
    found = []
    for name, variant in sorted(rates.items()):
        kind = re.fullmatch(re.escape(stock) + r"--(?:system-blas--)?([a-z0-9_]+)-kernel", name)
        shared = variant.index.intersection(rates[machine_id].index)
        if kind and name != machine_id and len(shared):
            case = max(shared, key=lambda c: int(c.rsplit("_", 1)[-1]))
            found.append(f"{name}: {variant[case]:.0f} GFLOP/s, "
                         f"{variant[case] / rates[machine_id][case]:.2f}× this run's {case}")
    return found


def mxnet_build(machine: Row, runs: dict[tuple[str, str], Row]) -> Row:
    """MXNet's build as the machine record has it, else as the first MXNet run does."""
    return (machine.get("software") or {}).get("mxnet") or next(
        (r["mxnet"] for (f, _), r in runs.items() if f == "mxnet" and (r or {}).get("mxnet")),
        None) or {}


def best_cpu_rate(runs: dict[tuple[str, str], Row], summary: list[Row],
                  ceilings: dict[str, float]) -> tuple[str, float] | None:
    """The machine's best matrix-product rate on its CPU: the ceilings' best (named by
    its kernel), or a timing of the same work that beat them (the summary says so)."""
    best = workloads.best_ceiling(ceilings, workloads.ceiling_case("GFLOP", "cpu", ""))
    if best:
        best = (ceiling_kernels(runs).get(best[0], best[0]), best[1])
    for r in summary:
        on_gpu = "gpu" in str(r.get("devices")) or "cuda" in str(r.get("devices"))
        if (r.get("achieved_unit") == "GFLOP/s" and r.get("ceiling") and not on_gpu
                and (best is None or r["ceiling"] > best[1])):
            best = (r["ceiling_case"], r["ceiling"])
    return best


def blas_notice(machine: Row, runs: dict[tuple[str, str], Row], summary: list[Row],
                forced: list[str] | None = None) -> Row | None:
    """One line for the first screen when an OpenBLAS here runs a kernel narrower than the
    CPU's vectors (Prescott's 128 bits on an AVX-512 CPU) and, folded under it, what it
    costs MXNet's dot here, measured against the machine's best, and the fix: the line
    is short so that the claims' verdicts still fit the first screen."""
    vector = (machine.get("cpu") or {}).get("vector") or {}
    bits = vector.get("bits")
    mxnet = mxnet_build(machine, runs)
    libraries = mxnet.get("blas_libraries") or ([mxnet["blas"]] if mxnet.get("blas") else [])
    for lib in libraries:
        lib.setdefault("kernel_bits", CORE_BITS.get(str(lib.get("core", "")).lower()))
    narrow = narrow_kernels(libraries, bits) if bits else []
    if not narrow:
        return None
    names = "; ".join(f"{' '.join((lib.get('config') or 'OpenBLAS').split()[:2])} runs its "
                      f"{lib['core']} kernel ({lib['kernel_bits']}-bit)" for lib in narrow)
    ceilings = {r["case"]: r["median"] for r in summary if r["section"] == "ceilings"
                and r["metric"] == "rate" and r["median"] is not None}
    best = best_cpu_rate(runs, summary, ceilings)
    dots = [rate for case, rate in ceilings.items() if case.startswith("mxnet_dot_")]
    cost = share = ""
    if best and dots:
        percent = 100 * max(dots) / best[1]
        share = f": MXNet's dot at {percent:.0f}% of the machine's best"
        cost = (f": MXNet's dot reaches {max(dots):.0f} GFLOP/s, {percent:.0f}% "
                f"of the machine's best ({best[0]}, {best[1]:.0f} GFLOP/s)")
    instructions = vector.get("instructions", "")
    widths = " and ".join(sorted({f"{lib['kernel_bits']}-bit" for lib in narrow}))
    line = f"OpenBLAS runs a {widths} kernel on this {bits}-bit {instructions} CPU{share}"
    return {"line": line, "text": (
            f"{names} on this {bits}-bit {instructions} CPU{cost}; fix: --config "
            f"blas_coretype=<kernel> runs a forced kernel (SkylakeX for AVX-512 where the "
            f"OpenBLAS has it, Haswell for AVX2) as a variant of its own, checked against "
            f"float64 before any timing; make bench measures each"
            + (f". Forced here: {'; '.join(forced)}" if forced else ""))}


def job_figures(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """Snakemake's own per-job wall time (benchmark files, named like the job's results
    folder); peak memory comes from each script's getrusage instead, since the
    benchmark's sampling misses short jobs."""
    figures = {}
    for path in paths:
        row = pd.read_csv(path, sep="\t").iloc[-1]
        figures[path.stem] = {"wall_s": float(row["s"])}
    return figures


def measured_when(runs: Iterable[Row]) -> str:
    """From the first run's start to the last one's end, the day said once."""
    started = sorted(r["started"] for r in runs if r.get("started"))
    finished = sorted(r["finished"] for r in runs if r.get("finished"))
    if not started:
        return "unknown"
    first, last = started[0], finished[-1] if finished else started[-1]
    day = first[:10]
    end = last[11:16] if last[:10] == day else last[:16].replace("T", " ")
    return f"{day} {first[11:16]}–{end} UTC" if first.endswith("+00:00") else f"{first} – {last}"


def code_text(run: Row) -> str:
    """The commit a run's code was at, and whether it had uncommitted changes."""
    code = run.get("code") or {}
    return (code.get("commit") or "not a git checkout")[:12] + (
        " (modified)" if code.get("dirty") else "")


def jobs_key(section: str, framework_name: str) -> str:
    """A run's job, named as its benchmark file is (the section's folder), from the
    framework's label."""
    framework = next((k for k, v in FRAMEWORKS.items() if v == framework_name), framework_name)
    return section_folder(section, framework)
