"""Data-parallel training at every device count, in JAX (jax.distributed, one process per device).

The JAX twin of data_parallel_pytorch.py: the same LeNet and ResNet-18 (the two
JAX multi-device sections' own), trained on 1, 2, 4, ... devices the way JAX spans
processes today: every process calls ``jax.distributed.initialize`` with the group's
coordinator on this host and sees one device of its own among the group's global devices;
one jitted step takes the global batch sharded along the devices (each process hands in
its own shard, ``jax.make_array_from_process_local_data``) and the parameters
replicated, and XLA sums the gradients across the processes (gloo between CPU processes,
NCCL between GPUs). A process's shard of the data is every N-th image of an order drawn
anew each epoch from the same seed in every process (a ``DistributedSampler``'s).

A device is a GPU, or on a CPU a process of one XLA thread with one host device (the
documents' ``cpu(0)``, ``cpu(1)`` as processes; the other JAX sections split one process
into two host devices instead). Each device takes ``--batch-size`` images a step and the
learning rate grows with the devices, as in the PyTorch twin; the timing (a group per
device count started once, its startup recorded apart, then fixed images per sample,
side by side) is the same code (``d2lperf.groups``). The warm-up round compiles each
group's step.
"""

from __future__ import annotations

import argparse
import os
import sys

from d2lperf import groups, harness, sections
from d2lperf import jax as d2l
from d2lperf.results import Recorder


def make_model(model: str, key):
    """(parameters, state, loss of a batch): the from-scratch LeNet's list of parameters
    (no state), or the concise section's Flax ResNet-18 with its BatchNorm statistics.
    ``loss(params, state, X, y)`` gives the batch's mean loss and the new state."""
    import jax.numpy as jnp
    import optax

    if model == "lenet":
        scratch = sections.model_script("jax", "lenet")

        def lenet_loss(params, state, X, y):
            return scratch.loss(scratch.lenet(X, params), y).mean(), state

        return scratch.init_params(key), {}, lenet_loss
    concise = sections.model_script("jax", "resnet18")
    net = concise.resnet18(10)
    variables = net.init(key, jnp.zeros((1, 1, 28, 28)))

    def resnet_loss(params, state, X, y):
        logits, moved = net.apply({"params": params, "batch_stats": state}, X, train=True,
                                  mutable=["batch_stats"])
        return (optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(),
                moved["batch_stats"])

    return variables["params"], variables["batch_stats"], resnet_loss


def gloo_on(address: str, interface: str | None) -> None:
    """The CPU devices' collectives: gloo, listening on ``address`` (its interface) alone.
    JAX's own choice (``jax_cpu_collectives_implementation``) takes the address of this
    host's name, whatever it is; so the CPU backend is made here, before any is, with the
    gloo transport told where to listen (the backend factory JAX registers for "cpu",
    given its ``collectives`` argument)."""
    import functools

    from jax._src import distributed, xla_bridge
    from jax._src.lib import _jax

    collectives = _jax.make_gloo_tcp_collectives(
        distributed_client=distributed.global_state.client, hostname=address,
        interface=interface)
    xla_bridge.register_backend_factory(
        "cpu", functools.partial(xla_bridge.make_cpu_client, collectives=collectives),
        priority=0, fail_quietly=False)


def rank_main(me: groups.Member, on: str, model: str, options: dict, conn) -> None:
    """One process of a group: one device, the group's coordinator, a replica and its
    share of the data; then it trains the steps the coordinator asks for."""
    rank, world = me.rank, me.world
    if on == "cpu":  # one host device of one thread on one core (of its node), before jax loads
        groups.pin(me.local)
        os.environ.update(d2l.thread_environment(1, host_devices=1))
    else:  # every count's group shares GPU 0: each process an equal part of its memory
        os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] = str(options["gpu_memory_share"])
    here, collectives = groups.binding(me)  # NCCL on loopback (one node)
    os.environ.update(collectives)
    import jax
    import numpy as np
    import optax
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    port = me.address.rsplit(":", 1)[1]
    jax.distributed.initialize(me.address, num_processes=world, process_id=rank,
                               local_device_ids=[groups.gpu_index(me)] if on == "gpu"
                               else None,
                               initialization_timeout=groups.COLLECTIVE_TIMEOUT_S,
                               # not [::]; beside rank 0's hold on the port (gRPC
                               # sets SO_REUSEADDR: groups.hold_port)
                               coordinator_bind_address=f"{here}:{port}")
    if on == "cpu":
        gloo_on(here, collectives.get("GLOO_SOCKET_IFNAME"))
    grid = Mesh(np.array(jax.devices()), ("devices",))
    split, replicated = NamedSharding(grid, P("devices")), NamedSharding(grid, P())

    def everywhere(tree):  # the same values in every process: replicated
        return jax.tree.map(lambda x: jax.make_array_from_process_local_data(
            replicated, np.asarray(x)), tree)

    params, state, loss = make_model(model, d2l.seed(options["seed"]))
    optimizer = optax.sgd(options["lr"] * world)
    params, state, opt_state = everywhere((params, state, optimizer.init(params)))

    def step(params, state, opt_state, X, y):
        (value, state), grads = jax.value_and_grad(loss, has_aux=True)(params, state, X, y)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), state, opt_state, value

    step = jax.jit(step, in_shardings=(replicated, replicated, replicated, split, split),
                   out_shardings=(replicated, replicated, replicated, replicated))
    dataset = d2l.fashion_mnist(options["folder"], True, options["train_limit"])
    batches = groups.shard(dataset.images, dataset.labels, me, options["batch_size"],
                           options["seed"])

    def train(steps: int) -> float:
        nonlocal params, state, opt_state
        values = []
        for _ in range(steps):
            X, y = (jax.make_array_from_process_local_data(split, a) for a in next(batches))
            params, state, opt_state, value = step(params, state, opt_state, X, y)
            values.append(value)
        d2l.sync(params, state, opt_state, values)
        total = sum(float(np.asarray(v.addressable_data(0))) for v in values)
        return total / steps

    groups.serve(conn, train)
    jax.distributed.shutdown()


def body(args: argparse.Namespace, rec: Recorder) -> None:
    platform = "cuda" if args.on == "gpu" else "cpu"
    groups.measure(
        args, rec, rank_main, gpus=d2l.gpu_count(),  # jax loaded here: its build recorded
        names=lambda n: ",".join(f"{platform}:{i}" for i in range(n)),
        design="jax.distributed, one process per device ({links}); one jitted step over "
               "the global batch sharded along the devices, every N-th image each")


def build_parser() -> argparse.ArgumentParser:
    return groups.parser(__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(harness.main("data_parallel", "jax", build_parser(), body))
