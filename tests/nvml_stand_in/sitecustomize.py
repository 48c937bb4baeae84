"""On PYTHONPATH, makes every Python process that starts take the NVML stand-in beside
this file as pynvml, ahead of a real nvidia-ml-py anywhere on the path (the GPU check's
kit installs one before the caller's PYTHONPATH)."""

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("pynvml", Path(__file__).with_name("pynvml.py"))
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
sys.modules["pynvml"] = _module
