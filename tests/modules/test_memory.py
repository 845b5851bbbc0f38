"""Tests of panm_jax/modules/memory.py and the controller factory it is driven by.

Memory modules hold a projection and call the kernels: the tests check that the
controls they produce lie in the ranges the kernels expect (the activations of
the papers; see docs/references.md), that the pop bias starts at -1 (Grefenstette
et al. 2015, Learning to Transduce with Unbounded Memory), that the batched step
equals the one-example kernel step per example (vmap equals a loop), that a
masked step changes nothing, and that bad input is named.

Sizes differ per axis so that a transposed axis fails: B = 3, D = 9, N = 7, W = 5,
R = 3, H = 2.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from panm_jax.kernels import deque as deque_kernel
from panm_jax.kernels import dnc as dnc_kernel
from panm_jax.kernels import ntm as ntm_kernel
from panm_jax.kernels import queue as queue_kernel
from panm_jax.kernels import stack as stack_kernel
from panm_jax.modules.controllers import (
    CONTROLLER_KINDS,
    FeedForwardController,
    GRUCell,
    LSTMCell,
    make_controller,
)
from panm_jax.modules.memory import (
    POP_BIAS_INIT,
    DNCMemory,
    MemoryModule,
    NTMMemory,
    StackMemory,
    StackRNNMemory,
    TapeRNNMemory,
)

B, D, N, W, R, H = 3, 9, 7, 5, 3, 2


def _hidden(seed: int = 0, scale: float = 5.0, shape=(B, D)) -> jax.Array:
    # Large pre-activations push every activation towards the ends of its range.
    return jnp.asarray(np.random.default_rng(seed).normal(size=shape) * scale, jnp.float32)


def _in(x, lo, hi=None) -> bool:
    x = np.asarray(x)
    return bool(np.all(x >= lo) and (hi is None or np.all(x <= hi)))


# ---- NTM ---------------------------------------------------------------------


def test_ntm_controls_are_in_the_kernels_ranges():
    memory = NTMMemory(D, N, W, num_reads=R, num_writes=H, shift_width=3, rngs=nnx.Rngs(0))
    assert memory.interface_size == ntm_kernel.interface_size(W, R, H, 3)
    assert memory.read_size == R * W
    c = jax.jit(memory.controls)(_hidden())
    assert c.read.key.shape == (B, R, W) and c.write.key.shape == (B, H, W)
    assert c.erase.shape == (B, H, W) and c.add.shape == (B, H, W)
    for head in (c.read, c.write):
        assert _in(head.strength, 0.0)  # beta = softplus >= 0 (the M10AE appendix, Eq. 12; docs/references.md)
        assert _in(head.gate, 0.0, 1.0)  # g = sigmoid
        assert _in(head.shift, 0.0, 1.0)  # s = softmax over S shifts
        np.testing.assert_allclose(np.asarray(head.shift).sum(-1), 1.0, rtol=1e-6)
        assert _in(head.sharpen, 1.0)  # gamma = 1 + softplus >= 1
    assert _in(c.erase, 0.0, 1.0)


def test_ntm_batched_step_equals_the_kernel_per_example_and_masks():
    memory = NTMMemory(D, N, W, num_reads=R, num_writes=H, rngs=nnx.Rngs(1))
    state = memory.init_state((B,))
    chex.assert_shape([state.memory, state.read_weights], [(B, W, N), (B, R, N)])
    controls_fn, step_fn = jax.jit(memory.controls), jax.jit(memory.step)
    mask = jnp.asarray([True, False, True])
    state, _ = step_fn(state, controls_fn(_hidden(1, 1.0)), jnp.ones((B,), bool))  # memory no longer uniform
    controls = controls_fn(_hidden(2, 1.0))
    new, reads = step_fn(state, controls, mask)
    chex.assert_shape(reads, (B, R * W))
    kernel_step = jax.jit(ntm_kernel.step)
    example = lambda tree, b: jax.tree_util.tree_map(lambda x: x[b], tree)  # noqa: E731
    for b in range(B):
        want_state, want_reads = kernel_step(example(state, b), example(controls, b), mask[b])
        # every state field and the reads, np.testing's default rtol
        chex.assert_trees_all_close(
            example((new, reads), b), (want_state, want_reads.reshape(-1)), rtol=1e-7, atol=1e-6
        )
    # example 1 is masked: its state is unchanged and its read is zero
    chex.assert_trees_all_equal(example(new, 1), example(state, 1))
    np.testing.assert_array_equal(np.asarray(reads[1]), 0.0)


# ---- DNC ---------------------------------------------------------------------


def test_dnc_controls_are_in_the_kernels_ranges():
    memory = DNCMemory(D, N, W, num_reads=R, rngs=nnx.Rngs(2))
    assert (
        memory.interface_size == dnc_kernel.interface_size(num_reads=R, word_size=W) == R * W + 5 * R + 3 * W + 3
    )  # Graves et al. 2016
    c = jax.jit(memory.controls)(_hidden(3))
    chex.assert_shape([c.read_keys, c.read_modes, c.write_key, c.write_gate], [(B, R, W), (B, R, 3), (B, 1, W), (B, 1)])
    # oneplus >= 1 (Graves et al. 2016, Methods; Back et al. 2018, supplement §1)
    assert _in(c.read_strengths, 1.0) and _in(c.write_strength, 1.0)
    for gate in (c.erase, c.free_gates, c.allocation_gate, c.write_gate):
        assert _in(gate, 0.0, 1.0)  # sigmoid
    assert _in(c.read_modes, 0.0, 1.0)
    np.testing.assert_allclose(np.asarray(c.read_modes).sum(-1), 1.0, rtol=1e-6)  # softmax per head


def test_dnc_batched_step_equals_the_kernel_and_passes_the_read_option():
    h1, h2 = _hidden(4, 1.0), _hidden(5, 1.0)
    for previous in (False, True):
        memory = DNCMemory(D, N, W, num_reads=R, read_previous_memory=previous, rngs=nnx.Rngs(3))
        step_fn = jax.jit(memory.step)
        state, _ = step_fn(memory.init_state((B,)), memory.controls(h1))
        controls = memory.controls(h2)
        new, reads = step_fn(state, controls)
        chex.assert_shape([reads, new.link], [(B, R * W), (B, 1, N, N)])
        kernel_step = jax.jit(lambda s, c: dnc_kernel.step(s, c, read_previous_memory=previous))
        for b in range(B):
            one = jax.tree_util.tree_map(lambda x: x[b], (state, controls))
            want_state, want_reads = kernel_step(*one)
            # the reads and every state field (memory, link, usage, weights, ...), np.testing's default rtol
            got = jax.tree_util.tree_map(lambda x: x[b], (new, reads))
            chex.assert_trees_all_close(got, (want_state, want_reads.reshape(-1)), rtol=1e-7, atol=1e-6)


def test_dnc_several_write_heads_and_the_usage_gradient_option():
    # H = 2 write heads: the interface, state and trace shapes follow; the
    # stop-gradient option reaches the kernel (same values, a different gradient).
    h = 2
    memory = DNCMemory(D, N, W, num_reads=R, num_writes=h, rngs=nnx.Rngs(10))
    stopped = DNCMemory(D, N, W, num_reads=R, num_writes=h, stop_usage_write_gradient=True, rngs=nnx.Rngs(10))
    assert (
        memory.interface_size
        == dnc_kernel.interface_size(num_reads=R, word_size=W, num_writes=h)
        == R * W + 3 * h * W + 3 * h + R * (2 * h + 3)
    )
    state = memory.init_state((B,))
    chex.assert_shape([state.link, state.write_weights], [(B, h, N, N), (B, h, N)])
    c = memory.controls(_hidden(11, 1.0))
    chex.assert_shape([c.write_vector, c.read_modes], [(B, h, W), (B, R, 2 * h + 1)])
    new_state, reads = memory.step(state, c)
    chex.assert_shape([reads, new_state.precedence], [(B, R * W), (B, h, N)])
    trace = memory.trace(new_state, c)
    chex.assert_shape([trace.write_weights, trace.read_modes], [(B, h, N), (B, R, 2 * h + 1)])

    def loss(module, state, h1, h2):
        state, _ = module(state, h1)
        _, reads = module(state, h2)
        return jnp.sum(reads**2)

    args = (state, _hidden(12, 1.0), _hidden(13, 1.0))
    # Compiled (the modules are closed over as constants): dispatching this gradient eagerly is slow.
    g_full = jax.jit(jax.grad(lambda h1: loss(memory, args[0], h1, args[2])))(args[1])
    g_stop = jax.jit(jax.grad(lambda h1: loss(stopped, args[0], h1, args[2])))(args[1])
    values = [jax.jit(lambda *a, m=m: loss(m, *a))(*args) for m in (memory, stopped)]
    np.testing.assert_allclose(values[0], values[1], rtol=1e-6)
    assert float(jnp.max(jnp.abs(g_full - g_stop))) > 0.0


# ---- Stack, Queue, DeQue -------------------------------------------------------


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_stack_controls_ranges_and_pop_bias(kind):
    memory = StackMemory(kind, D, W, rngs=nnx.Rngs(4))
    ends = 2 if kind == "deque" else 1
    assert memory.read_size == ends * W
    bias = np.asarray(memory.projection.bias[...])
    block = 2 + W  # [d^, u^, v^ (W)] per end
    for end in range(ends):
        # Grefenstette et al. 2015's protocol (docs/tasks.md, Transduction tasks)
        assert bias[end * block + 1] == POP_BIAS_INIT == -1.0
        assert bias[end * block] == 0.0 and np.all(bias[end * block + 2 : (end + 1) * block] == 0.0)
    controls_fn = jax.jit(memory.controls)
    c = controls_fn(_hidden(6))
    fields = c._asdict()
    for name, value in fields.items():
        if name.startswith(("push", "pop")):
            chex.assert_shape(value, (B,))
            assert _in(value, 0.0, 1.0)  # sigmoid
        else:
            chex.assert_shape(value, (B, W))
            assert _in(value, -1.0, 1.0)  # tanh
    # At h = 0 only the biases act: u = sigmoid(-1), d = 1/2.
    c0 = controls_fn(jnp.zeros((B, D)))
    pop = c0.pop if kind != "deque" else c0.pop_top
    np.testing.assert_allclose(np.asarray(pop), 1.0 / (1.0 + np.e), rtol=1e-6)


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
def test_stack_batched_step_equals_the_kernel_and_masks(kind):
    memory = StackMemory(kind, D, W, rngs=nnx.Rngs(5))
    capacity = 4
    state = memory.init_state((B,), capacity=capacity)
    rows = 2 * capacity if kind == "deque" else capacity
    chex.assert_shape([state.values, state.strengths], [(B, rows, W), (B, rows)])
    controls_fn, step_fn = jax.jit(memory.controls), jax.jit(memory.step)
    state, _ = step_fn(state, controls_fn(_hidden(7, 1.0)), jnp.ones((B,), bool))
    controls = controls_fn(_hidden(8, 1.0))
    mask = jnp.asarray([True, True, False])
    new, read = step_fn(state, controls, mask)
    chex.assert_shape(read, (B, memory.read_size))
    kernel = {"stack": stack_kernel, "queue": queue_kernel, "deque": deque_kernel}[kind]
    assert memory.kernel is kernel
    step = jax.jit(kernel.step)
    for b in range(B):
        one = jax.tree_util.tree_map(lambda x: x[b], (state, controls))
        want_state, want_read = step(*one, mask[b])
        if kind == "deque":
            want_read = jnp.concatenate([want_read.top, want_read.bottom])  # top first, then bottom
        # the read and every state field (values, strengths, ...), np.testing's default rtol
        got = jax.tree_util.tree_map(lambda x: x[b], (new, read))
        chex.assert_trees_all_close(got, (want_state, want_read), rtol=1e-7, atol=1e-6)
    chex.assert_trees_all_equal(
        jax.tree_util.tree_map(lambda x: x[2], new), jax.tree_util.tree_map(lambda x: x[2], state)
    )  # masked: the whole state kept
    np.testing.assert_array_equal(np.asarray(read[2]), 0.0)
    trace = memory.trace(new, controls)
    chex.assert_shape([trace.strengths, trace.push], [(B, rows), (B, 2 if kind == "deque" else 1)])


def test_memory_modules_take_any_leading_axes():
    # [2, 3] leading axes (e.g. batch x heads): the kernels take them natively or are vmapped once per axis. (No
    # leading axis, one example, is how the models call them: tests/models/test_memory_models.py.)
    for memory, init in (
        (NTMMemory(D, N, W, rngs=nnx.Rngs(6)), {}),
        (DNCMemory(D, N, W, num_reads=R, rngs=nnx.Rngs(7)), {}),
        (StackMemory("queue", D, W, rngs=nnx.Rngs(8)), {"capacity": 3}),
    ):
        call = jax.jit(lambda state, h: memory(state, h)[1])
        read = call(memory.init_state((2, 3), **init), _hidden(9, 1.0, (2, 3, D)))
        assert read.shape == (2, 3, memory.read_size)


def test_every_memory_module_gives_a_sequence_state():
    # The one interface a sequence model uses (models/memory_models.py): init_sequence_state sizes what
    # depends on the sequence, a Stack's capacity (one row per step and end) and a Tape-RNN's jump length.
    steps, length = 6, jnp.int32(4)
    modules = {
        "ntm": NTMMemory(D, N, W, rngs=nnx.Rngs(0)),
        "dnc": DNCMemory(D, N, W, num_reads=R, rngs=nnx.Rngs(0)),
        "stack": StackMemory("stack", D, W, rngs=nnx.Rngs(0)),
        "deque": StackMemory("deque", D, W, rngs=nnx.Rngs(0)),
        "stack_rnn": StackRNNMemory(D, 5, W, rngs=nnx.Rngs(0)),
        "tape": TapeRNNMemory(D, 5, W, value_layers=(), rngs=nnx.Rngs(0)),
        "tape_l1": TapeRNNMemory(D, 5, W, value_layers=(), jump_to_input_length=False, rngs=nnx.Rngs(0)),
    }
    states = {name: m.init_sequence_state(steps, length, jnp.float32) for name, m in modules.items()}
    assert all(isinstance(m, MemoryModule) for m in modules.values())
    chex.assert_trees_all_equal(states["ntm"], modules["ntm"].init_state(()))
    chex.assert_trees_all_equal(states["dnc"], modules["dnc"].init_state(()))
    chex.assert_trees_all_equal(states["stack_rnn"], modules["stack_rnn"].init_state(()))
    assert states["stack"].values.shape == (steps, W) and states["deque"].values.shape == (2 * steps, W)
    assert int(states["tape"].jump) == 4 and int(states["tape_l1"].jump) == 1
    for name, m in modules.items():  # one step from that state: reads of read_size
        _, read = m(states[name], _hidden(14, 1.0, (D,)))
        assert read.shape == (m.read_size,), name


def test_memory_modules_reject_bad_input():
    memory = NTMMemory(D, N, W, rngs=nnx.Rngs(9))
    with pytest.raises(ValueError, match=r"h: expected shape \[\.\.\., D\] with D = 9, got \(3, 4\)"):
        memory.controls(jnp.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"kind: unknown structure 'heap'; known: \['stack', 'queue', 'deque'\]"):
        StackMemory("heap", D, W, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"shift_width: expected an odd positive integer, got 4"):
        NTMMemory(D, N, W, shift_width=4, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"num_slots: expected a positive integer, got 0"):
        DNCMemory(D, 0, W, rngs=nnx.Rngs(0))


# ---- controllers (the factory the memory models build their controller with) ----


def test_feedforward_controller_has_no_state_and_bounded_output():
    ctrl = FeedForwardController(5, D, num_layers=2, rngs=nnx.Rngs(10))
    carry = ctrl.init_carry((B,))
    assert carry == () and jax.tree_util.tree_leaves(carry) == []
    x = _hidden(11, 3.0, (B, 5))
    carry, h = ctrl(carry, x)
    assert carry == () and h.shape == (B, D) and _in(h, -1.0, 1.0)
    # h = tanh(W2 tanh(W1 x + b1) + b2), in float64 NumPy
    w = [(np.asarray(layer.kernel[...], np.float64), np.asarray(layer.bias[...], np.float64)) for layer in ctrl.layers]
    want = np.tanh(np.tanh(np.asarray(x, np.float64) @ w[0][0] + w[0][1]) @ w[1][0] + w[1][1])
    np.testing.assert_allclose(np.asarray(h), want, atol=1e-5)
    # the same input gives the same output whatever came before (no recurrence)
    np.testing.assert_array_equal(np.asarray(ctrl((), x)[1]), np.asarray(h))
    with pytest.raises(ValueError, match=r"num_layers: expected a positive integer, got 0"):
        FeedForwardController(5, D, num_layers=0, rngs=nnx.Rngs(0))


def test_make_controller_builds_every_kind_and_names_bad_input():
    built = {
        "feedforward": make_controller("feedforward", 5, 8, rngs=nnx.Rngs(0)),
        "lstm": make_controller("lstm", 5, 8, rngs=nnx.Rngs(0)),
        "gru": make_controller("gru", 5, 8, rngs=nnx.Rngs(0)),
    }
    assert isinstance(built["feedforward"], FeedForwardController)
    assert isinstance(built["lstm"], LSTMCell) and isinstance(built["gru"], GRUCell)
    for ctrl in built.values():
        _, h = ctrl(ctrl.init_carry((B,)), jnp.ones((B, 5)))
        assert h.shape == (B, 8)
    with pytest.raises(
        ValueError,
        match=r"kind: unknown controller 'rnn'; known controllers: "
        r"\['feedforward', 'lstm', 'gru', 'transformer'\]",
    ):
        make_controller("rnn", 5, 8, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"kw: controller 'lstm' takes no options, got \['num_layers'\]"):
        make_controller("lstm", 5, 8, rngs=nnx.Rngs(0), num_layers=2)
    with pytest.raises(ValueError, match=r"max_steps: the 'transformer' controller needs its cache length"):
        make_controller("transformer", 5, 8, rngs=nnx.Rngs(0))
    assert CONTROLLER_KINDS == ("feedforward", "lstm", "gru", "transformer")


def test_make_controller_builds_the_transformer():
    transformer = pytest.importorskip("panm_jax.modules.transformer")
    ctrl = make_controller("transformer", 5, 8, rngs=nnx.Rngs(0), max_steps=6, num_layers=1, num_heads=2)
    assert isinstance(ctrl, transformer.TransformerController)
    _, h = ctrl(ctrl.init_carry((B,)), jnp.ones((B, 5)))
    assert h.shape == (B, 8)
