"""Tests of panm_jax/kernels/scan.py: the recurrence wrapper against lax.scan."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.kernels.scan import scan, select

T, D, B = 6, 3, 4


def rnn_step(params, carry, x):
    """A small nonlinear recurrence: h' = tanh(A h + U x); out = (h', sum h')."""
    a, u = params
    h = jnp.tanh(a @ carry["h"] + u @ x)
    return {"h": h, "n": carry["n"] + 1}, (h, jnp.sum(h))


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    params = (
        jnp.asarray(rng.normal(size=(D, D)) * 0.5, jnp.float32),
        jnp.asarray(rng.normal(size=(D, 2)), jnp.float32),
    )
    carry = {"h": jnp.asarray(rng.normal(size=(D,)), jnp.float32), "n": jnp.zeros((), jnp.int32)}
    xs = jnp.asarray(rng.normal(size=(T, 2)), jnp.float32)
    return params, carry, xs


def test_equals_lax_scan_values_and_gradients(problem):
    params, carry, xs = problem
    step = lambda c, x: rnn_step(params, c, x)  # noqa: E731
    got = scan(step, carry, xs)
    want = jax.lax.scan(step, carry, xs)
    chex.assert_trees_all_close(got, want, rtol=1e-6)  # same tree structure, every leaf close

    def loss(params, wrapper, **kw):
        final, (hs, sums) = wrapper(lambda c, x: rnn_step(params, c, x), carry, xs, **kw)
        return jnp.sum(final["h"] ** 2) + jnp.sum(sums)

    g_want = jax.grad(loss)(params, jax.lax.scan)
    # remat_chunk: 2 divides T = 6; 4 leaves a rest of 2 steps, run after the chunk.
    for kw in ({}, {"remat": True}, {"unroll": 3}, {"remat_chunk": 2}, {"remat_chunk": 4}):
        g_got = jax.grad(loss)(params, scan, **kw)
        chex.assert_trees_all_close(g_got, g_want, rtol=1e-5)


def test_masked_steps_carry_state_and_zero_outputs(problem):
    params, carry, xs = problem
    step = lambda c, x: rnn_step(params, c, x)  # noqa: E731
    mask = jnp.array([1, 1, 0, 1, 0, 0])
    final, (hs, sums) = scan(step, carry, xs, mask)
    # Running only the unmasked steps with plain lax.scan gives the same final state:
    # a masked step is the identity on the carry.
    kept = xs[np.asarray(mask).astype(bool)]
    want_final, (want_hs, _) = jax.lax.scan(step, carry, kept)
    np.testing.assert_allclose(np.asarray(final["h"]), np.asarray(want_final["h"]), rtol=1e-6)
    assert int(final["n"]) == 3  # the step counter advanced only on the 3 real steps
    np.testing.assert_array_equal(np.asarray(hs[2]), 0.0)
    np.testing.assert_array_equal(np.asarray(sums)[[2, 4, 5]], 0.0)
    np.testing.assert_allclose(np.asarray(hs)[[0, 1, 3]], np.asarray(want_hs), rtol=1e-6)


def test_trailing_padding_changes_nothing(problem):
    params, carry, xs = problem
    step = lambda c, x: rnn_step(params, c, x)  # noqa: E731
    short_final, short_out = scan(step, carry, xs[:4])
    padded = jnp.concatenate([xs[:4], 100.0 * jnp.ones((5, 2))])
    final, out = scan(step, carry, padded, jnp.array([1] * 4 + [0] * 5))
    np.testing.assert_allclose(np.asarray(final["h"]), np.asarray(short_final["h"]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out[0][:4]), np.asarray(short_out[0]), rtol=1e-6)


def test_vmap_over_batch_equals_python_loop(problem):
    params, carry, _ = problem
    rng = np.random.default_rng(1)
    xs = jnp.asarray(rng.normal(size=(B, T, 2)), jnp.float32)
    masks = jnp.asarray(rng.integers(0, 2, size=(B, T)))
    carries = jax.tree_util.tree_map(lambda x: jnp.stack([x] * B), carry)
    step = lambda c, x: rnn_step(params, c, x)  # noqa: E731
    batched = jax.vmap(lambda c, x, m: scan(step, c, x, m))(carries, xs, masks)
    for b in range(B):
        single = scan(step, carry, xs[b], masks[b])
        chex.assert_trees_all_close(jax.tree_util.tree_map(lambda g: g[b], batched), single, rtol=1e-6)


def test_second_call_does_not_retrace(problem, trace_counter):
    params, carry, xs = problem
    counter = trace_counter(lambda c, x: rnn_step(params, c, x))
    # the jitted function is traced once (chex fails at a retrace); the step inside it as often as
    # scan needs on the first call and never again
    run = jax.jit(chex.assert_max_traces(lambda c, x, m: scan(counter, c, x, m), n=1))
    run(carry, xs, jnp.ones((T,), jnp.int32))
    n_first = counter.count
    run(jax.tree_util.tree_map(lambda v: v + 1, carry), xs * 2.0, jnp.array([1, 0, 1, 0, 1, 1], jnp.int32))
    assert n_first >= 1 and counter.count == n_first


def test_trace_fn_stacks_states(problem):
    params, carry, xs = problem
    step = lambda c, x: rnn_step(params, c, x)  # noqa: E731
    _, (out, trace) = scan(step, carry, xs, trace_fn=lambda c: c["n"])
    np.testing.assert_array_equal(np.asarray(trace), np.arange(1, T + 1))
    _, (out, trace) = scan(step, carry, xs, jnp.array([1, 0, 1, 1, 0, 1]), trace_fn=lambda c: c["n"])
    np.testing.assert_array_equal(np.asarray(trace), [1, 0, 2, 3, 0, 4])  # zeros on masked steps


@pytest.mark.parametrize("every", [1, 4, 6, 50])
def test_remat_chunk_equals_the_plain_scan_with_masks_traces_and_no_xs(problem, every):
    # Chunked checkpointing changes what the backward pass keeps, never a value: masked
    # steps, traces and an xs-less scan give what the plain scan gives, and so do the
    # gradients through them (k >= T is the plain scan itself).
    params, carry, xs = problem
    mask = jnp.array([1, 1, 0, 1, 0, 1])
    trace_fn = lambda c: c["n"]  # noqa: E731

    def run(params, **kw):
        return scan(lambda c, x: rnn_step(params, c, x), carry, xs, mask, trace_fn=trace_fn, **kw)

    chex.assert_trees_all_close(run(params, remat_chunk=every), run(params), rtol=1e-6)

    def loss(params, **kw):
        final, ((hs, sums), _) = run(params, **kw)
        return jnp.sum(final["h"] ** 2) + jnp.sum(sums * jnp.arange(1.0, T + 1))

    chex.assert_trees_all_close(jax.grad(loss)(params, remat_chunk=every), jax.grad(loss)(params), rtol=1e-5)
    counter = lambda c, _: (c + 1, c)  # noqa: E731
    got = scan(counter, jnp.zeros(()), None, length=5, remat_chunk=every)
    chex.assert_trees_all_close(got, scan(counter, jnp.zeros(()), None, length=5))


def test_remat_chunk_keeps_fewer_residuals():
    # What the backward pass keeps: a plain scan stacks the [D, D] carry of every step;
    # chunks of k keep it at every k-th step (plus one chunk's during the backward).
    big = 64

    def loss(a, **kw):
        final, _ = scan(lambda c, x: (jnp.tanh(a @ c) + x, None), jnp.eye(big), jnp.ones((48, big, big)), **kw)
        return jnp.sum(final)

    def temp_bytes(**kw):
        compiled = jax.jit(jax.grad(lambda a: loss(a, **kw))).lower(jnp.eye(big)).compile()
        return compiled.memory_analysis().temp_size_in_bytes

    plain, chunked = temp_bytes(), temp_bytes(remat_chunk=6)
    assert chunked < 0.5 * plain, (chunked, plain)


def test_length_without_xs():
    final, out = scan(lambda c, _: (c + 1, c), jnp.zeros(()), None, length=4)
    assert float(final) == 4.0
    np.testing.assert_array_equal(np.asarray(out), [0, 1, 2, 3])


def test_select_picks_per_leaf():
    new = {"a": jnp.ones((2, 3)), "b": jnp.ones(())}
    old = {"a": jnp.zeros((2, 3)), "b": jnp.zeros(())}
    assert float(select(jnp.array(0), new, old)["a"].sum()) == 0.0
    assert float(select(jnp.array(True), new, old)["b"]) == 1.0
    # A per-example mask [B] broadcasts over the leading axis.
    got = select(jnp.array([1, 0]), new, old)["a"]
    np.testing.assert_array_equal(np.asarray(got), [[1, 1, 1], [0, 0, 0]])


def test_bad_inputs_name_the_argument():
    step = lambda c, x: (c, x)  # noqa: E731
    with pytest.raises(ValueError, match=r"mask: expected shape \[T\] = \(3,\), got \(4,\)"):
        scan(step, jnp.zeros(()), jnp.zeros((3, 2)), jnp.ones((4,)))
    with pytest.raises(
        ValueError, match=r"xs: expected every leaf to share the leading time axis T, got sizes \[3, 4\]"
    ):
        scan(step, jnp.zeros(()), (jnp.zeros((3,)), jnp.zeros((4,))))
    with pytest.raises(ValueError, match=r"length: expected the number of steps when xs is None, got None"):
        scan(step, jnp.zeros(()), None)
    with pytest.raises(ValueError, match=r"length: expected T = 3 \(the leading axis of xs\), got 5"):
        scan(step, jnp.zeros(()), jnp.zeros((3,)), length=5)
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ValueError, match=r"remat_chunk: expected a positive integer, got"):
            scan(step, jnp.zeros(()), jnp.zeros((3,)), remat_chunk=bad)
    for bad in (-1, 2.5, True):  # a length of -1 used to reach lax.scan as a length to run
        with pytest.raises(ValueError, match=rf"length: expected a non-negative integer, got {bad!r}"):
            scan(step, jnp.zeros(()), None, length=bad)
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match=rf"unroll: expected a non-negative integer, got {bad!r}"):
            scan(step, jnp.zeros(()), jnp.zeros((3,)), unroll=bad)
    final, outs = scan(lambda c, _: (c + 1, c), jnp.zeros(()), None, length=0)  # zero steps: not a mistake
    assert float(final) == 0.0 and jnp.shape(outs) == (0,)


def test_select_derivatives_equal_where_and_keep_only_the_small_mask():
    # select's custom JVP: the value and both derivatives are where's; under vmap the
    # backward pass keeps the [B] mask, not a predicate broadcast to every leaf's shape.
    rng = np.random.default_rng(3)
    new = jnp.asarray(rng.normal(size=(B, 5, 7)), jnp.float32)
    old = jnp.asarray(rng.normal(size=(B, 5, 7)), jnp.float32)
    keep = jnp.array([True, False, True, False])
    weights = jnp.asarray(rng.normal(size=(B, 5, 7)), jnp.float32)

    def ours(n, o):
        return jnp.sum(weights * jnp.sin(jax.vmap(select)(keep, n, o)))

    def plain(n, o):
        return jnp.sum(weights * jnp.sin(jnp.where(keep[:, None, None], n, o)))

    np.testing.assert_array_equal(
        np.asarray(jax.vmap(select)(keep, new, old)), np.asarray(jnp.where(keep[:, None, None], new, old))
    )
    for g, w in zip(jax.grad(ours, (0, 1))(new, old), jax.grad(plain, (0, 1))(new, old)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    jvp_ours = jax.jvp(ours, (new, old), (weights, -weights))[1]
    jvp_plain = jax.jvp(plain, (new, old), (weights, -weights))[1]
    np.testing.assert_allclose(float(jvp_ours), float(jvp_plain), rtol=1e-5)

    _, linear = jax.linearize(lambda n: jax.vmap(select)(keep, n, old), new)
    residual_shapes = [(v.aval.dtype, v.aval.shape) for v in jax.make_jaxpr(linear)(new).jaxpr.constvars]
    assert (jnp.dtype(bool), (B, 5, 7)) not in residual_shapes, residual_shapes


def test_select_leaves_integer_leaves_to_where():
    out = select(jnp.array(False), {"n": jnp.array(3), "x": jnp.array(1.0)}, {"n": jnp.array(5), "x": jnp.array(2.0)})
    assert int(out["n"]) == 5 and float(out["x"]) == 2.0
