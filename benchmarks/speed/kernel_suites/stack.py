"""Neural Stack step: the vectorised kernel against a slot-by-slot loop.

Rolls ``panm_jax.kernels.stack.step`` out with the library's ``scan``
wrapper over ``T = C`` steps (every step pushes a row, so the Stack fills up
exactly), ``W = 32``, vmapped over ``B = 32`` examples, for
``C in {64, 256, 1024}``. The baseline, written here and not in the library,
is the paper's prose transcribed literally (Grefenstette et al. 2015, §3.1): the
pop and the read each traverse the strength vector one slot at a time, from the
highest written index down, in a ``lax.fori_loop`` whose trip count is the number
of rows written so far (the paper's ``t``, not ``C``, which favours the loop).
Both are jitted; compilation and steady state are timed apart
(``benchmarks.common.time_compiled``), and the ratio loop / vectorised is taken
from the same run. ``max_abs_diff`` checks the two agree on the reads.

Run: ``python -m benchmarks.speed.kernels --suite stack [--quick]``; ``--quick`` times
only ``C = 64`` with fewer repeats and writes no result file (a smoke run, not
for the record).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.common import environment, markdown_table, portable_command, time_compiled, write_results
from panm_jax.kernels import stack as stack_kernel
from panm_jax.kernels.scan import scan

WIDTH = 32
BATCH = 32
CAPACITIES = (64, 256, 1024)
QUICK_CAPACITIES = (64,)

COLUMNS = (
    "C",
    "T",
    "W",
    "B",
    "vec_compile_s",
    "vec_median_s",
    "vec_us_per_step",
    "loop_compile_s",
    "loop_median_s",
    "loop_us_per_step",
    "loop_over_vec",
    "max_abs_diff",
)


def loop_stack_step(
    state: stack_kernel.StackState, controls: stack_kernel.StackControls
) -> tuple[stack_kernel.StackState, jax.Array]:
    """The §3.1 prose, one slot at a time (the benchmark's baseline, not library code).

    Pop: a deletion quantity ``u_t`` traverses ``s_{t-1}`` from the highest index
    down, zeroing smaller strengths and reducing the first larger one. Push:
    ``v_t`` and ``d_t`` are appended. Read: a read quantity of 1 traverses ``s_t``
    from the top down, each slot contributing ``min(s[i], remaining)`` of its row.
    """
    values, strengths, size, overflow = state
    pop, push, value = controls.pop, controls.push, controls.value

    def pop_slot(k, carry):
        s, remaining = carry
        i = size - 1 - k  # highest written index first
        s_i = s[i]
        smaller = s_i < remaining
        s = s.at[i].set(jnp.where(smaller, 0.0, s_i - remaining))
        return s, jnp.where(smaller, remaining - s_i, 0.0)

    strengths, _ = jax.lax.fori_loop(0, size, pop_slot, (strengths, pop))
    full = size >= values.shape[0]
    row = jnp.where(full, values.shape[0], size)  # out of range -> dropped below
    values = values.at[row].set(value, mode="drop")
    strengths = strengths.at[row].set(push, mode="drop")
    size = jnp.where(full, size, size + 1)

    def read_slot(k, carry):
        read, remaining = carry
        i = size - 1 - k
        s_i = strengths[i]
        weight = jnp.where(s_i < remaining, s_i, remaining)
        return read + weight * values[i], remaining - weight

    read, _ = jax.lax.fori_loop(0, size, read_slot, (jnp.zeros_like(value), jnp.ones_like(pop)))
    return stack_kernel.StackState(values, strengths, size, overflow | full), read


def _rollout_fn(step, capacity: int):
    def one(controls):
        return scan(step, stack_kernel.init_state(capacity, WIDTH), controls)

    return jax.vmap(one)


def _controls(capacity: int, seed: int = 0) -> stack_kernel.StackControls:
    rng = np.random.default_rng(seed)
    shape = (BATCH, capacity)
    return stack_kernel.StackControls(
        push=jnp.asarray(rng.uniform(size=shape), jnp.float32),
        pop=jnp.asarray(rng.uniform(size=shape) * 0.5, jnp.float32),  # pops a little less than pushed
        value=jnp.asarray(np.tanh(rng.normal(size=shape + (WIDTH,))), jnp.float32),
    )


def run(quick: bool = False) -> list[dict]:
    """Time both versions for each capacity and print the table; unless ``quick``, write the results."""
    capacities = QUICK_CAPACITIES if quick else CAPACITIES
    vec_repeats = 3 if quick else 20
    rows = []
    for capacity in capacities:
        controls = _controls(capacity)
        vec_fn = _rollout_fn(stack_kernel.step, capacity)
        loop_fn = _rollout_fn(loop_stack_step, capacity)
        loop_repeats = 2 if quick else (3 if capacity >= 1024 else 5)
        vec = time_compiled(vec_fn, controls, warmup=1 if quick else 2, repeats=vec_repeats)
        loop = time_compiled(loop_fn, controls, warmup=1, repeats=loop_repeats)
        (_, vec_reads), (_, loop_reads) = jax.jit(vec_fn)(controls), jax.jit(loop_fn)(controls)
        rows.append(
            {
                "C": capacity,
                "T": capacity,
                "W": WIDTH,
                "B": BATCH,
                "vec_compile_s": vec["compile_s"],
                "vec_median_s": vec["median_s"],
                "vec_us_per_step": vec["median_s"] / capacity * 1e6,
                "loop_compile_s": loop["compile_s"],
                "loop_median_s": loop["median_s"],
                "loop_us_per_step": loop["median_s"] / capacity * 1e6,
                "loop_over_vec": loop["median_s"] / vec["median_s"],
                "max_abs_diff": float(jnp.max(jnp.abs(vec_reads - loop_reads))),
            }
        )
        print(f"[stack] C = T = {capacity}: loop / vectorised = {rows[-1]['loop_over_vec']:.3g}", flush=True)
    print(markdown_table(rows, COLUMNS))
    if quick:  # a smoke run is never recorded (as the NTM suite): no result file to mistake for a measurement
        return rows
    notes = (
        "Forward rollout of T = C steps of the neural Stack (one scan, vmapped over B), float32. "
        "vec: panm_jax.kernels.stack.step (pop and read as reverse cumulative sums over the C slots). "
        "loop: the paper's §3.1 prose, a lax.fori_loop over the t rows written so far, for the pop and the read. "
        "Times are medians of steady-state calls after compilation; loop_over_vec = loop_median_s / vec_median_s, "
        "measured in the same run; max_abs_diff compares the two versions' reads."
    )
    path = write_results(
        name="kernels_stack",
        title="Neural Stack step: vectorised (cumulative sums) vs slot loop",
        rows=rows,
        columns=COLUMNS,
        env=environment(),
        notes=notes,
        command=portable_command(["--suite", "stack"], "benchmarks.speed.kernels"),
    )
    print("wrote", path)
    return rows
