"""The DNC's temporal link alone, against the cost of one pass over its ``[B, N, N]`` array.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: 24 s at the defaults (measured);
there is no ``--quick``: ``--slots``, ``--batch`` and ``--steps`` shorten it.

Run: ``python -m benchmarks.speed.dnc_link [--slots 256] [--batch 32] [--steps 50] [--profile]``.
Writes ``benchmarks/results/<device>/dnc_link_n<N>.json``.

The link (``dnc.link_and_directions``: ``L_t``, then ``b_t = L_t^T w^r`` and
``f_t = L_t w^r`` for ``R = 4`` read heads) is the only ``O(N^2)`` part of a DNC
step, and at ``N = 256`` most of the speed suite's DNC row. This times it on its
own, scanned over ``T`` steps of write and read weights (softmax rows computed in
each step from random logits; batch ``B``, one write head), in the forms below,
next to two passes that any step over ``L`` must make at least once, compiled by
XLA the same way:

* ``read pass``: each step reads its ``[B, N, N]`` slab of a ``[T, B, N, N]``
  stack once (a sum): what reading the backward pass's stored ``L_{t-1}`` costs
  at least, from DRAM (the stack is far larger than the caches);
* ``read+write pass``: each step reads the carried ``[B, N, N]`` array and writes
  it scaled, in place: 8 MiB at ``B = 32, N = 256``, which stays in this CPU's
  L3 cache (the speed at which every other sweep over ``L`` could run);
* ``link update alone``: ``L_t = dnc.link(L_{t-1}, p_{t-1}, w_t)`` carried in
  place, the same read-and-write sweep with the equation's two broadcast vectors;
* ``forward (XLA)``: the link and the directional weights, no gradient;
* ``forward+VJP (XLA, hand-written VJP)``: value and gradient through the library's
  hand-written VJP (``panm_jax/kernels/_dnc_vjp.py``); the scan keeps one
  ``L_{t-1}`` per step for the backward pass;
* ``forward+VJP (XLA, autodiff)``: the same function differentiated by JAX through
  ``dnc.link`` and ``dnc.directional_weights``;
* ``forward (CPU kernel)``, ``forward+VJP (CPU kernel)``: the same equations and
  VJP as one compiled C++ kernel (``panm_jax/kernels/_dnc_link_cpu.py``, which
  ``dnc.step`` uses when opted in with ``PANM_JAX_DNC_LINK=cpu``), called here
  directly, where it can be built.

``passes`` = a row's time / the read+write pass's time: how many
read-and-write sweeps of ``L`` the row costs. ``GB_s`` = ``B N^2 4`` bytes times
the sweeps one pass of the row makes (1 read, or 1 read + 1 write) / its time,
for the two pass rows. ``--profile`` adds the library row's top XLA
instructions (``benchmarks.speed.profile``).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import common
from benchmarks.speed import profile as profile_lib
from panm_jax.kernels import _dnc_link_cpu, dnc

NUM_READS = 4


def _inputs(batch: int, slots: int, steps: int, seed: int = 0):
    rng = np.random.default_rng(seed)

    def logits(shape):  # turned into weightings inside the step (_weights), as a DNC step computes them
        return jnp.asarray(3.0 * rng.normal(size=shape), jnp.float32)

    write = logits((steps, batch, slots))
    read = logits((steps, batch, NUM_READS, slots))
    probe = jnp.asarray(rng.normal(size=(steps, batch, NUM_READS, slots)), jnp.float32)
    return write, read, probe


def _weights(logits):
    """A weighting (softmax rows scaled to 0.9) computed in the step from the scanned logits.

    Computed inside the step, not scanned in ready-made: XLA compiles an update that
    broadcasts one scanned slice along both axes of ``L`` several times slower than
    the same update of a value the step computed, which is what a DNC step does.
    """
    return 0.9 * jax.nn.softmax(logits, axis=-1)


def _autodiff_link(prev_link, prev_precedence, weights, prev_read_weights):
    new_link = dnc.link(prev_link, prev_precedence, weights)
    backward, forward = dnc.directional_weights(new_link, prev_read_weights)
    return dnc.LinkAndDirections(link=new_link, backward=backward, forward=forward)


def _loss_fn(link_fn, batch: int, slots: int):
    fn = jax.vmap(link_fn)

    def loss(write, read, probe):
        def body(carry, x):
            link, precedence = carry
            w, v, c = _weights(x[0]), _weights(x[1]), x[2]
            out = fn(link, precedence, w, v)
            precedence = (1.0 - w.sum(-1, keepdims=True)) * precedence + w
            return (out.link, precedence), jnp.sum(out.forward * c) + jnp.sum(out.backward * c * c)

        init = (jnp.zeros((batch, slots, slots)), jnp.zeros((batch, slots)))
        (link, _), ys = jax.lax.scan(body, init, (write, read, probe))
        return ys.sum() + jnp.sum(link * link)

    return loss


def _read_pass(slabs):
    return jax.lax.scan(lambda c, x: (c + jnp.sum(x), None), 0.0, slabs)[0]


def _read_write_pass(carry, steps: int):
    return jax.lax.scan(lambda c, _: (c * 1.0001, None), carry, None, length=steps)[0]


def _link_update_pass(write, batch: int, slots: int):
    def body(carry, logits):
        link, precedence = carry
        w = _weights(logits)
        link = jax.vmap(dnc.link)(link, precedence, w)
        return (link, (1.0 - w.sum(-1, keepdims=True)) * precedence + w), None

    init = (jnp.zeros((batch, slots, slots)), jnp.zeros((batch, slots)))
    return jnp.sum(jax.lax.scan(body, init, write)[0][0])


def measure(batch: int, slots: int, steps: int, repeats: int, with_profile: bool, top: int) -> tuple[list, list]:
    write, read, probe = _inputs(batch, slots, steps)
    slab_bytes = batch * slots * slots * 4
    rows = []

    def add(form, fn, *args, sweeps=None):
        t = common.time_compiled(fn, *args, warmup=1, repeats=repeats)
        row = {"form": form, "ms_per_call": 1e3 * t["median_s"], "ms_per_step": 1e3 * t["median_s"] / steps}
        if sweeps is not None:
            row["GB_s"] = sweeps * slab_bytes * steps / t["median_s"] / 1e9
        rows.append(row)
        return t["median_s"]

    slabs = jnp.asarray(np.random.default_rng(1).random((steps, batch, slots, slots), np.float32))
    add("read pass (a [T, B, N, N] stack, from DRAM)", _read_pass, slabs, sweeps=1)
    del slabs
    one_pass = add(
        "read+write pass (one carried [B, N, N], in cache)",
        lambda c: _read_write_pass(c, steps),
        jnp.ones((batch, slots, slots)),
        sweeps=2,
    )
    add("link update alone", lambda w: _link_update_pass(w, batch, slots), write, sweeps=2)
    library = _loss_fn(dnc.link_and_directions, batch, slots)
    add("forward (XLA)", library, write, read, probe)
    grad_library = jax.value_and_grad(library, argnums=(0, 1))
    add("forward+VJP (XLA, hand-written VJP)", grad_library, write, read, probe)
    autodiff = jax.value_and_grad(_loss_fn(_autodiff_link, batch, slots), argnums=(0, 1))
    add("forward+VJP (XLA, autodiff)", autodiff, write, read, probe)
    if _dnc_link_cpu.available():
        kernel = _loss_fn(_dnc_link_cpu.link_and_directions, batch, slots)
        add("forward (CPU kernel)", kernel, write, read, probe)
        add("forward+VJP (CPU kernel)", jax.value_and_grad(kernel, argnums=(0, 1)), write, read, probe)
    for row in rows:
        row["passes"] = row["ms_per_call"] / (1e3 * one_pass)
    ops = []
    if with_profile:
        res = profile_lib.profile(grad_library, (write, read, probe), 3, Path(tempfile.mkdtemp(prefix="dnc-link-")))
        meta = res["meta"]
        for name, ms in sorted(res["instructions"].items(), key=lambda kv: -kv[1])[:top]:
            op = meta[name]["op_name"].rsplit("/", 2)
            ops.append(
                {
                    "instruction": name,
                    "opcode": meta[name]["opcode"],
                    "jax_op": "/".join(op[-2:]),
                    "ms_per_call": round(ms, 2),
                    "passes": round(ms / (1e3 * one_pass), 2),
                }
            )
    return rows, ops


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--slots", type=int, default=256, help="N (default 256)")
    p.add_argument("--batch", type=int, default=32, help="B (default 32, the speed suite's)")
    p.add_argument("--steps", type=int, default=50, help="T (default 50, the speed suite's)")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--profile", action="store_true", help="also list the library row's top XLA instructions")
    p.add_argument("--top", type=int, default=12)
    args = p.parse_args(argv)
    for name in ("slots", "batch", "steps", "repeats", "top"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name}: expected a positive integer, got {getattr(args, name)}")
    rows, ops = measure(args.batch, args.slots, args.steps, args.repeats, args.profile, args.top)
    for row in rows + ops:
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    command = common.portable_command(argv, "benchmarks.speed.dnc_link")
    notes = (
        f"B = {args.batch}, N = {args.slots}, R = {NUM_READS}, one write head, T = {args.steps} steps per call; "
        f"median of {args.repeats} calls. passes = ms_per_call / the read+write pass's ms_per_call. "
        "GB_s (pass rows only) = bytes the pass must move / its time."
    )
    if ops:
        notes += (
            "\n\nTop XLA instructions of the forward+VJP (XLA, hand-written VJP) row "
            "(benchmarks.speed.profile, 3 traced calls):\n\n"
            + common.markdown_table(ops, ["instruction", "opcode", "jax_op", "ms_per_call", "passes"])
        )
    path = common.write_results(
        f"dnc_link_n{args.slots}",
        f"The DNC's link alone against one pass over L (N = {args.slots})",
        rows,
        ["form", "ms_per_call", "ms_per_step", "passes", "GB_s"],
        common.environment(),
        notes,
        command=command,
    )
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
