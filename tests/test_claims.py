"""The chapter's claims decide by their stated rules, on hand-made summaries."""

import pandas as pd

from conftest import REPO
from d2lperf import claims
from d2lperf.stats import Stats
from d2lperf.tables import load_reference

REFERENCE = load_reference(REPO / "report/reference.csv")
OK = {"status": "ok"}


def summary(*cases):
    """cases: (experiment, case, metric, epoch, samples, devices)."""
    rows = []
    for experiment, case, metric, epoch, samples, devices in cases:
        rows.append({"experiment": experiment, "case": case, "metric": metric, "epoch": epoch,
                     "devices": devices, **Stats(samples).as_dict()})
    return pd.DataFrame(rows)


def verdicts(frame, runs):
    return {v.name: v for v in claims.judge(frame, runs, REFERENCE)}


def timing(experiment, case, samples, devices=""):
    return (experiment, case, "time", None, samples, devices)


def test_hybridize_holds_fails_or_is_inconclusive():
    runs = {"hybridize": OK}
    clear = summary(timing("hybridize", "mlp_before_hybridize", [0.40, 0.41, 0.42, 0.40, 0.41]),
                    timing("hybridize", "mlp_after_hybridize", [0.20, 0.21, 0.22, 0.20, 0.21]))
    v = verdicts(clear, runs)["hybridize_speeds_up_mlp"]
    assert v.verdict == "holds" and "1.95×" in v.evidence and "n = 5 and 5" in v.evidence
    few = summary(timing("hybridize", "mlp_before_hybridize", [0.40, 0.41]),
                  timing("hybridize", "mlp_after_hybridize", [0.20, 0.21]))
    assert verdicts(few, runs)["hybridize_speeds_up_mlp"].verdict == "inconclusive"
    reverse = summary(timing("hybridize", "mlp_before_hybridize", [0.1, 0.1, 0.1]),
                      timing("hybridize", "mlp_after_hybridize", [0.2, 0.2, 0.2]))
    assert verdicts(reverse, runs)["hybridize_speeds_up_mlp"].verdict == "does not hold"
    overlapping = summary(timing("hybridize", "mlp_before_hybridize", [0.1, 0.3, 0.2]),
                          timing("hybridize", "mlp_after_hybridize", [0.15, 0.25, 0.2]))
    assert verdicts(overlapping, runs)["hybridize_speeds_up_mlp"].verdict == "inconclusive"


def test_overlap_rule():
    runs = {"auto_parallelism": OK}
    parallel = summary(timing("auto_parallelism", "cpu_only", [0.84]),
                       timing("auto_parallelism", "gpu_only", [0.53]),
                       timing("auto_parallelism", "cpu_and_gpu", [0.85], "cpu(0),gpu(0)"))
    v = verdicts(parallel, runs)["cpu_gpu_overlap"]
    assert v.verdict == "holds" and "98% of the shorter one overlapped" in v.evidence
    serial = summary(timing("auto_parallelism", "cpu_only", [0.5]),
                     timing("auto_parallelism", "gpu_only", [0.5]),
                     timing("auto_parallelism", "cpu_and_gpu", [0.95]))
    assert verdicts(serial, runs)["cpu_gpu_overlap"].verdict == "does not hold"


def test_small_ops_claim_is_the_opposite_overlap():
    runs = {"small_ops_parallel": OK}
    documents = summary(timing("small_ops_parallel", "generate_x", [0.0628]),
                        timing("small_ops_parallel", "generate_y", [0.0628]),
                        timing("small_ops_parallel", "generate_x_and_y", [0.1302]))
    assert verdicts(documents, runs)["small_ops_no_overlap"].verdict == "holds"


def test_skipped_section_is_not_applicable_with_its_reason():
    runs = {"multi_gpu_gluon": {"status": "skipped", "reason": "needs 2 GPUs, found 0"}}
    v = verdicts(summary(timing("hybridize", "x", [1.0])), runs)
    assert v["two_devices_speed_up_resnet"].verdict == "not applicable"
    assert "needs 2 GPUs, found 0" in v["two_devices_speed_up_resnet"].evidence
    assert v["resnet_accuracy_as_documented"].verdict == "not applicable"
    assert v["cpu_gpu_overlap"].evidence == "auto_parallelism did not run"


def test_accuracy_after_the_documents_epochs():
    runs = {"multi_gpu_scratch": OK}
    acc = [("multi_gpu_scratch", "lenet_1_device", "accuracy", 4, [0.78], "cpu(0)"),
           ("multi_gpu_scratch", "lenet_2_devices", "accuracy", 4, [0.70], "cpu(0),cpu(1)")]
    v = verdicts(summary(*acc), runs)["lenet_accuracy_as_documented"]
    assert v.verdict == "holds", v.evidence
    assert "lenet_1_device: 0.78 after epoch 4 vs document 0.76 (+0.02)" in v.evidence
    worse = [acc[0], ("multi_gpu_scratch", "lenet_2_devices", "accuracy", 4, [0.5], "cpu(0)")]
    assert verdicts(summary(*worse), runs)["lenet_accuracy_as_documented"].verdict == (
        "does not hold")
    short = [("multi_gpu_scratch", "lenet_1_device", "accuracy", 1, [0.5], "cpu(0)")]
    v = verdicts(summary(*short), runs)["lenet_accuracy_as_documented"]
    assert v.verdict == "not applicable"
    assert "after epoch 4, this run ran 1" in v.evidence
