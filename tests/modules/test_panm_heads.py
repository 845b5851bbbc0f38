"""PANM's pointer counts (Le et al. 2024, App. C and D.6): H^a = 0..3 Mode-1 heads started at the base, end
and middle addresses, H^c = 0..2 Mode-2 heads, and what H^a = 0 and H^c = 0 remove."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from panm_jax.errors import UserError
from panm_jax.kernels import pointer
from panm_jax.models.panm import AuthorsCode, PANMConfig
from panm_jax.models.registry import build_model
from panm_jax.modules.panm import DecoderConfig, PANMDecoder, lengths, start_addresses

D, BITS, K = 4, 4, 3
SMALL = dict(hidden=D, address_bits=BITS, mlp_hidden=4)
# The whole model forward and backward takes seconds per count, so three counts stand for the twelve
# (H^c > 0 needs H^a > 0, Eq. 4): no head at all, the fewest Mode-1 heads with the most Mode-2 heads, and the
# most Mode-1 heads without Mode 2. The default (2, 1) runs in every other PANM test.
WHOLE_MODEL_COUNTS = [(0, 0), (1, 2), (3, 0)]


def _decoder(ha: int, hc: int) -> PANMDecoder:
    return PANMDecoder(DecoderConfig(pointer_heads=ha, mode2_heads=hc, **SMALL), K, rngs=nnx.Rngs(0))


def _inputs():
    rng = np.random.default_rng(0)
    memory = jnp.asarray(rng.normal(size=(2, 5, D)), jnp.float32)
    mask = jnp.asarray([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], bool)
    return memory, mask, jnp.asarray([3, 14], jnp.int32)


@pytest.mark.parametrize("ha, hc", WHOLE_MODEL_COUNTS)
def test_the_counts_run_forward_and_backward_with_the_shapes_of_their_heads(ha, hc):
    model = build_model("panm", input_size=5, output_size=K, seed=0, pointer_heads=ha, mode2_heads=hc, **SMALL)
    x = jnp.asarray(np.random.default_rng(1).normal(size=(2, 6, 5)), jnp.float32)
    mask = jnp.asarray(np.arange(6)[None] < np.array([6, 4])[:, None])
    logits, traces = model(x, mask, 3, return_traces=True)
    assert logits.shape == (2, 3, K)
    assert traces.pointer_weights.shape == (2, 3, ha, 6) and traces.pointer_values.shape == (2, 3, ha, BITS)
    assert traces.mode2_weights.shape == (2, 3, hc, 6)

    def loss(m):
        return jnp.mean(m(x, mask, 3, train=True, key=jax.random.key(0)) ** 2)

    grads = nnx.grad(loss)(model)
    leaves = jax.tree_util.tree_leaves(grads)
    assert leaves and all(bool(jnp.all(jnp.isfinite(g))) for g in leaves)
    assert all(g.size for g in leaves)  # no empty parameter for a head that is not there


def test_the_heads_start_at_the_base_end_and_middle_addresses():
    # a_B, l(X) -> a_E = a_B + l(X) - 1, a_M = a_B + ceil(l(X) / 2) - 1, mod 2^4, by hand:
    base, length = jnp.asarray([0, 14, 5, 9]), jnp.asarray([10, 5, 1, 4])
    expected = [[0, 9, 4], [14, 2, 0], [5, 5, 5], [9, 12, 10]]
    for heads in range(4):
        got = start_addresses(base, length, heads, BITS)
        assert got.shape == (4, heads)
        np.testing.assert_array_equal(got, np.asarray(expected)[:, :heads])


@pytest.mark.parametrize("ha", [1, 2, 3])
def test_the_decoder_feeds_each_head_the_binary_code_of_its_start(ha):
    memory, mask, base = _inputs()
    decoder = _decoder(ha, 0)
    carry = decoder.start(decoder.context(memory, mask, base))
    # lengths 4 and 5 at bases 3 and 14: (a_B, a_E, a_M) = (3, 6, 4) and (14, 2, 0) (mod 16)
    want = np.asarray([[3, 6, 4], [14, 2, 0]])[:, :ha]
    codes = jax.vmap(jax.vmap(lambda a: pointer.address_bits(a, BITS)))(jnp.asarray(want))
    np.testing.assert_array_equal(carry.pointers, codes)
    np.testing.assert_array_equal(start_addresses(base, lengths(mask), ha, BITS), want)


def _moved(memory):
    # The same sum over the real slots (h^c_0 = sum_i M[i]), other contents: what a pointer would read differs.
    shift = jnp.asarray([1.0, -2.0, 0.5, 3.0], jnp.float32)
    return memory.at[:, 0].add(shift).at[:, 1].add(-shift)


def test_without_mode_1_the_decoder_reads_the_memory_only_through_the_controller_start():
    memory, mask, base = _inputs()
    moved = _moved(memory)
    np.testing.assert_allclose(
        _decoder(0, 0).controller_start_state(moved, mask), _decoder(0, 0).controller_start_state(memory, mask),
        atol=1e-5,
    )  # fmt: skip
    none = _decoder(0, 0)
    np.testing.assert_allclose(none(moved, mask, base, 3), none(memory, mask, base, 3), atol=1e-5)
    one = _decoder(1, 0)  # the control: one Mode-1 head reads the moved contents
    assert float(jnp.max(jnp.abs(one(moved, mask, base, 3) - one(memory, mask, base, 3)))) > 1e-3
    assert not any(hasattr(none, name) for name in ("pointer_units", "address_embedding", "pointer_temperature"))


def test_without_mode_2_what_a_mode_2_head_would_read_changes_nothing(monkeypatch):
    memory, mask, base = _inputs()
    with_mode2, without = _decoder(2, 1), _decoder(2, 0)
    before = {"with": with_mode2(memory, mask, base, 3), "without": without(memory, mask, base, 3)}

    mode2 = PANMDecoder.mode2

    def garbage(self, q, context):  # every Mode-2 read replaced by a large constant
        values, weights = mode2(self, q, context)
        return jnp.full_like(values, 7.0), weights

    monkeypatch.setattr(PANMDecoder, "mode2", garbage)
    np.testing.assert_array_equal(without(memory, mask, base, 3), before["without"])
    assert float(jnp.max(jnp.abs(with_mode2(memory, mask, base, 3) - before["with"]))) > 1e-3  # the control
    assert not hasattr(without, "query_net")


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(pointer_heads=4), "pointer_heads: expected an integer in [0, 3], got 4"),
        (dict(pointer_heads=-1), "pointer_heads: expected an integer in [0, 3], got -1"),
        (dict(pointer_heads=True), "pointer_heads: expected an integer in [0, 3], got True"),
        (dict(mode2_heads=-1), "mode2_heads: expected a non-negative integer, got -1"),
        (dict(pointer_heads=0), "mode2_heads: expected 0 with pointer_heads = 0 (Eq. 4 builds the Mode-2 query"),
    ],
)
def test_a_count_out_of_range_is_named(options, message):
    with pytest.raises(UserError, match=re.escape(message)):
        DecoderConfig(**options)
    with pytest.raises(UserError, match=re.escape(message)):
        build_model("panm", input_size=5, output_size=K, **options)


def test_without_mode_1_the_options_acting_on_pointers_are_refused():
    with pytest.raises(
        UserError, match=r"pointer_heads: 0 \(no Mode 1\) .*got variant 'ours' with distractors = 3, snap"
    ):
        PANMConfig.from_options(pointer_heads=0, mode2_heads=0, distractors=3, snap_pointers="eval")
    with pytest.raises(UserError, match=r"got variant 'authors_code' with controller_start = 'encoder_final'"):
        PANMConfig.from_options(pointer_heads=0, mode2_heads=0, controller_start="encoder_final")
    with pytest.raises(UserError, match=r"got variant 'authors_code'$"):
        PANMConfig(pointer_heads=0, mode2_heads=0, variant=AuthorsCode())
    PANMConfig.from_options(pointer_heads=0, mode2_heads=0, controller_start="mean", encoder="bigru", init="pytorch")
