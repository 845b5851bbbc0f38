"""PANM's ``eq3_addresses="authors_view"``: Eq. 3 over the authors' code's reshaped bank (a measurement option)."""

from __future__ import annotations

import numpy as np
import pytest

from panm_jax.models.panm import PANMConfig
from panm_jax.models.registry import build_model
from panm_jax.modules.panm import authors_view


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
    import jax

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
        PANMConfig(eq3_addresses="view")
