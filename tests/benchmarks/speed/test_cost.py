"""The jaxpr FLOP/byte counter of benchmarks/speed/cost.py, on hand-countable functions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from benchmarks.speed.cost import count


def test_scan_bodies_are_multiplied_by_their_length():
    # Per step: c @ w on [4, 3] x [3, 3] = 2 * 12 * 3 = 72 FLOPs, + x (12), tanh (12): 96.
    # Five steps: 480; plus the zero carry's broadcast (12) and the final sum (1): 493.
    def f(w, xs):
        return jax.lax.scan(lambda c, x: (jnp.tanh(c @ w + x), None), jnp.zeros((4, 3)), xs)[0].sum()

    got = count(f, jnp.ones((3, 3)), jnp.ones((5, 4, 3)))
    assert got["flops"] == 493.0
    # Bytes: the [4, 3] float32 carry read and written each of 5 steps (2 * 48 * 5 = 480),
    # plus the [5, 4, 3] inputs read once (240).
    assert got["bytes"] == 720.0
    # A gradient holds the forward and the transposed scan: more than twice the forward.
    assert count(jax.grad(f), jnp.ones((3, 3)), jnp.ones((5, 4, 3)))["flops"] > 2 * 493


def test_dot_general_counts_contracted_size_and_batch():
    got = count(lambda a, b: jnp.einsum("bij,bjk->bik", a, b), jnp.ones((2, 3, 5)), jnp.ones((2, 5, 7)))
    assert got["flops"] == 2 * (2 * 3 * 7) * 5


def test_scan_carry_xs_and_ys_are_told_apart_by_shape():
    # A const (w), two carries ([4, 3] float32: 48 B; a scalar int32: 4 B), xs [5, 4, 3] and
    # ys [5, 4, 3] (240 B each). Bytes: 2 * 52 * 5 (carries read and written each step) + 240 + 240.
    def f(w, xs):
        def body(c, x):
            h, k = c
            return (h @ w + x, k + 1), h * 2.0

        return jax.lax.scan(body, (jnp.zeros((4, 3)), jnp.int32(0)), xs)

    assert count(f, jnp.ones((3, 3)), jnp.ones((5, 4, 3)))["bytes"] == 2 * 52 * 5 + 240 + 240


def test_the_dnc_link_kernel_counts_its_arithmetic():
    # The CPU kernel is a foreign call, opaque to the jaxpr: it counts (4 + 4R) N^2 per link forward and
    # (12 + 8R) N^2 backward (_dnc_link_cpu.flops). H = 2 links of N = 5, R = 3 read heads; around it, the
    # read weights broadcast to the heads (one FLOP per output element: 2 * 3 * 5 = 30) and the sum (1).
    from panm_jax.kernels import _dnc_link_cpu

    if not _dnc_link_cpu.available():
        pytest.skip(f"the DNC link's CPU kernel could not be built: {_dnc_link_cpu._register()}")
    link, vec, reads = jnp.zeros((2, 5, 5)), jnp.zeros((2, 5)), jnp.zeros((3, 5))

    def f(link):
        return jnp.sum(_dnc_link_cpu.link_and_directions(link, vec, vec, reads).forward)

    assert count(f, link)["flops"] == (4 + 4 * 3) * 2 * 25 + 30 + 1
    assert _dnc_link_cpu.flops("PanmDncLinkBackwardF32", (2, 5, 5), 3) == (12 + 8 * 3) * 2 * 25
    assert _dnc_link_cpu.flops("another_target", (2, 5, 5), 3) is None
