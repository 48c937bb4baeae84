"""Groups of training processes, one per device, for the data-parallel section (every framework).

The section trains a model on N devices as today's frameworks do it: one process per
device, a collective between them (PyTorch's DistributedDataParallel, JAX's
``jax.distributed``). This module is the part that knows no framework: the section's
options, starting a group of N processes (``Group``: spawned, each told its rank, the
group's size and the rendezvous address rank 0 holds on this host), telling every process
of a group to train a number of steps and waiting until all have (``Group.run``), and the
coordinator that times the groups side by side (``measure``). A framework's script gives the
process's own code (``target``: its process group, its replica, its share of the data,
then ``serve``) and what a device is there.

A group lives on this machine (its processes spawned, talking to the coordinator through
pipes), or, where the section spans several nodes (``--nodes``) inside a SLURM job, on
the job's nodes: one ``srun`` step per group, one task per device, each task taking its
rank, the group's size and its index on its node (its core or GPU there) from the
variables SLURM gives it, and reaching the coordinator over TCP (``join``). Either way
rank 0 offers the rendezvous address of the framework's collectives on its own node, its
port held from the moment it is chosen (``hold_port``: no other process can take it before
the framework binds it); the coordinator hands it to the others.

Nothing on the network can join or stall a group (docs/design.md, "Data-parallel training
at every scale": who can reach a group). On one node every listening socket of a group is
on loopback: the rendezvous, and the framework's collectives told so by ``binding``
(gloo's and NCCL's interface, ps-lite's address). Across a SLURM job's nodes they listen
on the address the node's name resolves to, the network the nodes share, which is trusted
(as PyTorch's and JAX's own docs assume); the coordinator there takes only callers that
prove the group's key, and no other caller can stop it (``Coordinator``).

No fault of a group goes unnamed or waits without end (``Group.replies``): a process
that dies (an exception, the kernel's OOM killer) ends the section at once, naming it and
its signal or exit code, and a process killed is named before the peers that failed
after it; one that is stopped (SIGSTOP, a debugger) is named within ``STOPPED_S``; a
group that stays silent far beyond its own slowest step is named with the bound it
passed. Then every process of every group is killed.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import multiprocessing
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import (
    AuthenticationError,
    Client,
    Connection,
    answer_challenge,
    deliver_challenge,
    wait,
)
from pathlib import Path
from typing import Any

from d2lperf import arguments, data, devices, progress, sections, timing, training
from d2lperf.errors import NEEDS_GPUS, Skipped

SECTION = "data_parallel"
POLL_S = 1.0  # how often the coordinator looks at a group's silent processes
# A collective that waits longer than this has lost a process: far beyond the slowest
# step seen (a ResNet-18 step of 256 images on one CPU thread takes about 7 s). It is also
# the bound of a group's startup and untimed first step, before any step was timed.
COLLECTIVE_TIMEOUT_S = 600
# Once a step was timed, a group that trains ``steps`` more may be silent for this many
# times its slowest step seen (the untimed first one included, compile and all), and
# never less than the floor: a busy machine slows a step a few times, not tenfold.
SILENCE_FACTOR = 10
SILENCE_FLOOR_S = 60.0
STOPPED_S = 10.0  # a process stopped (SIGSTOP, a debugger) this long ends the section
ENDED_S = 5.0  # after one process's end, how long its peers get to end before it is said
STEP_ENDS_S = 30.0  # how long srun gets to end a step whose task failed (--kill-on-bad-exit)
# A rank whose helper process died (MXNet's ps-lite scheduler or server) ends with this.
HELPER_DIED = 75
LOOPBACK = "127.0.0.1"
# What each task of an srun step runs: ``join`` with the section's script, the function
# of its processes and the coordinator's address.
JOIN = "import sys; from d2lperf.groups import join; join(*sys.argv[1:])"
# Where a task srun started finds the key that lets it talk to its coordinator (in its
# environment, not on a command line that `ps` shows).
KEY = "D2LPERF_GROUP_KEY"


def parser(description: str) -> argparse.ArgumentParser:
    """The section's command line in every framework: the common options, the training
    ones (made from the section's declaration: its options, the documents' values) and
    ``--on`` (default cpu)."""
    p = arguments.parser(description)
    train = p.add_argument_group("training")
    arguments.add_options(train, SECTION)  # type: ignore[arg-type]  (a group takes the same calls)
    train.add_argument("--data-dir", default=None,
                       help="folder with Fashion-MNIST's four .gz files")
    devices.add_argument(p, default="cpu")
    return p


def hold_port(host: str) -> socket.socket:
    """A port for a group's rendezvous on ``host``, held from the moment it is chosen (so
    no other process can take it between the choice and the framework's bind): a TCP
    socket bound there, on a port the kernel picks, with SO_REUSEADDR and not listening.
    While it is open Linux gives that port to no one else: not to a bind to port 0, not to
    an outgoing connection, not to a bind without SO_REUSEADDR. The framework's own
    listener binds beside it, as a socket with SO_REUSEADDR may beside one that does not
    listen: PyTorch's TCPStore takes the socket itself (``master_listen_fd``); JAX's
    coordinator (gRPC) and ps-lite's scheduler (ZeroMQ) set SO_REUSEADDR."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    held.bind((host, 0))
    return held


def node_address() -> str:
    """The address this node's name resolves to: on a SLURM job's nodes, the network they
    share, and the only one a group across nodes listens on."""
    return socket.gethostbyname(socket.gethostname())


def interface_of(address: str) -> str | None:
    """The network interface that holds IPv4 ``address`` (Linux's SIOCGIFADDR), or None."""
    import fcntl
    import struct

    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                found = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            except OSError:  # an interface without an IPv4 address
                continue
        if socket.inet_ntoa(found[20:24]) == address:
            return name
    return None


@dataclass(frozen=True)
class Member:
    """Who a process is in its group: ``rank`` of ``world``, ``local`` its index among
    the group's processes on its node (which core it pins, which GPU it takes), and the
    rendezvous ``address`` (``host:port``) of the group's collectives; in rank 0, ``held``
    is the socket that holds that port until the framework listens there (``hold_port``)."""

    rank: int
    world: int
    local: int
    address: str
    held: socket.socket | None = field(default=None, compare=False, repr=False)


def binding(me: Member) -> tuple[str, dict[str, str]]:
    """Where a process of a group listens, and the variables that keep its framework's
    collectives there: loopback where the group's rendezvous is on loopback (one node:
    nothing on the network can reach the group), else this node's own address (across a
    SLURM job's nodes). gloo (PyTorch's CPU collectives) and NCCL read the interface;
    ps-lite its address and interface. Set before the framework loads."""
    host = me.address.rsplit(":", 1)[0]
    loopback = ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    here = LOOPBACK if loopback else node_address()
    interface = "lo" if loopback else interface_of(here)
    found = {"DMLC_NODE_HOST": here}
    if interface:
        found.update(GLOO_SOCKET_IFNAME=interface, NCCL_SOCKET_IFNAME=interface,
                     DMLC_INTERFACE=interface)
    return here, found


def gpu_index(me: Member) -> int:
    """The GPU a process of a group takes: the ``local``-th of those it sees. SLURM may
    show each task of a step only its own GPU (CUDA_VISIBLE_DEVICES of one): then that
    one."""
    visible = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g]
    return me.local % len(visible) if visible else me.local


def gpu_memory_share(fitting: list[int]) -> float:
    """The share of a GPU's memory each process of a group may take: every count's group
    stays alive while the groups are timed in turns, so GPU 0 holds a process of each
    (GPU i one of each group larger than i). Each gets an equal part, a tenth kept back
    for the CUDA contexts themselves. JAX would otherwise take 75% in every process."""
    return round(0.9 / len(fitting), 3)


def pin(rank: int) -> int | None:
    """On a CPU a device is one core: the process of (local) ``rank`` keeps only the
    rank-th of the cores it may use (Linux's affinity), so that a framework whose thread pools are
    sized by the machine (XLA's are, whatever its flags say) still computes on one core.
    Called first thing in a process, before the framework loads. Returns the core, or
    None where the system cannot pin."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    core = cores[rank % len(cores)]
    os.sched_setaffinity(0, {core})
    return core


def shard(images, labels, me: Member, batch_size: int, seed: int):
    """A process's batches of (numpy) ``images`` and ``labels``, epoch after epoch: every
    ``world``-th example of an order drawn from (seed, epoch), the same order in every
    process (a ``DistributedSampler``'s), whole batches only."""
    import numpy as np

    mine = len(range(me.rank, len(labels), me.world))
    if mine < batch_size:
        raise ValueError(f"process {me.rank}'s share of the data, {mine} images, holds no "
                         f"whole batch of {batch_size}")
    epoch = 0
    while True:
        order = np.random.default_rng([seed, epoch]).permutation(len(labels))[me.rank::me.world]
        for start in range(0, len(order) - batch_size + 1, batch_size):
            chosen = order[start:start + batch_size]
            yield images[chosen], labels[chosen]
        epoch += 1


def serve(conn, train: Callable[[int], float]) -> None:
    """A process's side, once it is ready: say so, then ``train(steps)`` (which returns
    the mean training loss of those steps, after its device has finished them) each time
    the coordinator asks, until it says stop."""
    conn.send(("ready", None))
    while True:
        command, steps = conn.recv()
        if command == "stop":
            return
        conn.send(("done", train(steps)))


def begin(target: Callable[..., None], rank: int, world: int, local: int, host: str,
          job: tuple, conn) -> None:
    """A process of a group, from its start (spawned here, or a task srun started): rank 0
    holds a port for the group's rendezvous on ``host`` (``hold_port``) and offers it; every
    process waits for the address its coordinator hands out (rank 0's), then runs the
    section's ``target``."""
    held = hold_port(host) if rank == 0 else None
    conn.send(("offer", f"{host}:{held.getsockname()[1]}" if held else None))
    address = conn.recv()
    target(Member(rank, world, local, address, held), *job, conn)


def spawn(target: Callable[..., None], n: int, job: tuple) -> tuple[list, list, list]:
    """A group on this machine: ``n`` spawned processes, each with a pipe to the
    coordinator, their rendezvous on loopback. Returns (connections, processes, the
    node of each rank: 0, 1, ... in the order the ranks found them; here all 0)."""
    context = multiprocessing.get_context("spawn")
    conns, processes = [], []
    for rank in range(n):
        mine, theirs = context.Pipe()
        process = context.Process(target=begin, daemon=True, name=f"rank{rank}",
                                  args=(target, rank, n, rank, LOOPBACK, job, theirs))
        process.start()
        theirs.close()  # a process that dies closes its end: recv then fails
        conns.append(mine)
        processes.append(process)
    return conns, processes, [0] * n


class Step:
    """An srun step, seen as each of its tasks' process (a task that fails ends the step:
    ``--kill-on-bad-exit``). Its tasks' own pids are on their nodes: ``pid`` is None."""

    pid = None

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.popen = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()

    def join(self, timeout: float) -> None:
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    def kill(self) -> None:
        self.popen.terminate()  # srun passes it on to every task and ends the step
        self.join(10)
        self.popen.kill()
        self.popen.wait()


class Coordinator:
    """Where the tasks of srun steps call in: a TCP listener on this node's address (the
    network the job's nodes share; never every interface), each caller checked against
    ``key`` in a thread of its own, so that no caller stops the others (a wrong key,
    rubbish, or silence): those that prove the key arrive on ``arrived``."""

    def __init__(self, key: bytes) -> None:
        self.key, self.arrived = key, queue.Queue()
        here = node_address()
        self.server = socket.create_server((here, 0))
        self.address = f"{here}:{self.server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                caller, _ = self.server.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._check, args=(caller,), daemon=True).start()

    def _check(self, caller: socket.socket) -> None:
        conn = Connection(caller.detach())
        try:
            deliver_challenge(conn, self.key)
            answer_challenge(conn, self.key)
        except (OSError, EOFError, AuthenticationError, ValueError):
            conn.close()
            return
        self.arrived.put(conn)

    def close(self) -> None:
        try:
            self.server.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not)
        except OSError:
            pass
        self.server.close()


def srun(per_node: int) -> Callable[..., tuple[list, list, list]]:
    """Groups as srun steps inside this SLURM job: a group of n processes spans
    ceil(n / per_node) nodes, one task per device. The steps overlap (every group is
    started before the first is timed; only one computes at a time), and each task pins
    itself (``--cpu-bind=none``: SLURM's binding would put every task of a step on the
    node's first core)."""

    def start(target: Callable[..., None], n: int, job: tuple) -> tuple[list, list, list]:
        key = os.urandom(32)
        coordinator = Coordinator(key)
        script = Path(sys.modules[target.__module__].__file__).resolve()
        nodes = math.ceil(n / per_node)
        command = ["srun", f"--nodes={nodes}", f"--ntasks={n}",
                   f"--ntasks-per-node={math.ceil(n / nodes)}", "--overlap",
                   "--cpu-bind=none", "--kill-on-bad-exit=1", "--label",
                   sys.executable, "-c", JOIN, str(script), target.__name__,
                   coordinator.address]
        step = Step(command, {**os.environ, KEY: key.hex()})
        hellos = {}

        def ended() -> RuntimeError:  # a task is gone before it said who it is
            step.join(ENDED_S)
            if step.is_alive():  # the others wait for it in vain
                step.kill()
            return RuntimeError(f"the srun step of {n} processes {ended_how(step)} before "
                                "all had started; its log is above")

        try:
            while len(hellos) < n:
                try:
                    conn = coordinator.arrived.get(timeout=POLL_S)
                except queue.Empty:
                    if not step.is_alive():
                        raise ended() from None
                    continue
                try:
                    rank, node = conn.recv()
                except EOFError:
                    raise ended() from None
                hellos[rank] = conn, node
        finally:
            coordinator.close()
        for conn, _ in hellos.values():
            conn.send(job)
        ranks = sorted(hellos)
        names = list(dict.fromkeys(hellos[r][1] for r in ranks))  # in the ranks' order
        return ([hellos[r][0] for r in ranks], [step] * n,
                [names.index(hellos[r][1]) for r in ranks])

    return start


def join(script: str, function: str, coordinator: str) -> None:
    """A task srun started: its rank, the group's size and its index on its node from
    SLURM's variables; it tells the coordinator who it is, is given the job, then begins
    as a spawned process does (rank 0 offering the rendezvous on its node's address)."""
    env = os.environ
    rank, world, local = (int(env[k]) for k in ("SLURM_PROCID", "SLURM_NTASKS",
                                                 "SLURM_LOCALID"))
    host, port = coordinator.rsplit(":", 1)
    conn = Client((host, int(port)), authkey=bytes.fromhex(env.pop(KEY)))
    conn.send((rank, env.get("SLURMD_NODENAME", socket.gethostname())))
    job = conn.recv()
    path = Path(script)
    section = path.parent.name  # scripts/sections/<section>/<section>_<framework>.py
    framework = path.stem.removeprefix(f"{section}_")
    target = getattr(sections.load_script(framework, section), function)
    begin(target, rank, world, local, node_address(), job, conn)


def ended_how(process: Any) -> str:
    """How a process of a group (or its srun step) ended, in words."""
    code = process.exitcode
    if isinstance(process, Step) and code is not None:
        killed = f" (a task killed by {signal_name(code - 128)})" if code > 128 else ""
        return f"ended with exit code {code}{killed}"
    return ended(code)


def ended(code: int | None) -> str:
    """How a process whose exit status is ``code`` (a negative one: the signal that killed
    it; None: none yet) ended, in words."""
    if code is None:
        return "is still running"
    if code < 0:
        return f"was killed by {signal_name(-code)}"
    if code == HELPER_DIED:
        return (f"ended with exit code {code} (a process it started for the group died; "
                "its log says which)")
    return f"ended with exit code {code}"


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def is_stopped(pid: int | None) -> bool:
    """Whether process ``pid`` is stopped (SIGSTOP, SIGTSTP, a debugger): Linux's /proc."""
    if pid is None:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")


class Group:
    """N processes training one model data-parallel, started once (``startup``: seconds
    until the last of them is ready), told to train a number of steps at a time
    (``run``), stopped at the end (``stop``; ``kill`` after a fault).
    ``target(member, on, model, options, conn)`` is a process's code; ``start`` places
    the processes (``spawn``: on this machine; ``srun``: on a SLURM job's nodes);
    ``nodes`` says on which node each rank ran (0, 1, ...)."""

    def __init__(self, target: Callable[..., None], n: int, on: str, model: str,
                 options: dict[str, Any], start: Callable[..., tuple] = spawn) -> None:
        self.n, self.losses = n, []
        self.peers: list[Group] = []  # the groups idle while this one trains: watched too
        self.slowest_step_s = 0.0
        self.stopped_since: dict[int, float] = {}
        started = time.perf_counter()
        self.conns, self.processes, self.nodes = start(target, n, (on, model, options))
        try:
            self.address = self.replies()[0]  # rank 0's offer, its port held (``begin``)
            self.send(self.address)
            self.replies()  # every process ready
        except BaseException:
            self.kill()
            raise
        self.startup = time.perf_counter() - started

    def who(self, rank: int) -> str:
        return f"process {rank} of {self.n}"

    def fault(self, first: int) -> RuntimeError:
        """The error that names what ended the group, ``first`` being the process whose
        end the coordinator saw first. Its peers get ``ENDED_S`` to end too (a collective
        that lost a process fails); one killed by a signal is the cause (its peers failed
        after it), else ``first``; the others that ended are said after it."""
        step = isinstance(self.processes[first], Step)
        deadline = time.monotonic() + (STEP_ENDS_S if step else ENDED_S)
        for process in dict.fromkeys(self.processes):
            process.join(timeout=max(0.0, deadline - time.monotonic()))
        if step:
            return RuntimeError(f"{self.who(first)} ended first, and its srun step "
                                f"{ended_how(self.processes[first])}; the step's log (each "
                                "line after its task's rank) is above")
        signalled = [r for r, p in enumerate(self.processes) if (p.exitcode or 0) < 0]
        cause = signalled[0] if signalled else first
        after = [f"{self.who(r)} {ended_how(p)}" for r, p in enumerate(self.processes)
                 if r != cause and not p.is_alive()]
        return RuntimeError(f"{self.who(cause)} {ended_how(self.processes[cause])}"
                            + (f" (then {'; '.join(after)})" if after else "")
                            + "; its log is above")

    def bound(self, steps: int) -> tuple[float, str]:
        """How long the group may be silent while it trains ``steps`` (0: its startup),
        and why that long."""
        if not steps or not self.slowest_step_s:
            return COLLECTIVE_TIMEOUT_S, (f"the {COLLECTIVE_TIMEOUT_S} s a group may take to "
                                          "start and compile its first step")
        limit = max(SILENCE_FLOOR_S, SILENCE_FACTOR * self.slowest_step_s * steps)
        return limit, (f"{SILENCE_FACTOR} × its slowest step, {self.slowest_step_s:.3g} s, "
                       f"times {steps} steps, at least {SILENCE_FLOOR_S:g} s")

    def watch(self, silent: list[int], waited: float, steps: int) -> None:
        """A look at the processes that have not replied yet: the first that has ended,
        been stopped for ``STOPPED_S``, or a silence past ``bound`` ends the group with an
        error naming them; else the group is alive, and says so to the manager's watch."""
        for rank in silent:
            if not self.processes[rank].is_alive():
                raise self.fault(rank)
        now = time.monotonic()
        for rank in silent:
            pid = self.processes[rank].pid
            if not is_stopped(pid):
                self.stopped_since.pop(rank, None)
                continue
            since = self.stopped_since.setdefault(rank, now)
            if now - since >= STOPPED_S:
                raise RuntimeError(
                    f"{self.who(rank)} (pid {pid}) is stopped (SIGSTOP, ^Z or a debugger "
                    f"holds it), for {now - since:.0f} s now: its group cannot go on")
        limit, why = self.bound(steps)
        if waited > limit:
            names = (self.who(silent[0]) if len(silent) == 1 else
                     f"processes {', '.join(map(str, silent))} of {self.n}")
            raise RuntimeError(f"{names} made no progress in {waited:.0f} s ({why}); the "
                               "group is ended")
        progress.beat()

    def replies(self, steps: int = 0) -> list:
        """Every process's reply, in rank order, after ``steps`` steps (0: its startup);
        never a wait without end (``watch``)."""
        waiting = dict(enumerate(self.conns))
        found: dict[int, Any] = {}
        begun = time.perf_counter()
        idle = {process.sentinel: (group, rank) for group in self.peers
                for rank, process in enumerate(group.processes) if hasattr(process, "sentinel")}
        while waiting:
            ready = wait([*waiting.values(), *idle], timeout=POLL_S)
            for sentinel in set(ready) & set(idle):  # a process of an idle group ended
                group, rank = idle[sentinel]
                raise group.fault(rank)
            for rank in [r for r, conn in waiting.items() if conn in ready]:
                try:
                    found[rank] = waiting.pop(rank).recv()[1]
                except EOFError:  # its end is closed: the process has ended
                    raise self.fault(rank) from None
            if waiting and not ready:
                self.watch(sorted(waiting), time.perf_counter() - begun, steps)
        if steps:
            self.slowest_step_s = max(self.slowest_step_s,
                                      (time.perf_counter() - begun) / steps)
        return [found[r] for r in range(self.n)]

    def send(self, message: Any) -> None:
        for rank, conn in enumerate(self.conns):
            try:
                conn.send(message)
            except OSError:  # its end is closed: the process is gone
                raise self.fault(rank) from None

    def run(self, steps: int) -> None:
        self.send(("run", steps))
        self.losses.append(self.replies(steps)[0])

    def stop(self) -> None:
        for conn in self.conns:
            try:
                conn.send(("stop", 0))
            except OSError:  # it has died already
                pass
        for process in dict.fromkeys(self.processes):  # an srun step once
            process.join(timeout=60)
            if process.is_alive():
                process.kill()

    def kill(self) -> None:
        """Every process of the group ended now (after a fault: stopped ones too)."""
        for process in dict.fromkeys(self.processes):
            if process.is_alive():
                process.kill()
            process.join(timeout=10)


def check(args: argparse.Namespace) -> list[int]:
    """The device counts asked for, in order; a usage error (exit 2) where the options
    disagree: a model without its images or learning rate, images that do not split into
    whole steps on every count (every count alike, so that machines compare), more nodes
    than the largest count has processes, a data limit that leaves a device less than
    one batch."""
    if not len(args.models) == len(args.images) == len(args.learning_rates):
        arguments.usage_error(
            "--models, --images and --learning-rates need one value per model; got "
            f"{len(args.models)}, {len(args.images)} and {len(args.learning_rates)} values")
    outside = sections.models_outside(args.models, args.cpu_models)
    if outside:
        arguments.usage_error(
            f"--cpu-models {' '.join(outside)}: not among the nets trained (--models "
            f"{' '.join(args.models)})")
    counts = sorted(set(args.device_counts))
    step = sections.images_step(args.batch_size, counts)
    for model, images in zip(args.models, args.images):
        if images % step:
            n = next(n for n in counts if images % (args.batch_size * n))
            arguments.usage_error(
                f"--images {images} for {model} does not split into whole steps of "
                f"{args.batch_size} images on each of {n} devices: take a multiple of {step}")
    if args.nodes > counts[-1]:
        arguments.usage_error(
            f"--nodes {args.nodes} needs a device count of at least {args.nodes} (one process "
            f"a node); the largest is {counts[-1]}")
    if args.train_limit and args.train_limit // counts[-1] < args.batch_size:
        arguments.usage_error(
            f"--train-limit {args.train_limit} leaves each of {counts[-1]} devices "
            f"{args.train_limit // counts[-1]} images, less than one batch of {args.batch_size}")
    return counts


# What a device is, by device kind, counted.
UNITS = {"gpu": "GPUs", "cpu": "cores (one process of one thread each)"}
# What links a group's processes, by device kind: ``design`` words it in the run record.
LINKS = {"gpu": "NCCL between GPUs", "cpu": "gloo between CPU processes of one thread"}


def placement(args: argparse.Namespace, largest: int, gpus: int) -> tuple[Callable, int, str]:
    """Where the groups run: (how they start, the most devices a group may have, what
    the limit is, in words). On one node: this machine's GPUs (``gpus``) or the timing
    job's ``--threads`` cores, the groups spawned here. With ``--nodes N`` inside a
    SLURM job: srun steps over the job's nodes, the largest count's processes spread
    evenly (as the job asked SLURM for them: a task per device, ``--nodes`` nodes).
    With ``--nodes N`` outside SLURM: this machine only, and the counts above it say why."""
    per_node = gpus if args.on == "gpu" else args.threads
    words = f"this machine has {per_node} {UNITS[args.on]}"
    if args.nodes == 1:
        return spawn, per_node, words
    if "SLURM_JOB_ID" not in os.environ:
        return spawn, per_node, (f"{words}; --nodes {args.nodes} spans nodes only inside a "
                                 "SLURM job (--workflow-profile profiles/slurm)")
    share = math.ceil(largest / args.nodes)
    return srun(share), args.nodes * share, (f"this SLURM job has {args.nodes} nodes of "
                                              f"{share} device{'s' if share > 1 else ''}")


def left_out(args: argparse.Namespace) -> list[str]:
    """The nets not trained here: on CPU cores, those ``--cpu-models`` leaves out."""
    if args.on != "cpu" or args.cpu_models is None:
        return []
    return [m for m in args.models if m not in args.cpu_models]


def measure(args: argparse.Namespace, rec: Any, target: Callable[..., None], *,
            gpus: int, names: Callable[[int], str], design: str) -> None:
    """The section's measurement, every framework alike: for each model, a group per
    device count that fits (on GPUs the ``gpus`` the framework sees, on a CPU the
    ``--threads`` cores of the timing job; the others not run, and the run record says
    why), each group's startup recorded apart and one untimed step
    (where a framework compiles its step, allocates its buffers and opens its links),
    then every group timed side by side (``timing.compare``: ``--warmup`` untimed
    samples, then ``--repeats`` rounds), each sample ``--images`` images."""
    counts = check(args)
    start, limit, kind = placement(args, counts[-1], gpus)
    fitting = [n for n in counts if n <= limit]
    left = left_out(args)
    trained = [m for m in args.models if m not in left]
    for n in counts:
        if n > limit:
            for model in trained:
                rec.notes.setdefault("runs_not_run", {})[training.case_name(model, n)] = {
                    "devices": n, "reason": f"needs {n} devices, {kind}",
                    **({"needs": NEEDS_GPUS} if args.on == "gpu" else {})}
            print(f"{n} devices: not run, {kind}", flush=True)
    if not fitting:
        plural = "s" if counts[0] > 1 else ""
        raise Skipped(f"needs {counts[0]} device{plural}, found {limit} {UNITS[args.on]}",
                      needs=NEEDS_GPUS if args.on == "gpu" else None)
    folder = data.found_or_exit(args.data_dir)
    rec.notes["design"] = design.format(links=LINKS[args.on])
    rec.notes["placement"] = kind
    share = gpu_memory_share(fitting) if args.on == "gpu" else None
    if share:
        rec.notes["gpu_memory_share"] = share
    for model in left:
        rec.notes.setdefault("runs_not_run", {})[model] = {"devices": None, "reason": (
            "left out on CPU cores (cpu_models): the preset trains it data-parallel on GPUs "
            "only")}
        print(f"{model} not run: left out on CPU cores (--cpu-models)", flush=True)
    for model, images, lr in zip(args.models, args.images, args.learning_rates):
        if model in left:
            continue
        options = {"seed": args.seed, "lr": lr, "batch_size": args.batch_size,
                   "folder": folder, "train_limit": args.train_limit,
                   "gpu_memory_share": share}
        groups: dict[str, Group] = {}
        try:
            for n in fitting:
                case = training.case_name(model, n)
                groups[case] = group = Group(target, n, args.on, model, options, start)
                rec.notes.setdefault("node_of_each_rank", {})[case] = group.nodes
                rec.samples(case, "startup", "s", [group.startup], devices=names(n))
                first = time.perf_counter()
                group.run(1)  # one untimed step: compiles, allocates, connects the links
                group.losses.clear()
                print(f"{case}: started in {group.startup:.1f} s, its first step (untimed) "
                      f"took {time.perf_counter() - first:.1f} s", flush=True)
            for group in groups.values():
                group.peers = [g for g in groups.values() if g is not group]
            cases = {case: (lambda g=g, s=images // (args.batch_size * g.n): g.run(s))
                     for case, g in groups.items()}
            samples = timing.compare(cases, lambda: None, warmup=args.warmup,
                                     rounds=args.repeats, seed=args.seed, process=args.process)
        except BaseException:  # a fault, or the worker stopped: no group outlives it
            for group in groups.values():
                group.kill()
            raise
        for group in groups.values():
            group.stop()
        for n in fitting:
            case = training.case_name(model, n)
            mine = [s for s in samples if s.case == case]
            rec.timings(mine, devices=names(n))
            rec.notes.setdefault("mean_training_loss", {})[case] = groups[case].losses
            best = images / min(s.value for s in mine)
            print(f"{case}: {best:.0f} images/s at best", flush=True)
        rec.notes.setdefault("images_per_sample", {})[model] = images
        rec.notes.setdefault("learning_rate_per_device_count", {})[model] = {
            str(n): lr * n for n in fitting}
