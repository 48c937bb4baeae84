"""The section's claim: training reaches the documents' accuracy.

Judging, not measuring: ``d2lperf.claims`` loads this file (the workers never do)."""

from __future__ import annotations

from d2lperf.claims import Accuracy

SECTION = "multi_gpu_scratch"

ACCURACY = [Accuracy("lenet_accuracy_as_documented", SECTION,
                     ("lenet_1_device", "lenet_2_devices"), None,
                     "LeNet accuracy as documented")]
