"""``python -m d2lperf COMMAND``: the ``d2lperf`` command (d2lperf.cli)."""

import sys

from d2lperf.cli import main

sys.exit(main())
