"""Tests of panm_jax/models/memory_models.py (ntm, dnc, stack/queue/deque_lstm) and panm_jax/cli/models.py.

Per model: output shape, traces and their invariants, padding invariance, no
retrace inside a bucket (all in one test, so that one compiled function serves
them), every controller kind, a learning run on a tiny Copy (which also checks
that every parameter receives a finite, non-zero gradient), config validation
and the ``panm-jax models`` card.

Sizes differ per axis: B = 3, T_in = 7, D_in = 6, K = 4, T_out = 5, D = 8,
N = 11, W = 5, R = 3 (DNC), R = 2 and H = 1 (NTM).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from panm_jax.models import build_model, get_config, list_models
from panm_jax.tasks import get_task
from panm_jax.train.steps import init_train_state, make_train_step

B, T_IN, D_IN, K, T_OUT = 3, 7, 6, 4, 5
NAMES = ["ntm", "dnc", "stack_lstm", "queue_lstm", "deque_lstm"]
SMALL = {
    "ntm": dict(hidden=8, num_slots=11, word_size=5, num_reads=2, num_writes=1),
    "dnc": dict(hidden=8, num_slots=11, word_size=5, num_reads=3),
    "stack_lstm": dict(hidden=8, width=5),
    "queue_lstm": dict(hidden=8, width=5, read_to_output=True),  # also the W_r r_t output path
    "deque_lstm": dict(hidden=8, width=5),
}


def _model(name: str, seed: int = 0, **extra):
    return build_model(name, input_size=D_IN, output_size=K, seed=seed, **{**SMALL[name], **extra})


def _inputs(seed: int = 0, lengths=(7, 4, 2)):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.normal(size=(B, T_IN, D_IN)), jnp.float32)
    mask = jnp.asarray(np.arange(T_IN)[None] < np.asarray(lengths)[:, None])
    return x * mask[..., None], mask


def _pad(x, mask, extra: int, value: float = 100.0):
    # Append `extra` masked steps of garbage to every example.
    garbage = jnp.full((B, extra, D_IN), value, jnp.float32)
    return jnp.concatenate([x, garbage], 1), jnp.concatenate([mask, jnp.zeros((B, extra), bool)], 1)


def _check_traces(name: str, tr, mask_all: np.ndarray) -> None:
    t = T_IN + T_OUT
    real = mask_all[:, :, None]  # [B, T, 1]: the steps that ran (padding traces are zeros)
    if name == "ntm":
        assert tr.read_weights.shape == (B, t, 2, 11) and tr.write_weights.shape == (B, t, 1, 11)
        for w in (tr.read_weights, tr.write_weights):
            np.testing.assert_allclose(np.asarray(w).sum(-1), np.broadcast_to(real, w.shape[:-1]), atol=1e-5)
    elif name == "dnc":
        assert tr.read_weights.shape == (B, t, 3, 11) and tr.write_weights.shape == (B, t, 1, 11)
        assert tr.usage.shape == (B, t, 11) and tr.read_modes.shape == (B, t, 3, 3)
        assert np.all(np.asarray(tr.read_weights).sum(-1) <= 1 + 1e-5)
        assert np.all(np.asarray(tr.write_weights).sum(-1) <= 1 + 1e-5)
        assert np.all((np.asarray(tr.usage) >= 0) & (np.asarray(tr.usage) <= 1 + 1e-6))
    else:
        rows = 2 * t if name == "deque_lstm" else t  # C = T_in + T_out (2C for the DeQue)
        ends = 2 if name == "deque_lstm" else 1
        assert tr.strengths.shape == (B, t, rows)
        assert tr.push.shape == (B, t, ends) and tr.pop.shape == (B, t, ends)
        s = np.asarray(tr.strengths)
        assert np.all((s >= 0) & (s <= 1))
        # one row written per real step (the DeQue: one per end); padding writes nothing
        written = (s[:, -1] > 0).sum(-1)
        assert np.all(written <= ends * mask_all.sum(-1))


@pytest.mark.parametrize("name", NAMES)
def test_shapes_traces_padding_and_no_retrace(name, trace_counter):
    model = _model(name)
    graphdef, params = nnx.split(model)
    counter = trace_counter(lambda p, x, m: nnx.merge(graphdef, p)(x, m, T_OUT, return_traces=True))
    run = jax.jit(counter)

    x, mask = _inputs(0)
    logits, tr = run(params, x, mask)
    assert logits.shape == (B, T_OUT, K) and bool(jnp.all(jnp.isfinite(logits)))
    mask_all = np.concatenate([np.asarray(mask), np.ones((B, T_OUT), bool)], 1)
    _check_traces(name, tr, mask_all)

    # Garbage in the padding rows changes no logit, and a new batch of the same
    # shape (new values, new lengths) does not retrace.
    x_dirty = jnp.where(mask[..., None], x, 7.0)
    np.testing.assert_allclose(np.asarray(run(params, x_dirty, mask)[0]), np.asarray(logits), atol=1e-5)
    x2, mask2 = _inputs(1, lengths=(3, 7, 5))
    logits2, _ = run(params, x2, mask2)
    assert bool(jnp.all(jnp.isfinite(logits2)))
    assert counter.count == 1

    # Appending padding (a longer bucket) changes none of the logits.
    x_long, mask_long = _pad(x, mask, 4)
    long, _ = run(params, x_long, mask_long)
    np.testing.assert_allclose(np.asarray(long), np.asarray(logits), atol=1e-5)
    assert counter.count == 2


@pytest.mark.parametrize(("kind", "name"), [("gru", "deque_lstm"), ("transformer", "dnc")])
def test_other_controller_kinds_run_and_ignore_padding(kind, name):
    # "lstm" (the default) runs in the test above and "feedforward" in the learning
    # test, for every model; the controllers are generic, so one model each suffices
    # for the rest. The padding check matters most for the Transformer, whose
    # positions must count real steps only.
    if kind == "transformer":
        pytest.importorskip("panm_jax.modules.transformer")
    x, mask = _inputs(2)
    x_long, mask_long = _pad(x, mask, 2)
    model = _model(name, controller=kind, max_steps=T_IN + 2 + T_OUT)
    graphdef, params = nnx.split(model)
    run = jax.jit(lambda p, x, m: nnx.merge(graphdef, p)(x, m, T_OUT))
    short, long = run(params, x, mask), run(params, x_long, mask_long)
    assert short.shape == (B, T_OUT, K) and bool(jnp.all(jnp.isfinite(short)))
    np.testing.assert_allclose(np.asarray(long), np.asarray(short), atol=1e-5)


# Learning, not timing: Copy at the fixed length 3 (T_in = 5, T_out = 3), batch 32,
# Adam 1e-2, 300 steps, widths 32 / 8. The controllers are feed-forward, so the
# only way information crosses time steps is the external memory: the test checks
# the memory wiring, not an LSTM's own capacity. Measured (seeds 0 and 1, this
# CPU): the loss falls from ~2.3 (log 10, chance) to 0.001-0.06 (ratio <= 0.03);
# the threshold, a tenth of the start, leaves a margin of three or more.
LEARN = {
    "ntm": dict(num_slots=8, word_size=8),
    "dnc": dict(num_slots=8, word_size=8, num_reads=1),
    "stack_lstm": dict(width=8),
    "queue_lstm": dict(width=8),
    "deque_lstm": dict(width=8),
}


@pytest.mark.parametrize("name", NAMES)
def test_learns_a_tiny_copy_with_every_parameter_trained(name):
    task = get_task("copy")
    model = build_model(
        name,
        input_size=task.input_size,
        output_size=task.output_size,
        hidden=32,
        controller="feedforward",
        seed=0,
        **LEARN[name],
    )
    optimizer = optax.adam(1e-2)
    graphdef, state = init_train_state(model, optimizer, seed=0)
    step = jax.jit(make_train_step(graphdef, optimizer, task))
    rng = np.random.default_rng(0)
    initial = state.params
    state, metrics = step(state, task.sample(rng, 32, 3))
    # Adam's first update is ~ -lr * sign(g): every parameter moves iff its gradient is non-zero.
    moved = jax.tree_util.tree_map(lambda a, b: bool(jnp.any(a != b)), initial, state.params)
    assert all(jax.tree_util.tree_leaves(moved)), moved
    losses = [float(metrics["loss"])]
    for _ in range(299):
        state, metrics = step(state, task.sample(rng, 32, 3))
        losses.append(float(metrics["loss"]))
        assert np.isfinite(losses[-1]) and np.isfinite(float(metrics["grad_norm"]))
    start, end = np.mean(losses[:5]), np.mean(losses[-10:])
    assert start > 2.0
    assert end < 0.1 * start, (start, end)


def test_configs_have_the_documented_defaults_and_reject_bad_values():
    assert {"ntm", "dnc", "stack_lstm", "queue_lstm", "deque_lstm"} <= set(list_models())
    ntm, dnc, stack = get_config("ntm"), get_config("dnc"), get_config("stack_lstm")
    assert (
        ntm.controller,
        ntm.hidden,
        ntm.num_slots,
        ntm.word_size,
        ntm.num_reads,
        ntm.num_writes,
        ntm.shift_width,
    ) == ("lstm", 256, 128, 20, 1, 1, 3)
    assert (
        dnc.controller,
        dnc.hidden,
        dnc.num_slots,
        dnc.word_size,
        dnc.num_reads,
        dnc.num_writes,
        dnc.read_previous_memory,
        dnc.stop_usage_write_gradient,
    ) == ("lstm", 256, 128, 20, 4, 1, False, False)
    assert (stack.controller, stack.hidden, stack.width, stack.read_to_output) == ("lstm", 256, 64, False)
    assert get_config("dnc", controller="transformer").controller == "transformer"
    with pytest.raises(
        ValueError,
        match=r"controller: unknown controller 'rnn'; known controllers: "
        r"\['feedforward', 'lstm', 'gru', 'transformer'\]",
    ):
        get_config("dnc", controller="rnn")
    with pytest.raises(ValueError, match=r"shift_width: expected an odd positive integer, got 2"):
        get_config("ntm", shift_width=2)
    with pytest.raises(ValueError, match=r"num_reads: expected a positive integer, got 0"):
        get_config("dnc", num_reads=0)
    with pytest.raises(ValueError, match=r"num_writes: expected a positive integer, got 0"):
        get_config("dnc", num_writes=0)
    with pytest.raises(ValueError, match=r"stop_usage_write_gradient: expected true or false, got 'yes'"):
        get_config("dnc", stop_usage_write_gradient="yes")
    assert get_config("dnc", num_writes=2).num_writes == 2
    with pytest.raises(ValueError, match=r"controller_layers: the 'lstm' controller has one layer, got 2"):
        get_config("stack_lstm", controller_layers=2)
    with pytest.raises(ValueError, match=r"width: expected a positive integer, got -3"):
        get_config("deque_lstm", width=-3)
    with pytest.raises(ValueError, match=r"unknown hyperparameter\(s\) \['width'\] for model 'ntm'"):
        get_config("ntm", width=3)


def test_remat_chunk_gives_the_same_outputs_and_gradients():
    # Chunks of 5 of the T = 12 steps (and a rest of 2), inputs with padding: the
    # backward pass recomputes each chunk; values and gradients are unchanged. The
    # DNC (its link in the carry); every memory model goes through the same scan.
    name = "dnc"
    x, mask = _inputs()
    got, checkpoints = [], []
    for every in (0, 5):
        graphdef, params = nnx.split(_model(name, remat_chunk=every))
        loss = lambda p, g=graphdef: jnp.sum(nnx.merge(g, p)(x, mask, T_OUT) ** 2)  # noqa: E731
        got.append(jax.jit(jax.value_and_grad(loss))(params))
        text = str(jax.make_jaxpr(loss)(params))
        checkpoints.append(text.count("checkpoint") + text.count("remat"))
    # The option reaches the scan: a checkpointed chunk, beyond the step's own checkpoints.
    assert checkpoints[1] > checkpoints[0], checkpoints
    chex.assert_trees_all_close(*got, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"remat_chunk: expected a non-negative integer, got -1"):
        get_config(name, remat_chunk=-1)


def test_bad_call_inputs_are_named():
    model = _model("stack_lstm")
    x, mask = _inputs()
    with pytest.raises(ValueError, match=r"inputs: expected shape \[B, T_in, D_in\]"):
        model(x[0], mask, 2)
    with pytest.raises(ValueError, match=r"inputs: expected D_in = 6"):
        model(x[..., :3], mask, 2)
    with pytest.raises(ValueError, match=r"input_mask: expected shape \[B, T_in\]"):
        model(x, mask[:, :3], 2)
    with pytest.raises(ValueError, match=r"num_outputs: expected a positive integer"):
        model(x, mask, 0)
    pytest.importorskip("panm_jax.modules.transformer")
    small = _model("ntm", controller="transformer", max_steps=10)
    with pytest.raises(ValueError, match=r"T_in \+ T_out = 7 \+ 5 = 12 steps exceed .* max_steps = 10"):
        small(x, mask, T_OUT)


def test_models_command_lists_every_registered_model(capsys, monkeypatch):
    from panm_jax.cli import main
    from panm_jax.cli import models as cli

    rows = {row["name"]: row for row in cli.model_card()}
    assert set(rows) == set(list_models())  # the other helpers' models too: the card reads the registry
    for name in ("ntm", "dnc", "stack_lstm", "queue_lstm", "deque_lstm"):
        assert rows[name]["controllers"] == "feedforward, lstm (default), gru, transformer"
    assert rows["ntm"]["traces"] == "read_weights, write_weights"
    assert rows["dnc"]["traces"] == "read_weights, write_weights, usage, read_modes"
    assert rows["deque_lstm"]["traces"] == "strengths, push, pop"
    # NTM at the default config, by hand (D = 256, N x W = 128 x 20, R = H = 1, S = 3, D_in = 12, K = 10):
    lstm = 4 * 256 * (12 + 20 + 256) + 2 * 4 * 256  # LSTM on [x_t; r_{t-1}], two bias vectors
    interface = 1 * (20 + 3 + 3) + 1 * (3 * 20 + 3 + 3)  # R (W + S + 3) + H (3W + S + 3) = 92
    want = lstm + 256 * interface + interface + 256 * 10 + 10 + 20 * 10  # + W_xi, W_y (+ b), W_r
    assert rows["ntm"]["params"] == f"{want:,}"
    assert rows["ntm"]["aligned"] == "yes" and rows["panm"]["aligned"] == "no"

    monkeypatch.setattr(cli, "model_card", lambda: list(rows.values()))  # the table of the rows above
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name in rows:
        assert name in out
    assert "controller options" in out and f"{want:,}" in out
