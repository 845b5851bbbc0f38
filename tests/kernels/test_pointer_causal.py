"""Tests of ``pointer.causal_mask``: the causal memory of a decoder-only PANM (Le et al. 2024, §3.2).

At decoding step ``t`` the memory mask admits the real slots ``n <= t`` only, and both Mode 1's
address attention (Eq. 2-3) and Mode 2's content attention (Eq. 5-6) run over that prefix. Checked:
the mask itself (traced step, leading axes, bad arguments); that no output of step ``t``, nor its
gradient, depends on a slot after ``t`` (perturbed, compared bit for bit under ``lax.scan``, ``vmap``
and ``jit``); that the weights are distributions over the prefix; a float64 NumPy transcription of
Eq. 2, 3, 5, 6 over the prefix; and finite-difference gradients in float64.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from panm_jax.kernels import pointer as P
from tests.conftest import x64

L, D, A, HA, HC = 7, 5, 4, 2, 1
REAL = 6  # l(X): slot 6 is padding
MASK = np.arange(L) < REAL


def _inputs(seed: int, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return {
        "keys": rng.normal(size=(L, HA, D)).astype(dtype),  # h^a_t, one per step
        "queries": rng.normal(size=(L, HC, D)).astype(dtype),  # q_t, one per step
        "embedded": rng.normal(size=(L, D)).astype(dtype),  # g^a(A[n])
        "memory": rng.normal(size=(L, D)).astype(dtype),  # M (raw token embeddings)
    }


def _step(t, keys, queries, embedded, memory, addresses, mask, beta):
    """Step ``t`` of a decoder-only PANM's memory access, in the kernel's functions."""
    causal = P.causal_mask(mask, t)
    w_a = P.address_attention(keys, embedded, causal, inverse_temperature=beta)  # Eq. 2
    read = P.relational_access(queries, memory, causal, inverse_temperature=beta)  # Eq. 5-6
    return {
        "w_a": w_a,
        "p_a": P.pointer_values(w_a, addresses),  # Eq. 3
        "mode1": P.dereference(w_a, memory),  # *p^a_t = M w^a_t
        "w_c": read.weights,
        "mode2": read.values,
    }


def _rollout(keys, queries, embedded, memory, mask, beta=3.0):
    """Every step ``t = 0 .. L-1`` in one ``lax.scan`` (the step counter is traced)."""
    addresses = P.binary_addresses(jnp.int32(5), L, A, dtype=memory.dtype)

    def body(_, x):
        t, k, q = x
        return None, _step(t, k, q, embedded, memory, addresses, mask, beta)

    return jax.lax.scan(body, None, (jnp.arange(L), keys, queries))[1]


# ---- the mask ------------------------------------------------------------------------------


def test_causal_mask_admits_the_real_prefix():
    mask = np.array([1, 1, 1, 1, 0])
    for t in range(-1, 6):
        want = [(n <= t) and mask[n] == 1 for n in range(5)]
        np.testing.assert_array_equal(P.causal_mask(mask, t), want)


def test_causal_mask_traced_step_and_leading_axes():
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], bool)
    steps = jnp.array([2, 0])
    got = jax.jit(P.causal_mask)(mask, steps)
    np.testing.assert_array_equal(got, [[1, 1, 1, 0], [1, 0, 0, 0]])
    # One step for the batch, and vmap over examples, agree with the batched call.
    np.testing.assert_array_equal(P.causal_mask(mask, 1), [[1, 1, 0, 0], [1, 1, 0, 0]])
    np.testing.assert_array_equal(jax.vmap(P.causal_mask)(mask, steps), got)


@pytest.mark.parametrize(
    ("mask", "step", "match"),
    [
        (np.ones(()), 0, "mask: expected shape"),
        (np.ones(4), 1.5, "step: expected an integer"),
        (np.ones(4), np.array([1, 2]), r"step: expected shape \[\] or the leading axes"),
        (np.ones((2, 4)), np.array([1, 2, 3]), r"step: expected shape \[\] or the leading axes"),
    ],
)
def test_causal_mask_bad_arguments(mask, step, match):
    with pytest.raises(ValueError, match=match):
        P.causal_mask(mask, step)


# ---- step t does not depend on anything after t -----------------------------------------------


def test_no_output_depends_on_a_later_slot_bit_for_bit():
    # One compiled program, run on the inputs and on each perturbation of them: bit-for-bit equality is a
    # claim about what the program reads (two programs may round differently, so both sides share one).
    x = _inputs(0)
    rollout = jax.jit(lambda embedded, memory: _rollout(x["keys"], x["queries"], embedded, memory, MASK))
    base = rollout(x["embedded"], x["memory"])
    rng = np.random.default_rng(1)
    noise_memory = rng.normal(scale=1e3, size=(L, D)).astype(np.float32)
    noise_embedded = rng.normal(scale=1e3, size=(L, D)).astype(np.float32)
    worst = 0.0
    for t in range(L):
        # Every memory row and address key after slot t replaced by something else entirely.
        later = (np.arange(L) > t)[:, None]
        memory = np.where(later, noise_memory, np.asarray(x["memory"]))
        embedded = np.where(later, noise_embedded, np.asarray(x["embedded"]))
        got = rollout(embedded, memory)
        for name in base:
            a, b = np.asarray(got[name])[t], np.asarray(base[name])[t]  # step t of each rollout
            worst = max(worst, float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()))
            np.testing.assert_array_equal(a, b, err_msg=f"{name}, step {t}")
    assert worst == 0.0  # the largest difference observed: exactly 0


def test_the_gradient_never_reaches_a_later_slot():
    x = _inputs(2)
    t = 3

    def loss(memory, embedded):
        out = _rollout(x["keys"], x["queries"], embedded, memory, MASK)
        return sum(jnp.sum(jnp.sin(out[name][t])) for name in out)

    g_memory, g_embedded = jax.jit(jax.grad(loss, argnums=(0, 1)))(x["memory"], x["embedded"])
    assert np.all(np.asarray(g_memory)[t + 1 :] == 0) and np.all(np.asarray(g_embedded)[t + 1 :] == 0)
    assert np.any(np.asarray(g_memory)[: t + 1] != 0) and np.any(np.asarray(g_embedded)[: t + 1] != 0)


# ---- the weights are distributions over the prefix ----------------------------------------------


def test_weights_are_distributions_over_the_prefix():
    x = _inputs(3)
    out = jax.jit(_rollout)(x["keys"], x["queries"], x["embedded"], x["memory"], MASK)
    for name in ("w_a", "w_c"):
        w = np.asarray(out[name], np.float64)  # [T, H, L]
        for t in range(L):
            prefix = min(t + 1, REAL)
            np.testing.assert_allclose(w[t].sum(axis=-1), 1.0, rtol=1e-6, err_msg=f"{name} at t={t}")
            assert np.all(w[t][:, :prefix] > 0), f"{name} at t={t}"
            assert np.all(w[t][:, prefix:] == 0), f"{name} at t={t}"


# ---- a float64 NumPy transcription of Le et al. 2024, Eq. 2, 3, 5, 6 over the prefix -------------


def _cos(a, b):
    return a @ b / (np.linalg.norm(a) * np.linalg.norm(b))


def _ref_step(t, keys, queries, embedded, memory, addresses, beta):
    """Step ``t`` from the paper's equations, with the softmax over ``1 <= n <= min(t+1, l(X))`` (1-based)."""
    prefix = min(t + 1, REAL)
    out = {"w_a": np.zeros((HA, L)), "w_c": np.zeros((HC, L))}
    for h in range(HA):  # Eq. 2: w^a_t[n] = softmax_n(beta cos(h^a_t, g^a(A[n])))
        e = np.array([np.exp(beta * _cos(keys[h], embedded[n])) for n in range(prefix)])
        out["w_a"][h, :prefix] = e / e.sum()
    for h in range(HC):  # Eq. 5: w^c_t[n] = softmax_n(beta cos(q_t, M[n]))
        e = np.array([np.exp(beta * _cos(queries[h], memory[n])) for n in range(prefix)])
        out["w_c"][h, :prefix] = e / e.sum()
    out["p_a"] = np.array([sum(out["w_a"][h, n] * addresses[n] for n in range(L)) for h in range(HA)])  # Eq. 3
    out["mode1"] = np.array([sum(out["w_a"][h, n] * memory[n] for n in range(L)) for h in range(HA)])  # M w^a_t
    out["mode2"] = np.array([sum(out["w_c"][h, n] * memory[n] for n in range(L)) for h in range(HC)])  # Eq. 6
    return out


def test_matches_a_float64_transcription_of_the_paper():
    x = _inputs(4, np.float64)
    beta = 3.0
    with x64():
        got = jax.jit(_rollout)(*(jnp.asarray(x[k]) for k in ("keys", "queries", "embedded", "memory")), MASK, beta)
        addresses = np.asarray(P.binary_addresses(jnp.int32(5), L, A, dtype=jnp.float64))
    for t in range(L):
        want = _ref_step(t, x["keys"][t], x["queries"][t], x["embedded"], x["memory"], addresses, beta)
        for name, value in want.items():
            np.testing.assert_allclose(np.asarray(got[name][t]), value, rtol=1e-12, atol=1e-14, err_msg=f"{name} t={t}")


def test_gradients_match_finite_differences_in_float64():
    x = _inputs(5, np.float64)
    with x64():
        addresses = P.binary_addresses(jnp.int32(5), L, A, dtype=jnp.float64)

        def f(keys, queries, embedded, memory):
            # Step 3 alone (a traced t under jit is covered above): every output, reduced.
            out = _step(jnp.int32(3), keys, queries, embedded, memory, addresses, MASK, 2.0)
            return sum(jnp.sum(jnp.tanh(v)) for v in out.values())

        args = tuple(jnp.asarray(x[k][3] if k in ("keys", "queries") else x[k]) for k in x)
        # Reverse mode only: the cosine has a custom VJP (no forward-mode rule).
        check_grads(jax.jit(f), args, order=1, modes=("rev",), eps=1e-6, atol=1e-7, rtol=1e-7)
