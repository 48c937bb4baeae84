"""The hang guard lets a slow but moving command finish, and stops a silent one."""

import sys

import pytest
from hang_guard import run_until_quiet

SLOW_BUT_MOVING = "import time\nfor i in range(8):\n    print(i, flush=True); time.sleep(0.4)"
SILENT = "import time; print('started', flush=True); time.sleep(60)"


@pytest.mark.slow  # over a second on 2 cores
def test_a_slow_command_that_keeps_printing_is_not_a_hang(tmp_path):
    done = run_until_quiet([sys.executable, "-c", SLOW_BUT_MOVING], cwd=tmp_path,
                           quiet_seconds=1.5, poll_seconds=0.2)
    assert not done.hung and done.returncode == 0
    assert done.seconds > 3  # longer than the quiet limit twice over
    assert done.stdout.split() == [str(i) for i in range(8)]


@pytest.mark.slow  # over a second on 2 cores
def test_a_command_writing_files_is_making_progress(tmp_path):
    writer = ("import time, pathlib\nfor i in range(6):\n"
              "    pathlib.Path('out', f'{i}').write_text('x'); time.sleep(0.5)")
    (tmp_path / "out").mkdir()
    done = run_until_quiet([sys.executable, "-c", writer], cwd=tmp_path, quiet_seconds=1.5,
                           watched=[tmp_path / "out"], poll_seconds=0.2)
    assert not done.hung and done.returncode == 0


@pytest.mark.slow  # over a second on 2 cores
def test_a_silent_command_is_stopped_and_diagnosed(tmp_path):
    done = run_until_quiet([sys.executable, "-c", SILENT], cwd=tmp_path, quiet_seconds=1.0,
                           diagnose=lambda: "squeue: nothing running", poll_seconds=0.2)
    assert done.hung and done.returncode != 0
    assert done.seconds < 20
    assert done.diagnosis == "squeue: nothing running"
    assert "started" in done.stdout
