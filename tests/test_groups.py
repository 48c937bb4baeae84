"""The data-parallel coordinator's own faults, in-process, with groups of processes that
train nothing (group_stand_in): which process is named when one dies, stops or goes
silent, how soon, and that nothing is left running; the SLURM coordinator's listener,
which no bad connection can stop. No framework is loaded."""

import contextlib
import errno
import os
import signal
import socket
import threading
import time
from multiprocessing.connection import AuthenticationError, Client

import pytest
from group_stand_in import rank_main

from d2lperf import groups


@contextlib.contextmanager
def started(n: int = 2, **options):
    """A group of ``n`` stand-in ranks, killed however the test ends."""
    group = groups.Group(rank_main, n, "cpu", "lenet", options)
    try:
        yield group
    finally:
        group.kill()


def gone(group: groups.Group) -> bool:
    return not any(p.is_alive() for p in group.processes)


@pytest.mark.slow  # over half a second on 2 cores
def test_a_rank_killed_is_named_with_its_signal_not_the_peer_that_failed_after_it():
    """Rank 1 killed (as the OOM killer would), then rank 0 fails the way a rank whose
    collective lost its peer does: the coordinator names rank 1 and its signal."""
    with started(fail_at=99) as group:
        os.kill(group.processes[1].pid, signal.SIGKILL)
        group.processes[1].join(10)
        with pytest.raises(RuntimeError) as error:
            group.run(99)
    message = str(error.value)
    assert message.startswith("process 1 of 2 was killed by SIGKILL"), message
    assert "process 0 of 2 ended with exit code 1" in message, message
    assert gone(group)


@pytest.mark.slow  # over half a second on 2 cores
def test_a_rank_that_exits_is_named_with_its_exit_code():
    with started(fail_at=99) as group, pytest.raises(
            RuntimeError, match=r"^process [01] of 2 ended with exit code 1"):
        group.run(99)


@pytest.mark.slow  # over a second on 2 cores
def test_a_stopped_rank_is_named_within_seconds(monkeypatch):
    """SIGSTOP to a rank (a debugger, a ^Z): the coordinator names it as stopped, by its
    pid, long before any limit of the section's, and the group is killed."""
    monkeypatch.setattr(groups, "STOPPED_S", 2.0)
    with started(step_s=0.01) as group:
        group.run(1)
        os.kill(group.processes[1].pid, signal.SIGSTOP)
        begun = time.monotonic()
        with pytest.raises(RuntimeError) as error:
            group.run(1)
        waited = time.monotonic() - begun
    pid = group.processes[1].pid
    assert str(error.value).startswith(f"process 1 of 2 (pid {pid}) is stopped"), error.value
    assert waited < groups.STOPPED_S + 5 * groups.POLL_S
    for process in group.processes:
        process.join(10)
    assert gone(group)


@pytest.mark.slow  # over a second on 2 cores
def test_a_group_silent_far_beyond_its_slowest_step_is_named(monkeypatch):
    """No reply in many times the slowest step seen (times the steps asked): the silent
    processes are named with the bound they passed, and the group is killed."""
    monkeypatch.setattr(groups, "SILENCE_FLOOR_S", 1.0)
    with started(step_s=0.05) as group:
        group.run(1)
        os.kill(group.processes[0].pid, signal.SIGSTOP)  # rank 1 waits for nothing
        monkeypatch.setattr(groups, "STOPPED_S", 1e9)  # the stopped check aside: silence
        with pytest.raises(RuntimeError) as error:
            group.run(2)
    message = str(error.value)
    assert message.startswith("process 0 of 2 made no progress in"), message
    assert "10 × its slowest step" in message


def test_the_slurm_coordinator_listens_on_the_nodes_address_and_survives_bad_callers():
    """The coordinator of srun steps listens on the address this node's name resolves to
    (never every interface), and a caller with a wrong key, one that sends rubbish and
    one that says nothing leave it accepting: the task with the key still joins."""
    key = os.urandom(32)
    coordinator = groups.Coordinator(key)
    try:
        host, port = coordinator.address.rsplit(":", 1)
        assert host == groups.node_address() != "0.0.0.0"
        with pytest.raises(AuthenticationError):
            Client((host, int(port)), authkey=b"wrong")
        with socket.create_connection((host, int(port))) as rubbish:
            rubbish.sendall(b"\x00\xff" * 64)
        silent = socket.create_connection((host, int(port)))
        good = threading.Thread(
            target=lambda: Client((host, int(port)), authkey=key).send("hello"), daemon=True)
        good.start()
        conn = coordinator.arrived.get(timeout=30)
        assert conn.recv() == "hello"
        silent.close()
    finally:
        coordinator.close()


@pytest.mark.slow  # over half a second on 2 cores
def test_the_rendezvous_port_is_held_from_before_any_process_is_told_it():
    """No window between choosing the rendezvous port and the framework's bind: by the
    time the coordinator hands the address to the group, rank 0 holds the port, so a
    neighbour's bind to it fails; the framework's own listener (SO_REUSEADDR, as
    PyTorch's TCPStore, gRPC and ZeroMQ set) still binds and listens there."""
    with started() as group:
        host, port = group.address.rsplit(":", 1)
        assert host == groups.LOOPBACK
        with socket.socket() as neighbour, pytest.raises(OSError) as taken:
            neighbour.bind((host, int(port)))
        assert taken.value.errno == errno.EADDRINUSE
        with socket.socket() as framework:
            framework.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            framework.bind((host, int(port)))
            framework.listen()
        group.run(1)


def test_a_group_on_one_node_keeps_its_collectives_on_loopback():
    assert groups.binding(groups.Member(0, 2, 0, "127.0.0.1:1234")) == (
        "127.0.0.1", {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo",
                      "DMLC_INTERFACE": "lo", "DMLC_NODE_HOST": "127.0.0.1"})


@pytest.mark.slow  # over a second on 2 cores
def test_a_rank_of_an_idle_group_that_dies_is_named_while_another_group_trains():
    """Groups are timed in turns: one killed while another trains is named at once, not
    when its own turn comes."""
    with started(1, step_s=0.2) as busy, started(2) as idle:
        busy.peers = [idle]
        os.kill(idle.processes[1].pid, signal.SIGKILL)
        begun = time.monotonic()
        with pytest.raises(RuntimeError, match="^process 1 of 2 was killed by SIGKILL"):
            busy.run(1000)  # 200 s of steps
        assert time.monotonic() - begun < 60


def test_on_gpus_every_groups_processes_fit_gpu_0_together():
    """Every count's group stays alive while they are timed in turns, so GPU 0 holds a
    process of each: each may take an equal share, a tenth kept for CUDA's contexts."""
    assert groups.gpu_memory_share([1, 2, 4, 8]) == 0.225
    assert groups.gpu_memory_share([1]) == 0.9
    for fitting in ([1], [1, 2], [1, 2, 4], [1, 2, 4, 8], [2, 4, 8, 16, 32]):
        assert groups.gpu_memory_share(fitting) * len(fitting) <= 0.9
