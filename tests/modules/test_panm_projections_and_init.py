"""Two more of the PANM authors' code's choices, as options to measure them (not the paper's model).

``attention_projections``: the query, key, value and output projections of the
``torch.nn.MultiheadAttention`` through which that code reads Modes 1 and 2, checked
against a float64 NumPy transcription of ``q' = W_q q + b_q``, ``K' = K W_k + b_k``,
``V' = M W_v + b_v``, ``r = W_o (w V') + b_o``; ``init="pytorch"``: torch.nn's default
initialisation, checked layer by layer against PyTorch's documented bounds.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from panm_jax.models.panm import PANMConfig
from panm_jax.models.registry import build_model
from panm_jax.modules.panm import DecoderCarry
from panm_jax.modules.panm_authors import AuthorsContext

SMALL = dict(hidden=8, mlp_hidden=8, address_bits=5)


def _np(x) -> np.ndarray:
    return np.asarray(x, np.float64)


def _score(q: np.ndarray, k: np.ndarray, score: str) -> np.ndarray:
    """``[D]`` against ``[N, D]``: the cosine (the paper) or ``q . k / sqrt(D)`` (the authors' code)."""
    if score == "cosine":
        return k @ q / (np.linalg.norm(k, axis=1) * np.linalg.norm(q))
    return k @ q / math.sqrt(q.shape[0])


def _softmax(scores: np.ndarray, tau: float, real: np.ndarray) -> np.ndarray:
    e = np.where(real, np.exp(tau * (scores - scores[real].max())), 0.0)
    return e / e.sum()


def _proj(p, name: str, h: int, x: np.ndarray) -> np.ndarray:
    """Head ``h``'s ``x W + b`` for projection ``name`` of an ``AttentionProjections``."""
    return x @ _np(getattr(p, f"{name}_kernel")[...])[h] + _np(getattr(p, f"{name}_bias")[...])[h]


def _randomise(module, seed: int) -> None:
    # Non-zero biases everywhere, so that every b of the equations is tested.
    state = nnx.state(module, nnx.Param)
    leaves, tree = jax.tree_util.tree_flatten(state)
    rng = np.random.default_rng(seed)
    leaves = [jnp.asarray(rng.normal(scale=0.5, size=x.shape), x.dtype) for x in leaves]
    nnx.update(module, jax.tree_util.tree_unflatten(tree, leaves))


@pytest.mark.parametrize("score", ["cosine", "scaled_dot"])
def test_both_modes_read_through_their_heads_projections(score):
    model = build_model("panm", input_size=5, output_size=3, seed=0, attention_projections=True, score=score,
                        mode2_heads=2, **SMALL)  # fmt: skip
    dec = model.decoder
    _randomise(dec.pointer_projections, 1)
    _randomise(dec.mode2_projections, 2)
    rng = np.random.default_rng(3)
    b, length, d, ha, hc = 2, 6, 8, 2, 2
    memory = jnp.asarray(rng.normal(size=(b, length, d)), jnp.float32)
    mask = np.array([[1, 1, 1, 1, 0, 0], [1] * 6], bool)
    keys = jnp.asarray(rng.normal(size=(b, length, d)), jnp.float32)  # g^a(A), any values
    tau_a, tau_c = np.array([2.0, 3.0]), np.array([1.5, 4.0])
    projected = dict(
        pointer_keys=dec.pointer_projections.keys(keys),
        pointer_values=dec.pointer_projections.values(memory),
        mode2_keys=dec.mode2_projections.keys(memory),
        mode2_values=dec.mode2_projections.values(memory),
    )
    ctx = AuthorsContext(memory, jnp.asarray(mask), keys, None, jnp.asarray(mask), jnp.asarray(tau_a, jnp.float32),
                         jnp.asarray(tau_c, jnp.float32), **projected)  # fmt: skip

    # Eq. 2 through the projections: each head's W_q h^a_t + b_q against its W_k g^a(A[n]) + b_k.
    carry = DecoderCarry(jnp.asarray(rng.normal(size=(b, ha, d)), jnp.float32), jnp.asarray(rng.random((b, ha, 5)),
                   jnp.float32), jnp.zeros((b, d)))  # fmt: skip
    codes = jnp.asarray(rng.integers(0, 2, size=(b, length, 5)), jnp.float32)
    pu_hidden, w_a, _ = dec.point(carry, dataclasses.replace(ctx, codes=codes))
    pp, mp = dec.pointer_projections, dec.mode2_projections
    for i in range(b):
        for h in range(ha):
            q = _proj(pp, "query", h, _np(pu_hidden)[i, h])
            k = _proj(pp, "key", h, _np(keys)[i])
            want = _softmax(_score(q, k, score), tau_a[h], mask[i])
            np.testing.assert_allclose(_np(w_a)[i, h], want, rtol=2e-5, atol=1e-6)

    # Mode 1 reads W_o (w V) + b_o with V = M W_v + b_v; Mode 2 likewise, from q_t = g^c(Mode 1's values).
    values, w_c = dec.read(w_a, ctx)
    values, w_c = _np(values), _np(w_c)
    mode1 = np.stack([
        np.stack([_proj(pp, "output", h, _np(w_a)[i, h] @ _proj(pp, "value", h, _np(memory)[i])) for h in range(ha)])
        for i in range(b)
    ])  # fmt: skip
    np.testing.assert_allclose(values[:, : ha * d], mode1.reshape(b, -1), rtol=2e-5, atol=2e-5)
    queries = _np(dec.query_net(jnp.asarray(mode1.reshape(b, -1), jnp.float32))).reshape(b, hc, d)  # Eq. 4
    for i in range(b):
        for h in range(hc):
            q = _proj(mp, "query", h, queries[i, h])
            w = _softmax(_score(q, _proj(mp, "key", h, _np(memory)[i]), score), tau_c[h], mask[i])
            np.testing.assert_allclose(w_c[i, h], w, rtol=2e-5, atol=1e-6)
            read = _proj(mp, "output", h, w @ _proj(mp, "value", h, _np(memory)[i]))
            np.testing.assert_allclose(values[i, (ha + h) * d : (ha + h + 1) * d], read, rtol=2e-5, atol=2e-5)


def _count(model) -> int:
    return sum(int(np.prod(x.shape)) for x in jax.tree_util.tree_leaves(nnx.state(model, nnx.Param)))


def test_identity_projections_are_the_plain_decoder():
    d = SMALL["hidden"]
    plain = build_model("panm", input_size=5, output_size=3, seed=0, **SMALL)
    proj = build_model("panm", input_size=5, output_size=3, seed=0, attention_projections=True, **SMALL)
    # Four [D, D] kernels and four [D] biases per head: 2 Mode-1 heads and 1 Mode-2 head.
    assert _count(proj) - _count(plain) == 3 * 4 * (d * d + d)
    nnx.update(proj, nnx.state(plain, nnx.Param))  # every shared parameter equal
    for p in (proj.decoder.pointer_projections, proj.decoder.mode2_projections):
        for name in ("query", "key", "value", "output"):
            kernel = getattr(p, f"{name}_kernel")
            kernel[...] = jnp.broadcast_to(jnp.eye(d), kernel[...].shape)
            getattr(p, f"{name}_bias")[...] = jnp.zeros_like(getattr(p, f"{name}_bias")[...])
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 6, 5)).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 0, 0], [1] * 6], bool)
    want = np.asarray(plain(x, mask, 4))
    np.testing.assert_allclose(np.asarray(proj(x, mask, 4)), want, rtol=1e-5, atol=1e-6)
    # Anything else than the identity changes the model.
    proj.decoder.pointer_projections.value_bias[...] = jnp.ones((2, d))
    assert not np.allclose(np.asarray(proj(x, mask, 4)), want)


def _bound(param) -> float:
    return float(np.max(np.abs(np.asarray(param[...]))))


def test_pytorch_init_draws_each_layer_within_pytorchs_bounds():
    d, m = 32, 16
    hp = dict(hidden=d, mlp_hidden=m, address_bits=6, encoder="bigru", attention_projections=True,
              controller_attention=True)  # fmt: skip
    flax_model = build_model("panm", input_size=5, output_size=3, seed=0, **hp)
    torch_model = build_model("panm", input_size=5, output_size=3, seed=0, init="pytorch", **hp)
    again = build_model("panm", input_size=5, output_size=3, seed=0, init="pytorch", **hp)
    assert _count(torch_model) == _count(flax_model)
    dec, enc = torch_model.decoder, torch_model.encoder

    def uniform(param, bound):  # fills [-bound, bound]: within it, and reaching most of it
        assert _bound(param) <= bound + 1e-7
        assert _bound(param) > 0.8 * bound

    gru = 1 / math.sqrt(d)  # nn.GRU: every weight and bias U(1/sqrt(D))
    for cell in (enc.forward_cell, enc.backward_cell, dec.controller):
        for layer in (cell.input_proj, cell.hidden_proj):
            uniform(layer.kernel, gru)
            uniform(layer.bias, gru)
    pu = dec.pointer_units
    for param in (pu.input_kernel, pu.input_bias, pu.hidden_kernel, pu.hidden_bias):
        uniform(param, gru)
    # nn.Linear(I, O): weight and bias U(1/sqrt(I)), I the fan-in.
    for layer, fan_in in ((dec.address_embedding.hidden_layer, 6), (dec.address_embedding.output_layer, m),
                          (dec.output_net.hidden_layer, 4 * d + d), (dec.query_net.hidden_layer, 2 * d)):  # fmt: skip
        uniform(layer.kernel, 1 / math.sqrt(fan_in))
        uniform(layer.bias, 1 / math.sqrt(fan_in))
    # nn.MultiheadAttention(E, E, E): in-projections Xavier over [3E, E], zero biases; out_proj nn.Linear's weight.
    for p in (dec.pointer_projections, dec.mode2_projections):
        for name in ("query", "key", "value"):
            uniform(getattr(p, f"{name}_kernel"), math.sqrt(6 / (4 * d)))
        uniform(p.output_kernel, 1 / math.sqrt(d))
        for name in ("query", "key", "value", "output"):
            assert _bound(getattr(p, f"{name}_bias")) == 0
    # The authors' additive attention: one nn.Linear over [h; M_j] (fan-in 2D), v ~ U(1/sqrt(A)).
    att = dec.memory_attention
    for param in (att.query_proj.kernel, att.query_proj.bias, att.key_proj.kernel):
        uniform(param, 1 / math.sqrt(2 * d))
    uniform(att.score.kernel, 1 / math.sqrt(d))
    # Untouched: the inverse temperatures. Reproducible per seed, and not flax's draws.
    np.testing.assert_array_equal(np.asarray(dec.pointer_temperature[...]),
                                  np.asarray(flax_model.decoder.pointer_temperature[...]))  # fmt: skip
    for a, b in zip(jax.tree_util.tree_leaves(nnx.state(torch_model)), jax.tree_util.tree_leaves(nnx.state(again))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.allclose(np.asarray(dec.controller.input_proj.kernel[...]),
                           np.asarray(flax_model.decoder.controller.input_proj.kernel[...]))  # fmt: skip
    # The default LSTM encoder is an nn.LSTM: U(1/sqrt(D)) too.
    lstm = build_model("panm", input_size=5, output_size=3, seed=0, init="pytorch", hidden=d, mlp_hidden=m)
    uniform(lstm.encoder.cell.hidden_proj.kernel, gru)
    uniform(lstm.encoder.cell.input_proj.bias, gru)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (dict(attention_projections="yes"), r"attention_projections: expected true or false, got 'yes'"),
        (dict(init="torch"), r"init: expected one of \['flax', 'pytorch'\], got 'torch'"),
        (dict(init="pytorch", encoder="transformer"), r"init: 'pytorch' is defined for the recurrent encoders"),
    ],
)
def test_bad_options_are_refused_by_name(option, message):
    with pytest.raises(ValueError, match=message):
        PANMConfig.from_options(**option)
