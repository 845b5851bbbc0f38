"""PANM's options that reproduce the authors' public code, to measure them (not the paper's model).

``eq3_addresses="authors_view"`` (Eq. 3 over that code's reshaped bank),
``controller_attention`` (its additive attention over M feeding the Controller)
and ``mode2_dropout`` (its dropout on the Mode-2 weights in training).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.models.panm import PANMConfig
from panm_jax.models.registry import build_model
from panm_jax.modules.panm_authors import authors_view


def _torch_view(bank_bla: np.ndarray) -> np.ndarray:
    """``A.view(B, L, A)`` of a C-contiguous ``[L, B, A]`` tensor, written out index by index."""
    length, batch, bits = bank_bla.shape
    flat = [bank_bla[k // batch, k % batch] for k in range(length * batch)]  # row k of the [L*B, A] memory
    return np.stack([np.stack([flat[i * length + j] for j in range(length)]) for i in range(batch)])


def test_the_view_is_pytorchs_reshape_of_the_sequence_first_bank():
    rng = np.random.default_rng(0)
    bank = rng.integers(0, 2, size=(3, 5, 4)).astype(np.float32)  # [B, L, A], distinct rows
    got = np.asarray(authors_view(bank))
    np.testing.assert_array_equal(got, _torch_view(np.transpose(bank, (1, 0, 2))))
    # Example 0's rows are the first rows of examples 0, 1, 2, 0, 1 (rows 0, 0, 0, 1, 1):
    np.testing.assert_array_equal(got[0], bank[[0, 1, 2, 0, 1], [0, 0, 0, 1, 1]])
    np.testing.assert_array_equal(np.asarray(authors_view(bank[:1])), bank[:1])  # B = 1: unchanged


def _traces(eq3: str, x, mask):
    model = build_model("panm", input_size=5, output_size=3, seed=0, hidden=8, mlp_hidden=8, address_bits=5,
                        eq3_addresses=eq3, random_base_at_eval=True)  # fmt: skip

    logits, traces = model(x, mask, 4, return_traces=True, key=jax.random.key(3))
    return model, np.asarray(logits), traces


def _bank(base: np.ndarray, length: int, bits: int) -> np.ndarray:
    """``[B, L, bits]``: ``bin((a_B + j) mod 2^bits)``, least significant bit first."""
    values = (base[:, None] + np.arange(length)[None, :]) % 2**bits
    return ((values[..., None] >> np.arange(bits)) & 1).astype(np.float64)


def test_the_pointer_is_the_weights_times_the_viewed_bank_and_the_default_is_untouched():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 6, 5)).astype(np.float32)
    mask = np.ones((3, 6), bool)
    for eq3 in ("own", "authors_view"):
        _, _, tr = _traces(eq3, x, mask)
        base = np.asarray(tr.base)
        assert len(set(base.tolist())) == 3  # three different bases: the view mixes distinct banks
        bank = _bank(base, 6, 5)
        codes = np.transpose(bank, (1, 0, 2)).reshape(bank.shape) if eq3 == "authors_view" else bank
        want = np.einsum("bthl,bla->btha", np.asarray(tr.pointer_weights, np.float64), codes)
        np.testing.assert_allclose(np.asarray(tr.pointer_values), want, atol=1e-5)
    # The option adds no parameter and changes the pointers fed back, hence the logits.
    own_model, own_logits, _ = _traces("own", x, mask)
    view_model, view_logits, _ = _traces("authors_view", x, mask)
    assert not np.allclose(own_logits, view_logits)
    # At B = 1 the view is the bank itself: the same logits.
    np.testing.assert_allclose(_traces("own", x[:1], mask[:1])[1], _traces("authors_view", x[:1], mask[:1])[1])


def test_a_bad_value_is_refused_by_name():
    with pytest.raises(ValueError, match=r"eq3_addresses: expected one of \['own', 'authors_view'\], got 'view'"):
        PANMConfig.from_options(eq3_addresses="view")


SMALL = dict(hidden=8, mlp_hidden=8, address_bits=5)


def _count(model) -> int:
    from flax import nnx

    return sum(int(np.prod(x.shape)) for x in jax.tree_util.tree_leaves(nnx.state(model, nnx.Param)))


def test_controller_attention_adds_its_parameters_and_reads_only_real_slots():
    d, h = SMALL["hidden"], SMALL["mlp_hidden"]
    base = build_model("panm", input_size=5, output_size=3, seed=0, **SMALL)
    attn = build_model("panm", input_size=5, output_size=3, seed=0, controller_attention=True, **SMALL)
    assert not hasattr(base.decoder, "memory_attention")  # the paper's decoder
    # W_k (d x d), W_q (d x d + d), v (d); the Controller's input kernel takes c_t (d x 3d); g^o's first layer too (d x h).
    assert _count(attn) - _count(base) == (d * d) + (d * d + d) + d + d * 3 * d + d * h
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 6, 5)).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], bool)
    out = np.asarray(attn(x, mask, 4))
    assert not np.allclose(out, np.asarray(base(x, mask, 4)))
    garbled = x.copy()
    garbled[0, 4:] = 1e3  # padded steps: the encoder skips them, and neither attention may read them
    np.testing.assert_allclose(np.asarray(attn(garbled, mask, 4)), out, rtol=1e-5, atol=1e-5)


def test_mode2_dropout_acts_in_training_only_and_keeps_the_read_unbiased():
    x = np.random.default_rng(3).normal(size=(2, 6, 5)).astype(np.float32)
    mask = np.ones((2, 6), bool)
    plain = build_model("panm", input_size=5, output_size=3, seed=0, **SMALL)
    drop = build_model("panm", input_size=5, output_size=3, seed=0, mode2_dropout=0.5, **SMALL)
    assert _count(plain) == _count(drop)  # no parameter of its own
    np.testing.assert_array_equal(np.asarray(drop(x, mask, 4)), np.asarray(plain(x, mask, 4)))  # evaluation
    key = jax.random.key(5)
    a = np.asarray(drop(x, mask, 4, train=True, key=key))
    assert not np.allclose(a, np.asarray(plain(x, mask, 4, train=True, key=key)))
    np.testing.assert_array_equal(a, np.asarray(drop(x, mask, 4, train=True, key=key)))  # a key fixes it
    # E[M (w * keep / (1 - p))] = M w: the mean of many dropped reads is the plain read.
    from panm_jax.modules.panm_authors import AuthorsContext

    dec = drop.decoder
    rng = np.random.default_rng(4)
    memory = jnp.asarray(rng.normal(size=(2, 6, 8)), jnp.float32)
    w_a = jax.nn.softmax(jnp.asarray(rng.normal(size=(2, 2, 6)), jnp.float32), axis=-1)
    ctx = AuthorsContext(memory, jnp.ones((2, 6), bool), None, None, None, jnp.ones(2), jnp.ones(1))
    want = np.asarray(dec.read(w_a, ctx)[0])
    step = lambda k: dec.read(w_a, dataclasses.replace(ctx, step_key=k))[0]  # noqa: E731
    reads = jax.vmap(step)(jax.random.split(jax.random.key(0), 4000))
    assert not np.allclose(np.asarray(reads[0]), want)
    np.testing.assert_allclose(np.asarray(reads.mean(0)), want, atol=0.03)
    np.testing.assert_allclose(np.asarray(reads[:, :, :16]), np.broadcast_to(want[:, :16], reads[:, :, :16].shape))


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (dict(mode2_dropout=1.0), r"mode2_dropout: expected a number in \[0, 1\), got 1.0"),
        (dict(mode2_dropout=-0.1), r"mode2_dropout: expected a number in \[0, 1\), got -0.1"),
        (dict(controller_attention="yes"), r"controller_attention: expected true or false, got 'yes'"),
    ],
)
def test_bad_authors_options_are_refused_by_name(option, message):
    with pytest.raises(ValueError, match=message):
        PANMConfig.from_options(**option)
