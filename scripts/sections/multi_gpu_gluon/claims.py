"""The section's claims: two devices make the ResNet-18 epoch faster; training reaches the
documents' accuracy.

Judging, not measuring: ``d2lperf.claims`` loads this file (the workers never do)."""

from __future__ import annotations

from d2lperf.applicability import Where
from d2lperf.claims import NA, Accuracy, Claim, speed_claim
from d2lperf.measurements import Measurements

SECTION = "multi_gpu_gluon"


def two_devices_speed_up_resnet(m: Measurements):
    found = speed_claim(m, SECTION, "resnet18_2_devices", "resnet18_1_device",
                        "2 devices/1 device", epochs=True)
    row = m.get(SECTION, "resnet18_2_devices")
    if row is not None and str(row.get("devices", "")).startswith("cpu"):
        found["evidence"] += "; on CPU contexts, which share one processor"
    if found["verdict"] != NA and not m.exact:
        found["evidence"] = "epoch times: " + found["evidence"]
    return found


CLAIMS = [
    Claim("two_devices_speed_up_resnet", SECTION,
          "two devices make the ResNet-18 epoch faster",
          two_devices_speed_up_resnet, None, Where(requires=("separate_devices",)),
          # seeds/001 printed both runs' mean epoch, from one machine
          "seeds/001", short="two devices speed up ResNet-18",
          figures=("resnet18_2_devices", "resnet18_1_device")),
]
# seeds/001 printed both runs' accuracy after 10 epochs, from one training.
ACCURACY = [Accuracy("resnet_accuracy_as_documented", SECTION,
                     ("resnet18_1_device", "resnet18_2_devices"), "seeds/001",
                     "ResNet-18 accuracy as documented")]
