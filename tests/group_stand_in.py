"""A process of a data-parallel group that trains nothing, for the coordinator's own tests
(``d2lperf.groups``): it sleeps ``options["step_s"]`` a step, and a request for
``options["fail_at"]`` steps makes it exit with code 1, as a rank whose collective lost
its peer does. Spawned processes import it by name (tests/ is on their path)."""

import sys
import time

from d2lperf import groups


def rank_main(me: groups.Member, on: str, model: str, options: dict, conn) -> None:
    def train(steps: int) -> float:
        if steps == options.get("fail_at"):
            sys.exit(1)
        time.sleep(options.get("step_s", 0.0) * steps)
        return float(me.rank)

    groups.serve(conn, train)
