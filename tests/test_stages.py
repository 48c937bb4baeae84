"""d2lperf.stages: measure until decided, within a budget, and never pool a busy stage
with quiet ones; d2lperf.steadiness's gate seen with a real busy loop."""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, measure, shipped_config
from d2lperf import stages, stats, steadiness
from d2lperf.configcheck import ConfigError, check_config
from d2lperf.presets import for_framework

MXNET_CPU = {"device_kind": "cpu", "queues_work": True, "separate_devices": True}
PYTORCH_CPU = {"device_kind": "cpu", "queues_work": False, "separate_devices": False}
QUIET = {"others_cores": 0.0, "own_cores": 2.0, "cores": 2, "wall_s": 1.0}
BUSY = {"others_cores": 1.0, "own_cores": 1.0, "cores": 2, "wall_s": 1.0}


class FakeSampler:
    """The hybridize section's two compared cases, with a true ratio after/before, a
    per-process offset and noise: stands in for the processes where only the stopping
    logic is under test. ``loads`` gives each stage's load (quiet when it runs out)."""

    def __init__(self, ratio: float, noise: float, offset: float = 0.0,
                 loads: list[dict] | None = None, seconds: float = 1.0, seed: int = 0,
                 walls: list[float] | None = None, closing: float = 0.0):
        self.ratio, self.noise, self.offset, self.seconds = ratio, noise, offset, seconds
        self.closing = closing  # seconds each stage spends after its processes (its probe)
        self.loads, self.calls, self.elapsed = list(loads or []), [], 0.0
        self.walls = list(walls or [])  # each process's wall time, else ``seconds``
        self.rng = random.Random(seed)

    def __call__(self, first: int, count: int, room=lambda records: True) -> stages.Stage:
        records, rows = [], []
        for process in range(first, first + count):
            if records and not room(records):
                break
            wall = self.walls.pop(0) if self.walls else self.seconds
            self.elapsed += wall
            shift = math.exp(self.rng.gauss(0, self.offset))
            for repeat in range(3):
                for case, base in (("mlp_before_hybridize", 1.0),
                                   ("mlp_after_hybridize", self.ratio)):
                    value = base * shift * math.exp(self.rng.gauss(0, self.noise))
                    rows.append({"case": case, "metric": "time", "process": process,
                                 "repeat": repeat, "value": value})
            records.append({"status": "ok", "wall_seconds": wall,
                            "framework": "mxnet", "execution": MXNET_CPU})
        self.calls.append((first, len(records)))
        self.elapsed += self.closing
        load = self.loads.pop(0) if self.loads else QUIET
        return stages.Stage(records, rows, load, probe_s=0.2)


def staged(sampler, budget=1000.0, wait=lambda seconds: True, first=4, futility=False):
    """The stages of the hybridize section over ``sampler``; the stopping rule for what
    is out of reach is off unless asked for: most tests here keep a claim on the band's
    edge measuring, to see the plan and the budget end it."""
    return stages.run(sampler, first, section="hybridize", band=0.05, budget=budget,
                      threads=2, wait=wait, clock=lambda: sampler.elapsed, futility=futility)


def test_the_plan_and_each_looks_share_of_the_error_rate():
    assert stages.plan(4) == [4, 4, 8]
    assert stages.look_confidence(3) == pytest.approx(1 - 0.05 / 3)


def test_a_clear_effect_stops_after_the_first_stage_decided():
    sampler = FakeSampler(ratio=0.5, noise=0.02)
    done, pooled, record = staged(sampler)
    assert sampler.calls == [(0, 4)]
    assert record["stopped"] == stages.DECIDED and record["count"] == 1
    assert record["looks"] == 1 and record["processes_pooled"] == 4
    assert record["history"][0]["look"][0]["effect"] == stats.FASTER
    assert "hybridize_speeds_up_mlp holds" in record["why"]


class TwinSampler(FakeSampler):
    """FakeSampler with the A/A twin beside the two cases: the same work as
    mlp_before_hybridize under another label, off by its own 15% in each process (a
    process-level spread wide enough that the band's 5% cannot be resolved)."""

    def __call__(self, first: int, count: int, room=lambda records: True) -> stages.Stage:
        stage = super().__call__(first, count, room)
        for process in range(first, first + len(stage.records)):
            instance = math.exp(self.rng.gauss(0, 0.15))
            for row in [r for r in stage.rows if r["process"] == process
                        and r["case"] == "mlp_before_hybridize"]:
                stage.rows.append({**row, "case": "mlp_before_hybridize_twin",
                                   "value": row["value"] * instance})
        return stage


def test_the_a_a_check_is_judged_but_not_waited_for():
    """The claim decided at the first look stops the section, though its A/A pair,
    measured and judged alongside, is still inconclusive: a check of the method does
    not spend the section's budget."""
    sampler = TwinSampler(ratio=0.5, noise=0.02)
    done, pooled, record = staged(sampler)
    assert sampler.calls == [(0, 4)] and record["stopped"] == stages.DECIDED
    looked = {a["question"]: a for a in record["history"][0]["look"]}
    assert looked["aa_hybridize"]["kind"] == "check"
    assert looked["aa_hybridize"]["low"] < 1 < looked["aa_hybridize"]["high"]
    assert not looked["aa_hybridize"]["decided"] and looked["hybridize_speeds_up_mlp"]["decided"]


def test_an_effect_at_the_band_measures_every_planned_stage_then_stops():
    # a true ratio on the band's edge can never be decided: the plan ends it
    sampler = FakeSampler(ratio=0.95, noise=0.05, offset=0.03)
    done, pooled, record = staged(sampler)
    assert sampler.calls == [(0, 4), (4, 4), (8, 8)]  # fresh process indices each stage
    assert record["stopped"] == stages.MAX_STAGES and record["looks"] == 3
    assert record["processes_pooled"] == 16 and all(pooled)
    assert "undecided: hybridize_speeds_up_mlp" in record["why"]


def test_an_effect_at_the_band_stops_once_no_stage_could_decide_it():
    """A claim whose estimate sits on the band's edge: a look at every process the plan
    and the budget still allow would leave its interval across the edge, so the section
    stops after its first look, out of reach, and says why; undecided, as it would be
    after every stage."""
    sampler = FakeSampler(ratio=0.95, noise=0.05, offset=0.03)
    done, pooled, record = staged(sampler, futility=True)
    assert sampler.calls == [(0, 4)]
    assert record["stopped"] == stages.OUT_OF_REACH and record["looks"] == 1
    found = record["history"][0]["reach"]
    assert found["processes"] == 16 and found["could_decide"] == []
    (answer,) = found["projected"]
    assert answer["question"] == "hybridize_speeds_up_mlp"
    assert answer["then"][0] > answer["now"][0] and answer["then"][1] < answer["now"][1]
    assert answer["then"][0] < 0.95 < answer["then"][1]
    assert "a look at 16 processes" in record["why"]
    assert "would not decide: hybridize_speeds_up_mlp" in record["why"]
    assert "out of reach" in stages.summary_text(record)
    # the budget bounds the projection too: 4 processes of 1 s spent, 6 more fit in 10
    _, _, record = staged(FakeSampler(ratio=0.95, noise=0.05, offset=0.03), budget=10.0,
                          futility=True)
    assert record["history"][0]["reach"]["processes"] == 10


def test_an_undecided_claim_within_reach_measures_another_stage():
    # seed 1: at 4 processes 0.36 [0.21-0.64], undecided (Holm's strictest step); at
    # its estimate, 16 processes would read about [0.31-0.43]: measured on, decided at 8
    sampler = FakeSampler(ratio=0.5, noise=0.6, seed=1)
    _, _, record = staged(sampler, futility=True)
    first = record["history"][0]
    assert not first["look"][0]["decided"]
    assert first["reach"]["could_decide"] == ["hybridize_speeds_up_mlp"]
    assert sampler.calls == [(0, 4), (4, 4)] and record["stopped"] == stages.DECIDED


@pytest.mark.slow  # over a second on 2 cores
def test_stopping_what_is_out_of_reach_costs_few_decisions_and_saves_processes():
    """Over 40 seeds of a short section's shape (8 processes first, room for 20): a
    small effect that the full plan decides about half the time loses at most one in
    twenty of those decisions (rounded up: 40 seeds cannot tell 1 of 18 from 1 of 20;
    with MXNet's data-parallel claims in its Holm count, 1 of 18 is lost), and a ratio on
    the edge, which no stage decides, measures about half the processes. Stopping early
    never makes a verdict decisive, so the error rate of the decisive ones is the plan's."""
    def runs(ratio, noise, futility):
        found = []
        for seed in range(40):
            sampler = FakeSampler(ratio=ratio, noise=noise, seed=seed)
            found.append(staged(sampler, budget=20.0, first=8, futility=futility)[2])
        return found

    full, early = runs(0.85, 0.15, False), runs(0.85, 0.15, True)
    decided = [r["stopped"] == stages.DECIDED for r in full]
    lost = sum(d and r["stopped"] != stages.DECIDED for d, r in zip(decided, early))
    assert sum(decided) >= 15 and lost <= math.ceil(sum(decided) / 20)
    edge_full, edge_early = runs(0.95, 0.05, False), runs(0.95, 0.05, True)
    assert not any(r["stopped"] == stages.DECIDED for r in edge_full + edge_early)
    pooled = [sum(r["processes_pooled"] for r in found) for found in (edge_full, edge_early)]
    assert pooled[1] < 0.6 * pooled[0]


def test_a_later_stage_of_which_not_even_two_processes_fit_is_not_started():
    sampler = FakeSampler(ratio=0.95, noise=0.05, offset=0.03, seconds=10.0)
    # 4 processes of 10 s spent; two more would end at 60 s
    done, pooled, record = staged(sampler, budget=59.0)
    assert sampler.calls == [(0, 4)]
    assert record["stopped"] == stages.BUDGET and "59 s" in record["why"]
    done, pooled, record = staged(FakeSampler(ratio=0.95, noise=0.05, seconds=10.0),
                                  budget=80.0)
    assert record["count"] == 2


def test_a_later_stage_that_does_not_fit_whole_runs_the_processes_that_do():
    """The budget left after a stage buys processes, not nothing: 4 processes of 10 s
    spent and 39 s left, the second stage runs 3 of its 4 (a look on 7 is worth more
    than none, and each look's share of the error rate does not depend on its size)."""
    sampler = FakeSampler(ratio=0.95, noise=0.05, offset=0.03, seconds=10.0)
    done, pooled, record = staged(sampler, budget=79.0)
    assert sampler.calls == [(0, 4), (4, 3)]
    assert record["stopped"] == stages.BUDGET and record["looks"] == 2
    assert record["processes_pooled"] == 7 and record["history"][1]["cut_short"]
    assert "79 s spent after 3 of its 4 processes of stage 2" in record["why"]


def test_what_a_stage_spends_after_its_processes_is_kept_within_the_budget():
    """Each stage ends with its probe (here 1 s), outside any process's wall time: a
    later stage leaves room for it, so the section ends inside its budget (a busy run of
    MXNet's draws ended at 120.4 s of 120 before). 4 + 1 s, 4 + 1 s, then 7 of 8 + 1 s."""
    sampler = FakeSampler(ratio=0.95, noise=0.05, offset=0.03, closing=1.0)
    _, _, record = staged(sampler, budget=18.0)
    assert sampler.calls == [(0, 4), (4, 4), (8, 7)]
    assert record["seconds"] <= 18.0 and record["stopped"] == stages.BUDGET
    # the budget bounds the projection the same way: 10 s spent after one stage, room
    # for 2 more processes and the stage's closing second
    sampler = FakeSampler(ratio=0.95, noise=0.05, offset=0.03, seconds=2.0, closing=2.0)
    _, _, record = staged(sampler, budget=16.0, futility=True)
    assert record["history"][0]["reach"]["processes"] == 6


def test_a_first_stage_slower_than_its_budget_is_cut_short_after_two_processes():
    """The budget bounds the first stage too: a machine on which each process takes a
    third of the budget stops launching them once the next would not fit."""
    sampler = FakeSampler(ratio=0.95, noise=0.05, offset=0.03, seconds=60.0)
    done, pooled, record = staged(sampler, budget=180.0, first=8)
    assert sampler.calls == [(0, 3)]  # 3 x 60 s = 180 s: a fourth would end at 240
    assert record["stopped"] == stages.BUDGET and record["processes_pooled"] == 3
    assert record["history"][0]["processes"] == [0, 3]
    assert record["history"][0]["cut_short"]
    assert "3 of its 8 processes" in record["why"] and "180 s" in record["why"]
    # however slow, the first two run: one process shows no spread between processes
    sampler = FakeSampler(ratio=0.95, noise=0.05, seconds=500.0)
    _, _, record = staged(sampler, budget=180.0, first=8)
    assert sampler.calls == [(0, stages.MIN_PROCESSES)]
    assert record["stopped"] == stages.BUDGET


def test_a_cut_stage_that_decided_says_decided():
    sampler = FakeSampler(ratio=0.5, noise=0.02, seconds=60.0)
    _, _, record = staged(sampler, budget=200.0, first=8)
    assert sampler.calls == [(0, 3)] and record["stopped"] == stages.DECIDED


def test_a_later_stage_slower_than_predicted_is_cut_short_too():
    # the first stage's processes took 10 s each, the second's take 40: the second stage
    # was started (4 x 10 s fit), and stops launching once the next would not fit
    sampler = FakeSampler(ratio=0.95, noise=0.05, offset=0.03, walls=[10.0] * 4 + [40.0] * 8)
    _, _, record = staged(sampler, budget=130.0)
    # 40 s spent, then 80 (the last took 40: 120 fits), 120 (160 does not)
    assert sampler.calls == [(0, 4), (4, 2)]
    assert record["stopped"] == stages.BUDGET and record["history"][1]["cut_short"]


def test_a_busy_stage_is_waited_out_measured_again_and_set_aside():
    waits = []
    sampler = FakeSampler(ratio=0.5, noise=0.02, loads=[BUSY, QUIET])

    def wait(seconds):
        waits.append(seconds)
        return True

    done, pooled, record = staged(sampler, budget=100.0, wait=wait)
    assert waits == [min(stages.WAIT_LIMIT_S, stages.WAIT_SHARE * 100.0)]
    assert sampler.calls == [(0, 4), (4, 4)]  # the same stage again, fresh processes
    assert pooled == [False, True]
    first, again = record["history"]
    assert first["busy"] and "1.00 cores busy" in first["busy_why"][0]
    assert again["retry"] and not again["busy"] and "look" in again
    assert record["processes_pooled"] == 4 and record["stopped"] == stages.DECIDED


# Eight threaded probes (2 processes, 0.2 s nominal) one after the other on the quiet
# build machine, nothing else running: a shared host's speed swings this much by itself.
QUIET_PROBES = [0.322, 0.276, 0.332, 0.224, 0.355, 0.299, 0.313, 0.365]


def test_the_probe_gate_lets_a_quiet_machines_swing_pass_and_catches_a_lost_core():
    for k in range(1, len(QUIET_PROBES)):
        assert steadiness.busy(QUIET, 2, QUIET_PROBES[:k], QUIET_PROBES[k]) == []
    # one fast reading is not the reference: the median of the section's probes is
    assert steadiness.busy(QUIET, 2, [0.224, 0.33, 0.34], 0.37) == []
    # the quiet host alone swung a section's probe by +60%, +61% and +63% (others_cores
    # 0.000-0.007; four quiet runs of the verdict-stability bench, 2026-12-02)
    for swing in (1.60, 1.61, 1.63, 1.70):
        assert steadiness.busy(QUIET, 2, [0.20, 0.21], 0.205 * swing) == [], swing
    # a core taken away (each of the two probe processes then shares one): about twice
    lost = steadiness.busy(QUIET, 2, QUIET_PROBES[:3], 2 * 0.322)
    assert lost and "CPU probe ran +100% slower than the section's median" in lost[0]


def test_a_machine_busy_throughout_pools_its_busy_stages_and_stops_waiting():
    waits = []
    sampler = FakeSampler(ratio=0.95, noise=0.05, offset=0.03, loads=[BUSY] * 10)
    done, pooled, record = staged(sampler, wait=lambda s: waits.append(s) or False)
    assert len(waits) == 1  # the wait timed out: the load stays, no more waiting
    assert all(pooled) and record["all_busy"]
    assert [h["retry"] for h in record["history"]] == [False, True, False, False]
    assert "pooled with each other" in stages.summary_text(record)


def test_a_section_without_staged_comparisons_runs_one_stage_busy_or_not():
    sampler = FakeSampler(ratio=0.5, noise=0.02, loads=[BUSY])
    _, _, record = stages.run(sampler, 2, section="multi_gpu_scratch", band=0.05,
                              budget=100,
                              threads=1, wait=lambda s: True)
    assert sampler.calls == [(0, 2)] and record["stopped"] == stages.NOTHING


class CaseSampler:
    """Any section's cases, each a base time times a per-process offset and noise:
    ``cases`` is {case: base}. Records say where they ran (``framework``,
    ``execution``), as a section's own records do."""

    def __init__(self, cases: dict[str, float], noise: float = 0.02, offset: float = 0.0,
                 framework: str = "mxnet", execution: dict | None = None, seed: int = 0,
                 load: dict | None = None):
        self.cases, self.noise, self.offset, self.load = cases, noise, offset, load or QUIET
        self.framework, self.execution = framework, execution or MXNET_CPU
        self.rng, self.calls, self.seconds = random.Random(seed), [], 1.0

    def __call__(self, first: int, count: int, room=lambda records: True) -> stages.Stage:
        rows, records = [], []
        for process in range(first, first + count):
            if records and not room(records):
                break
            shift = math.exp(self.rng.gauss(0, self.offset))
            for repeat in range(3):
                for case, base in self.cases.items():
                    rows.append({"case": case, "metric": "time", "process": process,
                                 "repeat": repeat, "value": base * shift
                                 * math.exp(self.rng.gauss(0, self.noise))})
            records.append({"status": "ok", "wall_seconds": 1.0, "framework": self.framework,
                            "execution": self.execution})
        self.calls.append((first, len(records)))
        return stages.Stage(records, rows, self.load, probe_s=0.2)


def run_cases(sampler: CaseSampler, section: str, wait=lambda seconds: True,
              futility=True):
    """The stages of ``section`` over a CaseSampler: 4 processes first, a 1000 s budget."""
    return stages.run(sampler, 4, section=section, band=0.05, budget=1000, threads=2,
                      wait=wait, clock=lambda: len(sampler.calls), futility=futility)


def test_an_overlap_section_stops_on_its_claims_hidden_share_not_on_together_over_the_sum():
    # together / (a + b) = 0.75 lies far below the band, but the hidden share sits on the
    # claim's 50%: the claim cannot be decided, so the stages measure every planned stage
    sampler = CaseSampler({"cpu_only": 1.0, "gpu_only": 1.0, "cpu_and_gpu": 1.5})
    _, _, record = run_cases(sampler, "auto_parallelism", futility=False)
    assert record["stopped"] == stages.MAX_STAGES, record["why"]
    answer = record["history"][-1]["look"][0]
    assert answer["question"] == "cpu_gpu_overlap" and not answer["decided"]
    assert answer["effect"] == stats.FASTER  # what the old stopping rule decided on


def test_a_section_whose_claims_do_not_apply_here_stops_after_its_first_stage():
    # eager PyTorch on a CPU queues nothing: neither claim of the section applies
    sampler = CaseSampler({"add_loop_asynchronous": 1.0, "add_loop_synchronous": 1.0},
                          framework="pytorch", execution=PYTORCH_CPU)
    _, _, record = run_cases(sampler, "async_computation")
    # nor are the first stage's processes past the first two: nothing here needs them
    assert sampler.calls == [(0, stages.MIN_PROCESSES)]
    assert record["stopped"] == stages.NOTHING


def test_a_busy_stage_of_a_section_with_nothing_to_judge_here_is_not_measured_again():
    # its figures are findings: a busy stage is kept, and the record says it was busy
    sampler = CaseSampler({"add_loop_asynchronous": 1.0, "add_loop_synchronous": 1.0},
                          framework="pytorch", execution=PYTORCH_CPU, load=BUSY)
    waits = []
    _, pooled, record = run_cases(sampler, "async_computation",
                                  wait=lambda s: waits.append(s) or True)
    assert sampler.calls == [(0, stages.MIN_PROCESSES)] and not waits
    assert pooled == [True] and record["history"][0]["busy"]


def test_a_section_with_an_a_a_check_runs_its_processes_though_no_claim_applies():
    # PyTorch's draws on a CPU: no claim applies, but the A/A pair needs its processes
    sampler = CaseSampler({"generate_x": 1.0, "generate_y": 1.0, "generate_together": 2.0},
                          framework="pytorch", execution=PYTORCH_CPU)
    _, _, record = run_cases(sampler, "small_ops_parallel")
    assert sampler.calls == [(0, 4)] and record["stopped"] == stages.NOTHING


@pytest.mark.slow  # over a second on 2 cores
def test_what_the_stages_call_decided_the_report_shows_decided():
    """The stopping rule and the report judge by the same function: over many seeds of a
    small effect near the band, every verdict the stages called decided reads the same
    in the report, which judges the pooled rows at the run's per-look confidence."""
    from d2lperf import claims
    from d2lperf.tables import load_reference, summarise_samples
    reference = load_reference()
    seen = 0
    for seed in range(12):
        sampler = CaseSampler({"mlp_before_hybridize": 1.0, "mlp_after_hybridize": 0.9,
                               "mlp_before_hybridize_twin": 1.0}, noise=0.03, offset=0.03,
                              seed=seed)
        done, pooled, record = run_cases(sampler, "hybridize")
        samples = pd.DataFrame([
            {"section": "hybridize", "framework": "mxnet", "unit": "s", "position": "",
             "epoch": None, "devices": "", **row}
            for stage, keep in zip(done, pooled) if keep for row in stage.rows])
        run = {**done[0].records[0], "stages": record}
        report = {v.name: v for v in claims.judge(summarise_samples(samples),
                                                  {"hybridize": run}, reference, samples,
                                                  framework="mxnet")}
        for answer in record["history"][-1]["look"]:
            shown = report[answer["question"]]
            assert shown.ratio_high == pytest.approx(answer["high"])
            if answer["decided"]:
                seen += 1
                assert shown.verdict == answer["verdict"], (seed, answer, shown.evidence)
    assert seen  # some were decided


def test_the_budget_is_a_validated_config_key():
    schema = REPO / "workflow/schemas/config.schema.yaml"
    config = shipped_config()
    for preset in ("documents", "ci"):
        staged = [s for s, keys in config["presets"][preset].items()
                  if isinstance(keys, dict) and "processes" in keys]
        assert staged and set(staged) <= stages.sections()  # each has claims to decide
        for section, framework in itertools.product(staged, config["frameworks"]):
            options = for_framework(config["presets"][preset][section], framework)
            assert options["budget_seconds"] > 0
    for value, message in ((0, "presets.ci.hybridize.budget_seconds = 0"),
                           ("soon", "presets.ci.hybridize.budget_seconds = 'soon'")):
        bad = copy.deepcopy(config)
        bad["presets"]["ci"]["hybridize"]["budget_seconds"] = value
        with pytest.raises(ConfigError) as error:
            check_config(bad, schema)
        assert message in str(error.value)


# --- real processes ---------------------------------------------------------------------

SECTION = textwrap.dedent('''\
    import sys
    sys.path.insert(0, {scripts!r})
    from d2lperf import harness, steadiness, timing

    def body(args, rec):
        work = lambda n: lambda: steadiness.probe_work(n)
        rec.timings(timing.compare({{"mlp_before_hybridize": work(200_000),
                                     "mlp_after_hybridize": work(100_000)}}, lambda: None,
                                   warmup=1, rounds=args.repeats, seed=0,
                                   process=args.process))

    if __name__ == "__main__":
        sys.exit(harness.main("hybridize", "pytorch", harness.parser("toy"), body))
''')


def run_section(tmp_path: Path, *args: str) -> dict:
    script = tmp_path / "toy.py"
    script.write_text(SECTION.format(scripts=str(REPO / "scripts")))
    done = measure(sys.executable, script, "--csv", str(tmp_path / "s.csv"), "--sidecar",
                   str(tmp_path / "run.json"), "--repeats", "3", "--probe-seconds", "0.01",
                   *args, section="hybridize", framework="pytorch", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((tmp_path / "run.json").read_text())


@pytest.mark.slow  # a timing job
def test_a_real_section_with_a_twofold_difference_is_decided_and_says_so(tmp_path):
    record = run_section(tmp_path, "--processes", "3", "--threads", "1",
                         "--budget-seconds", "60")
    staging = record["stages"]
    # decided at the first quiet look; a stage the gate found busy (another job on this
    # shared machine) is measured again first, so the look count is not fixed
    assert staging["stopped"] == stages.DECIDED and staging["looks"] >= 1
    answer = staging["history"][-1]["look"][0]
    assert answer["effect"] == stats.FASTER and 0.3 < answer["ratio"] < 0.8
    assert staging["plan"] == [3, 3, 6]
    pooled = sum(h["processes"][1] - h["processes"][0] for h in staging["history"]
                 if h["pooled"])
    rows = (tmp_path / "s.csv").read_text().splitlines()[1:]
    assert len(rows) == pooled * 3 * 2  # only the pooled stages' rows are the section's
    assert len(record["processes"]) == staging["history"][-1]["processes"][1]
    assert "stopped: decided" in stages.summary_text(staging)


@pytest.mark.slow  # a timing job
def test_the_gate_sees_a_real_busy_core_and_measures_the_stage_again(tmp_path):
    with steadiness.busy_cores(1, seconds=120) as pids:
        window = steadiness.Window()
        time.sleep(1.5)
        load = window.close()
        assert load["others_cores"] >= 0.4, load  # the spin alone takes its share
        assert steadiness.busy(load, threads=load["cores"])
        record = run_section(tmp_path, "--processes", "2", "--threads", "2",
                             "--budget-seconds", "20")
    assert not Path(f"/proc/{pids[0]}").exists()  # killed and reaped with the block
    first = record["stages"]["history"][0]
    assert first["busy"] and first["waited_for_quiet"] is False  # the spin outlasts the wait
    assert first["load"]["others_cores"] >= 0.4
    assert record["stages"]["history"][1]["retry"]


@pytest.mark.slow  # over half a second on 2 cores
def test_a_spin_ends_on_its_own_at_its_deadline():
    with steadiness.busy_cores(1, seconds=0.5) as pids:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = Path(f"/proc/{pids[0]}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":  # exited, waiting to be reaped
                break
            time.sleep(0.2)
        assert state == "Z"


@pytest.mark.slow  # over a second on 2 cores
def test_a_waited_for_child_counts_as_the_sections_own_cpu_not_others():
    window = steadiness.Window()
    done = subprocess.run([sys.executable, "-c", "import time\nend = time.monotonic() + 1.0\n"
                           "while time.monotonic() < end: pass\nprint(time.process_time())"],
                          check=True, timeout=60, capture_output=True, text=True)
    load = window.close()
    child_cpu = float(done.stdout)
    assert child_cpu > 0.1
    assert load["own_cores"] * load["wall_s"] >= 0.8 * child_cpu, (load, child_cpu)


def test_the_report_says_how_many_stages_a_section_took_and_why():
    from d2lperf.report.sections_view import run_line

    _, _, record = staged(FakeSampler(ratio=0.95, noise=0.05, offset=0.03, seconds=10.0),
                          budget=95.0)
    line = run_line({"status": "ok", "wall_seconds": 80.0, "parameters": {},
                     "stages": record})
    # the method, folded under "How this was measured"; the status line says it plainly
    assert "2 stages, 8 processes pooled; stopped: budget spent (not even 2 processes " \
           "of the next stage would fit in 95 s; undecided: hybridize_speeds_up_mlp" \
        in line["method"]
    assert ("each look at 98.3% (Bonferroni: 0.05 shared by 3 planned looks; Holm over the "
            "framework's claims)") in line["method"]
    assert line["text"].endswith("; the machine was steady")


def test_the_report_says_how_many_processes_ran_when_the_budget_cut_the_first_stage():
    from d2lperf.report.sections_view import run_line

    _, _, record = staged(FakeSampler(ratio=0.95, noise=0.05, offset=0.03, seconds=60.0),
                          budget=180.0, first=8)
    processes = [{"status": "ok"}] * 3
    line = run_line({"status": "ok", "wall_seconds": 180.0, "processes": processes,
                     "parameters": {"repeats": 10, "processes": 8, "warmup": 1},
                     "stages": record})
    assert "10 balanced rounds × 3 process(es) (8 planned first) after 1 warm-up" \
        in line["method"]
    assert "stopped: budget spent (180 s spent after 3 of its 8 processes of stage 1" \
        in line["method"]
    assert line["text"].startswith("180 s, measured in 3 fresh processes")
