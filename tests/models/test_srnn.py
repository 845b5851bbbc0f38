"""Tests of panm_jax/models/srnn.py: the SRNN of Suzgun et al. 2019 and PANM on the SRNN (Le et al. 2024, §3.2)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from panm_jax.errors import UserError
from panm_jax.models import build_model
from panm_jax.tasks import get_task
from panm_jax.train.config import load_config
from tests.conftest import x64

SRNN_SMALL = dict(hidden=6, stack_depth=7, stack_width=3)
PANM_SMALL = dict(hidden=8, mlp_hidden=8, address_bits=5, srnn_hidden=6, stack_depth=7, stack_width=3)


def _batch(n=2, count=3, seed=0):
    """``count`` Dyck strings of lengths 10, 8, 6, ... (padded to the longest)."""
    task = get_task("dyck", n=n)
    rng = np.random.default_rng(seed)
    return task, task.encode([task.grammar.sample(rng, max(10 - 2 * i, 2)) for i in range(count)])


# ---- the SRNN against a float64 NumPy transcription of Suzgun et al. 2019 -------------------------


def _linear(layer):
    return np.asarray(layer.kernel[...], np.float64), np.asarray(layer.bias[...], np.float64)


def _ref_srnn(model, x, mask, num_blank=0):
    """The SRNN's logits ``W_y h_t + b_y`` per step, from the paper's equations (one example)."""
    (wi, bi), (wh, bh), (ws, bs), (wf, bf), (wy, by) = (
        _linear(layer)
        for layer in (
            model.cell.input,
            model.cell.recurrent,
            model.cell.stack_to_hidden,
            model.cell.interface,
            model.output,
        )
    )
    depth, width = model.config.stack_depth, model.config.stack_width
    h, stack = np.zeros(model.config.hidden), np.zeros((depth, width))
    xs = list(x) + [np.zeros(x.shape[1])] * num_blank
    real = list(mask) + [True] * num_blank
    out = []
    for x_t, r in zip(xs, real, strict=True):
        if not r:  # a padding step: nothing changes, the output is zero
            out.append(np.zeros(len(by)))
            continue
        h_bar = h + stack[0] @ ws + bs  # h~_{t-1} = h_{t-1} + W_sh s_{t-1}[0]
        h = np.tanh(x_t @ wi + bi + h_bar @ wh + bh)
        raw = h @ wf + bf
        a = np.exp(raw[:2] - raw[:2].max())
        a_push, a_pop = a / a.sum()  # a_t = softmax(W_a h_t)
        n_t = 1 / (1 + np.exp(-raw[2:]))  # n_t = sigmoid(W_n h_t)
        new = np.zeros_like(stack)
        new[0] = a_push * n_t + a_pop * stack[1]
        for i in range(1, depth):
            new[i] = a_push * stack[i - 1] + a_pop * (stack[i + 1] if i + 1 < depth else 0)
        stack = new
        out.append(h @ wy + by)  # y_t = sigmoid(W_y h_t + b_y): the logits
    return np.array(out)


@pytest.mark.parametrize("aligned", [True, False])
def test_srnn_matches_the_float64_transcription(aligned):
    _, batch = _batch()
    with x64():
        model = build_model("srnn", input_size=4, output_size=4, **SRNN_SMALL)
        graphdef, state = nnx.split(model)
        model = nnx.merge(graphdef, jax.tree.map(lambda v: v.astype(jnp.float64), state))
        steps = batch.inputs.shape[1] if aligned else 3
        got = model(jnp.asarray(batch.inputs, jnp.float64), batch.input_mask, steps, aligned=aligned)
    for b in range(len(batch.inputs)):
        want = _ref_srnn(model, batch.inputs[b].astype(np.float64), batch.input_mask[b], 0 if aligned else 3)
        want = want if aligned else want[-3:]
        np.testing.assert_allclose(np.asarray(got[b]), want, rtol=1e-12, atol=1e-13)


def test_srnn_traces_are_stacks_and_push_pop_distributions():
    _, batch = _batch()
    model = build_model("srnn", input_size=4, output_size=4, **SRNN_SMALL)
    _, trace = model(batch.inputs, batch.input_mask, batch.inputs.shape[1], aligned=True, return_traces=True)
    b, t = batch.input_mask.shape
    assert trace.stack.shape == (b, t, 7, 3) and trace.actions.shape == (b, t, 2)
    sums = np.asarray(trace.actions).sum(-1)
    np.testing.assert_allclose(sums[batch.input_mask], 1.0, rtol=1e-6)
    assert np.all(sums[~batch.input_mask] == 0)


# ---- PANM on the SRNN (and the SRNN): causal, padding-inert, trainable on Dyck ------------------------
#
# One jitted call per model (the task's loss, its gradient, the logits and the traces) serves every test
# below, as compiling is what costs: row 0 is a Dyck string; row 1 + t is that string with every token
# after step t changed; the last row is the string cut after step CUT, its padding filled with garbage.

CUT = 3


@pytest.fixture(scope="module", params=["panm_srnn", "srnn"])
def probe(request):
    name = request.param
    task, batch = _batch(count=1, seed=3)
    length = int(batch.input_mask[0].sum())
    x = np.asarray(batch.inputs[0, :length])
    rows, masks = [x], [np.ones(length, bool)]
    for t in range(length - 1):
        other = x.copy()
        other[t + 1 :] = np.roll(x[t + 1 :], 1, axis=-1)  # a different bracket at every later step
        rows.append(other)
        masks.append(np.ones(length, bool))
    cut = x.copy()
    cut[CUT + 1 :] = 7.0  # garbage in the padding
    rows.append(cut)
    masks.append(np.arange(length) <= CUT)
    probe_batch = batch._replace(
        inputs=np.stack(rows),
        input_mask=np.stack(masks),
        targets=np.repeat(batch.targets[:, :length], len(rows), axis=0),
        target_mask=np.stack(masks),
    )
    model = build_model(name, input_size=4, output_size=4, **(PANM_SMALL if name == "panm_srnn" else SRNN_SMALL))
    graphdef, params = nnx.split(model, nnx.Param)

    @jax.jit
    def loss_and_grads(params):
        def loss(params):
            out = nnx.merge(graphdef, params)(
                probe_batch.inputs, probe_batch.input_mask, length, aligned=True, return_traces=True
            )
            return task.loss(out[0], probe_batch), out

        return jax.value_and_grad(loss, has_aux=True)(params)

    (value, (logits, traces)), grads = loss_and_grads(params)
    return name, length, np.asarray(logits), traces, float(value), grads


def test_step_t_does_not_depend_on_later_tokens(probe):
    _, length, logits, *_ = probe
    worst = 0.0
    for t in range(length - 1):
        got, base = logits[1 + t], logits[0]
        worst = max(worst, float(np.abs(got[: t + 1] - base[: t + 1]).max()))
        np.testing.assert_array_equal(got[: t + 1], base[: t + 1])
        assert not np.array_equal(got[t + 1 :], base[t + 1 :])  # the later steps do read the changed tokens
    assert worst == 0.0  # the largest difference observed: exactly 0


def test_padding_changes_no_logit(probe):
    logits = probe[2]
    np.testing.assert_array_equal(logits[-1, : CUT + 1], logits[0, : CUT + 1])
    assert np.all(logits[-1, CUT + 1 :] == 0)


@pytest.mark.parametrize("probe", ["panm_srnn"], indirect=True)  # the SRNN has no pointers
def test_panm_srnn_pointer_weights_stay_on_the_prefix(probe):
    name, length, _, traces, *_ = probe
    assert name == "panm_srnn"
    (w_a, _, w_c), actions = traces
    for w in (np.asarray(w_a), np.asarray(w_c)):  # [B, T, H, L]
        for t in range(length):
            assert np.all(w[:, t, :, t + 1 :] == 0)  # no weight on a slot after step t
        np.testing.assert_allclose(w[:-1].sum(-1), 1.0, rtol=1e-5)
    assert np.asarray(actions).shape[-1] == 2


def test_the_dyck_loss_reaches_every_parameter(probe):
    value, grads = probe[4], probe[5]
    assert np.isfinite(value)
    leaves = jax.tree.leaves(grads)
    assert all(np.all(np.isfinite(g)) for g in leaves)
    assert all(np.any(np.asarray(g) != 0) for g in leaves)  # every parameter gets a gradient


@pytest.mark.parametrize("name", ["panm_srnn", "srnn"])
def test_a_dyck_config_accepts_the_model(name):
    assert load_config(None, ["task=dyck", f"model={name}"]).model == name


def test_panm_srnn_names_a_bad_call():
    model = build_model("panm_srnn", input_size=4, output_size=4, **PANM_SMALL)  # 2^5 = 32 addresses
    x, mask = np.zeros((1, 33, 4), np.float32), np.ones((1, 33), bool)
    with pytest.raises(UserError, match=r"inputs: expected at most 2\^address_bits = 32 memory slots, got L = 33"):
        model(x, mask, 33, aligned=True)
    with pytest.raises(UserError, match="key: expected a PRNG key"):
        model(x[:, :4], mask[:, :4], 4, aligned=True, train=True)
