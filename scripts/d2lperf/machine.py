"""What a machine is: its id (derived from the hardware) and its facts for machine.json.

The id names a results folder, so two machines that would time the chapter
differently (another CPU model or generation, vector unit, core count, GPU model or GPU
count) never share one. It is computed from the standard library alone so the Snakefile can call it.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from typing import TypedDict

# A machine id names a folder under results/ and reaches shell lines and archives: one
# path component, never hidden (staging folders are), never an option, bounded in length.
MACHINE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,119}")
MACHINE_ID_RULE = ("1 to 120 characters: letters, digits, '.', '_' or '-', starting with a "
                   "letter or digit")


# What the project itself writes directly under results/, beside the machines' folders: an
# id equal to one (in any case: one file on a case-insensitive disk) would make its folder
# collide with it. The archive importer's record of kept archives (archive.KEPT_RECORD) is
# the one; an import's staging folders are hidden, which no id may be.
RESERVED_RESULT_NAMES = frozenset({"kept-archives.json"})
# What joins an id to the folder names the project derives from it: a BLAS variant's
# results (<id>--system-blas, <id>--<kernel>-kernel) and a kept archive of this machine's
# own id (<id>--kept). The id a run writes under never holds it, so that its folder is never
# some other id's variant; an id naming a folder that is there (a baseline, an import's) may.
VARIANT_SEPARATOR = "--"
VARIANT_FORMS = "<id>--system-blas, <id>--<kernel>-kernel, <id>--kept"


class MachineIdError(ValueError):
    """Not a machine id; the message says what one looks like."""


def check_machine_id(text: object, where: str = "machine id", *, own: bool = False) -> str:
    """``text`` when it is a valid machine id, else MachineIdError naming ``where``.
    The one check of every id: config, ``--as``, archive manifests, folders under results/.
    ``own``: the id this machine's run writes its results under, which also may not hold
    VARIANT_SEPARATOR."""
    shown = repr(text) if len(repr(text)) <= 80 else repr(text)[:77] + "..."
    if not isinstance(text, str) or not MACHINE_ID.fullmatch(text):
        raise MachineIdError(f"{where} {shown} is not a valid machine id: {MACHINE_ID_RULE}")
    reserved = {name.casefold(): name for name in RESERVED_RESULT_NAMES}.get(text.casefold())
    if reserved:
        raise MachineIdError(f"{where} {shown} is not a valid machine id: the project writes "
                             f"{reserved} under results/ itself; choose another name")
    if own and VARIANT_SEPARATOR in text:
        raise MachineIdError(
            f"{where} {shown} is not a valid machine id for this machine's results: "
            f"'{VARIANT_SEPARATOR}' separates the folder names the project derives from an id "
            f"({VARIANT_FORMS}); allowed: {MACHINE_ID_RULE}, without '{VARIANT_SEPARATOR}'")
    return text


def _cpuinfo_field(name: str) -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    model = _cpuinfo_field("model name")
    if model is None and platform.system() == "Darwin":
        try:
            model = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            model = None
    return model or platform.processor() or platform.machine() or "unknown-cpu"


def logical_cores() -> int:
    return os.cpu_count() or 1


def physical_cores() -> int:
    """Cores, not hardware threads: two threads of one core share its FMA pipes."""
    try:
        siblings = int(_cpuinfo_field("siblings") or 0)
        cores = int(_cpuinfo_field("cpu cores") or 0)
    except ValueError:
        siblings = cores = 0
    per_core = siblings // cores if cores and siblings >= cores else 1
    return max(1, logical_cores() // per_core)


def gpus() -> list[dict[str, str]]:
    """NVIDIA GPUs as nvidia-smi reports them; empty where there is none or no driver."""
    if shutil.which("nvidia-smi") is None:
        return []
    fields = ("name", "driver_version", "memory.total", "pci.bus_id")
    try:
        done = subprocess.run(
            ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    found = []
    for line in done.stdout.strip().splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) == len(fields):
            found.append(dict(zip(("name", "driver", "memory", "bus_id"), values)))
    return found


def slug(text: str) -> str:
    text = re.sub(r"\((r|tm)\)", "", text.lower())
    text = re.sub(r"\b(cpu|processor)\b|@.*$", "", text)
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")


def machine_id(
    cpu: str | None = None,
    cores: int | None = None,
    gpu_names: list[str] | None = None,
    kind: str | None = None,
) -> str:
    """``<cpu>-<kind>-<cores>c-<count>x<gpu>`` or ``<cpu>-<kind>-<cores>c-nogpu``, e.g.
    ``amd-epyc-f26m2-avx512-2c-nogpu`` (``kind``: ``cpu_kind()``; empty, it is left out)."""
    cpu = cpu if cpu is not None else cpu_model()
    cores = cores if cores is not None else logical_cores()
    gpu_names = gpu_names if gpu_names is not None else [g["name"] for g in gpus()]
    kind = kind if kind is not None else cpu_kind()
    if gpu_names:
        kinds = sorted(set(gpu_names))
        gpu_part = "-".join(f"{gpu_names.count(k)}x{slug(k)}" for k in kinds)
    else:
        gpu_part = "nogpu"
    return "-".join(part for part in (slug(cpu), slug(kind), f"{cores}c", gpu_part) if part)


def cpu_kind(flags: set[str] | None = None) -> str:
    """What tells apart CPUs that name themselves alike: cloud VMs report "AMD EPYC" or
    "Intel(R) Xeon(R) Processor" for generations whose BLAS kernels, and so figures, differ
    2-7x. The x86 family and model (``f25m1``: Zen 3, ``f25m17``: Zen 4, ``f26m2``: Zen 5,
    ``f6m207``: an Emerald Rapids Xeon) and the widest vector unit the machine offers (a
    hypervisor may hide AVX-512, which changes the kernels again), e.g. ``f26m2-avx512``;
    the vector unit alone where the CPU has no family and model (``neon``)."""
    family, model = _cpuinfo_field("cpu family"), _cpuinfo_field("model")
    generation = f"f{family}m{model}" if (family or "").isdigit() and (model or "").isdigit() \
        else ""
    vector = vector_width(flags)["instructions"].lower().replace("-", "")
    return "-".join(part for part in (generation, vector) if part)


def memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def cuda_version() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"CUDA Version:\s*([\d.]+)", out)
    return match.group(1) if match else None


def cpu_governor() -> str | None:
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


# The widest float vector instructions a CPU flag promises, widest first: (flag, name, bits).
VECTOR_SETS = (("avx512f", "AVX-512", 512), ("avx2", "AVX2", 256), ("avx", "AVX", 256),
               ("sse2", "SSE2", 128), ("asimd", "NEON", 128))
# Fused multiply-add pipes per core, at the widest vector: software cannot read it (Intel's
# Xeon Gold/Platinum have two 512-bit ones, Silver and Bronze one; AMD's Zen 4 runs a 512-bit
# FMA as two halves on its two 256-bit pipes, one per cycle), so a peak is a range over it.
FMA_UNITS = (1, 2)
FLOAT32_BITS = 32


class Vector(TypedDict):
    """The widest float vector unit the CPU offers, and whether it has FMA."""

    instructions: str
    bits: int
    fma: bool


def cpu_flags() -> set[str]:
    return set((_cpuinfo_field("flags") or _cpuinfo_field("Features") or "").split())


def vector_width(flags: set[str] | None = None) -> Vector:
    """The widest float vector the CPU offers (its flags), and whether it has FMA:
    a BLAS kernel narrower than this leaves the difference unused."""
    flags = cpu_flags() if flags is None else flags
    name, bits = next(((n, b) for flag, n, b in VECTOR_SETS if flag in flags), ("scalar", 64))
    return {"instructions": name, "bits": bits,
            "fma": "fma" in flags or "avx512f" in flags or "asimd" in flags}


def clock_ghz() -> tuple[float | None, str]:
    """The core clock and where it was read: the kernel's highest frequency where the
    VM or OS exposes cpufreq, else the frequency in the model name, else /proc/cpuinfo's
    current 'cpu MHz' (in a VM often the base clock; a turbo clock can be higher)."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", encoding="utf-8") as f:
            return int(f.read().strip()) / 1e6, "cpufreq cpuinfo_max_freq"
    except (OSError, ValueError):
        pass
    named = re.search(r"@\s*([\d.]+)\s*GHz", cpu_model())
    if named:
        return float(named.group(1)), "the model name (base clock; turbo can be higher)"
    mhz = _cpuinfo_field("cpu MHz")
    if mhz:
        try:
            return float(mhz) / 1e3, "/proc/cpuinfo cpu MHz (current or base; turbo can be higher)"
        except ValueError:
            pass
    return None, "not found"


def theoretical_peak(cores: int | None = None, clock: tuple[float | None, str] | None = None,
                     vector: Vector | None = None) -> dict[str, object] | None:
    """float32 GFLOP/s at best: cores x clock x FLOP per cycle, a range since the FMA
    pipes per core cannot be read (FMA_UNITS). None where the clock is unknown."""
    cores = physical_cores() if cores is None else cores
    ghz, source = clock_ghz() if clock is None else clock
    vector = vector_width() if vector is None else vector
    if not ghz:
        return None
    lanes = vector["bits"] // FLOAT32_BITS
    per_fma = 2 if vector["fma"] else 1  # a multiply and an add per lane
    per_cycle = [lanes * per_fma * units for units in FMA_UNITS]
    return {"gflops_low": cores * ghz * per_cycle[0], "gflops_high": cores * ghz * per_cycle[1],
            "cores": cores, "clock_ghz": round(ghz, 3), "clock_source": source,
            "flop_per_cycle": per_cycle,
            "how": (f"{cores} cores x {ghz:.2f} GHz ({source}) x {per_cycle[0]}-{per_cycle[1]} "
                    f"float32 FLOP per cycle ({vector['instructions']}: {lanes} lanes x "
                    f"{per_fma} per {'FMA' if vector['fma'] else 'op'} x "
                    f"{FMA_UNITS[0]}-{FMA_UNITS[1]} pipes, a count software cannot read)")}


def hardware_facts() -> dict[str, object]:
    """The hardware and OS half of machine.json; the software half comes from the MXNet side."""
    return {
        "cpu": {
            "model": cpu_model(),
            "logical_cores": logical_cores(),
            "architecture": platform.machine(),
            "governor": cpu_governor(),
            "flags_avx512": "avx512f" in cpu_flags(),
            "vector": vector_width(),
            "peak_float32": theoretical_peak(),
        },
        "memory_bytes": memory_bytes(),
        "os": {"system": platform.system(), "release": platform.release(),
               "platform": platform.platform()},
        "gpus": gpus(),
        "cuda_driver_version": cuda_version(),
    }
