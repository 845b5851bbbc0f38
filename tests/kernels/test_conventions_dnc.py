"""The DNC conventions of docs/_conventions_dnc.md, one test per row.

Each test builds the peer's convention out of this library's functions (or out of
a few lines transcribed from the peer's code, cited) and checks the relation the
page states. The peers: DeepMind's ``dnc`` (github.com/deepmind/dnc, TensorFlow /
Sonnet: ``access.py``, ``addressing.py``) and ixaxaar's ``pytorch-dnc``
(github.com/ixaxaar/pytorch-dnc, ``dnc/memory.py``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.kernels import addressing, dnc

N, W, R = 7, 5, 3
EPS = 1e-6  # DeepMind's addressing._EPSILON (pytorch-dnc's util.δ has the same value)


def _random_link(rng, n=N):
    link = rng.uniform(size=(n, n)) * (1.0 - np.eye(n))
    return jnp.asarray(link / (1.5 * max(link.sum(0).max(), link.sum(1).max())), jnp.float32)


def _distributions(rng, *shape):
    return jnp.asarray(rng.dirichlet(np.ones(shape[-1]), size=shape[:-1]) * 0.9, jnp.float32)


# ---------------------------------------------------------------- read modes


def _deepmind_read_weights(modes, content, forward, backward):
    """DeepMind ``MemoryAccess._read_weights`` for one example.

    ``modes [R, 2H + 1]`` in DeepMind's order (backward_1..H, forward_1..H, content);
    ``forward`` and ``backward`` ``[R, H, N]`` (DeepMind's directional_read_weights
    layout: read head, then write head).
    """
    h = forward.shape[1]
    backward_mode, forward_mode, content_mode = modes[:, :h], modes[:, h : 2 * h], modes[:, 2 * h]
    return (
        content_mode[:, None] * content
        + jnp.sum(forward_mode[:, :, None] * forward, axis=1)
        + jnp.sum(backward_mode[:, :, None] * backward, axis=1)
    )


@pytest.mark.parametrize("h", [1, 2, 3])
def test_deepmind_read_modes_permuted_give_the_same_read_weights(h):
    rng = np.random.default_rng(0)
    links = jnp.stack([_random_link(rng) for _ in range(h)])  # [H, N, N]
    prev_read = _distributions(rng, R, N)
    content = _distributions(rng, R, N)
    # Ours: directions per write head, [H, R, N].
    directions = jax.vmap(dnc.directional_weights, in_axes=(0, None))(links, prev_read)
    logits_theirs = jnp.asarray(rng.normal(size=(R, 2 * h + 1)), jnp.float32)
    modes_theirs = jax.nn.softmax(logits_theirs, axis=-1)
    theirs = _deepmind_read_weights(
        modes_theirs, content, directions.forward.transpose(1, 0, 2), directions.backward.transpose(1, 0, 2)
    )
    order = dnc.read_mode_order_from_deepmind(h)
    if h == 1:
        np.testing.assert_array_equal(order, [0, 2, 1])
    # The permutation maps modes and logits alike (a softmax commutes with it).
    np.testing.assert_allclose(jax.nn.softmax(logits_theirs[:, order], axis=-1), modes_theirs[:, order], atol=1e-7)
    ours = dnc.read_weights(modes_theirs[:, order], directions.backward, content, directions.forward)
    np.testing.assert_allclose(ours, theirs, atol=1e-6)
    # Without the permutation the same numbers mean other modes.
    unpermuted = dnc.read_weights(modes_theirs, directions.backward, content, directions.forward)
    assert float(jnp.max(jnp.abs(unpermuted - theirs))) > 1e-3


# ---------------------------------------------------------------- strengths


def test_strengths_oneplus_here_softplus_in_the_peers():
    # Ours (Graves et al. 2016): beta = oneplus(x) = 1 + softplus(x) >= 1.
    # DeepMind (CosineWeights(strength_op=tf.nn.softplus)) and pytorch-dnc
    # (F.softplus): beta = softplus(s) > 0.
    s = jnp.linspace(-6.0, 6.0, 49)
    beta_theirs = jax.nn.softplus(s)
    np.testing.assert_allclose(addressing.oneplus(s), 1.0 + beta_theirs, rtol=1e-6)
    assert bool(jnp.all(addressing.oneplus(s) >= 1.0))
    # A peer strength >= 1 is ours at x = softplus^-1(beta - 1) = log(expm1(beta - 1)).
    rng = np.random.default_rng(1)
    memory = jnp.asarray(rng.normal(size=(N, W)), jnp.float32)
    keys = jnp.asarray(rng.normal(size=(R, W)), jnp.float32)
    big = jnp.asarray([1.5, 3.0, 8.0])
    x = jnp.log(jnp.expm1(big - 1.0))
    np.testing.assert_allclose(addressing.oneplus(x), big, rtol=1e-5)
    np.testing.assert_allclose(
        addressing.content_weights(memory, keys, addressing.oneplus(x)),
        addressing.content_weights(memory, keys, big),
        atol=1e-6,
    )
    # A peer strength below 1 (s < log(e - 1) ~ 0.541) has no oneplus counterpart:
    # its content weights are flatter than any of ours (the top slot's weight grows
    # with beta).
    small = jax.nn.softplus(jnp.asarray([-3.0, -3.0, -3.0]))
    assert bool(jnp.all(small < 1.0))
    top_theirs = jnp.max(addressing.content_weights(memory, keys, small), axis=-1)
    top_ours_flattest = jnp.max(addressing.content_weights(memory, keys, jnp.ones(R)), axis=-1)
    assert bool(jnp.all(top_theirs < top_ours_flattest))


# ---------------------------------------------------------------- allocation


def _deepmind_allocation(u):
    """DeepMind ``Freeness._allocation`` for one example, float32.

    ``tf.nn.top_k`` sorts the non-usage descending, equal values lower index first,
    which is a stable ascending sort of ``-nonusage``.
    """
    u = EPS + (1.0 - EPS) * u
    nonusage = 1.0 - u
    order = jnp.argsort(-nonusage, stable=True)
    sorted_nonusage = nonusage[order]
    sorted_usage = 1.0 - sorted_nonusage
    prod = jnp.concatenate([jnp.ones((1,), u.dtype), jnp.cumprod(sorted_usage)[:-1]])  # exclusive cumprod
    return jnp.zeros_like(u).at[order].set(sorted_nonusage * prod)


def test_deepmind_allocation_is_ours_on_the_epsilon_mapped_usage():
    rng = np.random.default_rng(2)
    for _ in range(5):
        u = jnp.asarray(rng.uniform(size=N), jnp.float32)
        theirs = _deepmind_allocation(u)
        ours_mapped = dnc.allocation(EPS + (1.0 - EPS) * u)
        np.testing.assert_allclose(theirs, ours_mapped, atol=1e-6)
        # Without the mapping the two differ by about EPS times the allocation.
        ours = dnc.allocation(u)
        assert float(jnp.max(jnp.abs(ours - theirs))) > 1e-8


def test_empty_memory_allocation_order_ours_exact_deepmind_leaks_epsilon():
    # Empty memory: every mapped usage is EPS (a tie); top_k puts slot 0 first, then
    # 1, 2, ...: a = (1 - EPS, (1 - EPS) EPS, (1 - EPS) EPS^2, ...). Ours: the stable
    # sort also puts slot 0 first, and a = e_0 exactly.
    zero = jnp.zeros(N, jnp.float32)
    theirs = _deepmind_allocation(zero)
    np.testing.assert_array_equal(dnc.allocation(zero), jnp.zeros(N).at[0].set(1.0))
    assert int(jnp.argmax(theirs)) == 0
    # (In float32 DeepMind's sorted usage 1 - (1 - EPS) is 1.0133e-6, not EPS.)
    eps_back = float(np.float32(1.0) - np.float32(1.0 - np.float32(EPS)))
    assert abs(eps_back - 1.0133e-6) < 1e-10
    np.testing.assert_allclose(theirs[:3], [1 - EPS, (1 - EPS) * eps_back, (1 - EPS) * eps_back**2], rtol=1e-5)
    assert bool(jnp.all(jnp.diff(theirs) < 0))  # slot order


def test_deepmind_ties_usages_closer_than_float32_resolution_of_one_minus_u():
    # DeepMind sorts 1 - u in float32, where numbers just below 1 are ~6e-8 apart:
    # usages 3e-8 and 0 tie there and slot 0 (the used one) comes first. Ours sorts u
    # itself and takes the free slot 1, also after the same epsilon mapping.
    u = jnp.zeros(N, jnp.float32).at[0].set(3e-8)
    theirs = _deepmind_allocation(u)
    assert int(jnp.argmax(theirs)) == 0
    assert int(jnp.argmax(dnc.allocation(u))) == 1
    assert int(jnp.argmax(dnc.allocation(EPS + (1.0 - EPS) * u))) == 1
    # Far enough apart (1e-7), both take the free slot.
    u = u.at[0].set(1e-7)
    assert int(jnp.argmax(_deepmind_allocation(u))) == int(jnp.argmax(dnc.allocation(u))) == 1


# ---------------------------------------------------------------- usage


def test_usage_form_and_the_stop_gradient_option():
    # DeepMind (and pytorch-dnc): u + (1 - u)(1 - prod_h (1 - w_h)), then o psi;
    # ours applies the heads in turn, the same number to rounding, and exactly 1
    # after a full write in both.
    rng = np.random.default_rng(3)
    u = jnp.asarray(rng.uniform(size=N), jnp.float32)
    w = _distributions(rng, 2, N)
    psi = jnp.asarray(rng.uniform(size=N), jnp.float32)
    theirs = (u + (1.0 - u) * (1.0 - jnp.prod(1.0 - w, axis=0))) * psi
    np.testing.assert_allclose(dnc.usage(u, w, psi), theirs, atol=1e-7)
    full = w.at[1, 3].set(1.0)
    assert float(dnc.usage(u, full, jnp.ones(N))[3]) == 1.0
    # DeepMind's Freeness stops the gradient to the previous write weights;
    # pytorch-dnc and our default do not. With one head, d u_t[n] / d w_{t-1}[n] =
    # (1 - u_{t-1}[n]) psi_t[n], and 0 with the option.
    state = dnc.init_state(N, W, R)._replace(
        usage=u,
        write_weights=w[:1],
        read_weights=_distributions(rng, R, N),
        memory=jnp.asarray(rng.normal(size=(N, W)), jnp.float32),
    )
    raw = jnp.asarray(rng.normal(size=dnc.interface_size(W, R)), jnp.float32)
    controls = dnc.controls_from_interface(raw, W, R)

    @functools.partial(jax.jit, static_argnums=1)
    def usage_after(write_weights, stop):
        s, _ = dnc.step(state._replace(write_weights=write_weights), controls, stop_usage_write_gradient=stop)
        return s.usage

    psi_t = dnc.retention(controls.free_gates, state.read_weights)
    jac = jax.jacrev(usage_after)(state.write_weights, False)[:, 0, :]  # [N, N]
    np.testing.assert_allclose(jac, jnp.diag((1.0 - u) * psi_t), atol=1e-6)
    np.testing.assert_array_equal(jax.jacrev(usage_after)(state.write_weights, True), 0.0)


# ---------------------------------------------------------------- interface layouts


def test_pytorch_dnc_interface_slices_are_the_graves2016_layout_with_other_mode_order():
    # pytorch-dnc's single interface vector (memory.py, forward, independent_linears
    # False), one write head: read keys [0, rw), read strengths [rw, rw + r), write
    # key [rw + r, rw + r + w), write strength rw + r + w, erase [.. + 1, rw + r + 2w + 1),
    # write vector [.., rw + r + 3w + 1), free gates [.., rw + 2r + 3w + 1), allocation
    # gate rw + 2r + 3w + 1, write gate rw + 2r + 3w + 2, read modes [rw + 2r + 3w + 3,
    # rw + 5r + 3w + 3) as (backward, forward, content) per head.
    r, w = R, W
    rng = np.random.default_rng(4)
    raw = jnp.asarray(rng.normal(size=dnc.interface_size(word_size=w, num_reads=r)), jnp.float32)
    assert dnc.interface_size(word_size=w, num_reads=r) == r * w + 5 * r + 3 * w + 3
    ours = dnc.controls_from_interface(raw, word_size=w, num_reads=r, layout="graves2016")
    np.testing.assert_array_equal(ours.read_keys, raw[: r * w].reshape(r, w))
    np.testing.assert_array_equal(ours.write_key[0], raw[r * w + r : r * w + r + w])
    np.testing.assert_allclose(ours.erase[0], jax.nn.sigmoid(raw[r * w + r + w + 1 : r * w + r + 2 * w + 1]))
    np.testing.assert_array_equal(ours.write_vector[0], raw[r * w + r + 2 * w + 1 : r * w + r + 3 * w + 1])
    np.testing.assert_allclose(ours.free_gates, jax.nn.sigmoid(raw[r * w + r + 3 * w + 1 : r * w + 2 * r + 3 * w + 1]))
    np.testing.assert_allclose(ours.allocation_gate[0], jax.nn.sigmoid(raw[r * w + 2 * r + 3 * w + 1]))
    np.testing.assert_allclose(ours.write_gate[0], jax.nn.sigmoid(raw[r * w + 2 * r + 3 * w + 2]))
    # Strengths: theirs softplus, ours oneplus, one apart.
    np.testing.assert_allclose(ours.read_strengths - 1.0, jax.nn.softplus(raw[r * w : r * w + r]), atol=1e-6)
    # Modes: the same numbers, but theirs mean (backward, forward, content) and ours
    # (backward, content, forward). Porting permutes each head's three logits.
    start = r * w + 2 * r + 3 * w + 3
    their_logits = raw[start:].reshape(r, 3)
    their_modes = jax.nn.softmax(their_logits, axis=-1)
    np.testing.assert_allclose(ours.read_modes, their_modes, atol=1e-7)
    order = dnc.read_mode_order_from_deepmind(1)
    ported = dnc.controls_from_interface(
        raw.at[start:].set(their_logits[:, order].reshape(-1)), word_size=w, num_reads=r
    )
    np.testing.assert_allclose(ported.read_modes[:, 0], their_modes[:, 0], atol=1e-7)  # backward
    np.testing.assert_allclose(ported.read_modes[:, 1], their_modes[:, 2], atol=1e-7)  # content
    np.testing.assert_allclose(ported.read_modes[:, 2], their_modes[:, 1], atol=1e-7)  # forward
    assert not np.allclose(ours.read_modes[:, 1], their_modes[:, 2])


def test_table1_layout_puts_the_read_modes_after_the_read_strengths():
    # The reading-comprehension DNC paper's supplementary Table 1: read keys, read
    # strengths, read modes, write key, write strength, erase, write vector, free
    # gates, allocation gate, write gate.
    for h in (1, 2):
        sizes = dict(
            read_keys=R * W,
            read_strengths=R,
            read_modes=R * (2 * h + 1),
            write_key=h * W,
            write_strength=h,
            erase=h * W,
            write_vector=h * W,
            free_gates=R,
            allocation_gate=h,
            write_gate=h,
        )
        blocks = {name: np.full(size, float(i + 1), np.float32) for i, (name, size) in enumerate(sizes.items())}
        raw = jnp.asarray(np.concatenate(list(blocks.values())))
        assert raw.shape[0] == dnc.interface_size(W, R, h)
        c = dnc.controls_from_interface(raw, W, R, h, layout="table1")
        np.testing.assert_array_equal(c.read_keys, 1.0)
        np.testing.assert_allclose(c.read_strengths, addressing.oneplus(jnp.float32(2.0)))
        np.testing.assert_allclose(c.read_modes, 1.0 / (2 * h + 1), rtol=1e-6)  # equal logits 3
        np.testing.assert_array_equal(c.write_key, 4.0)
        np.testing.assert_allclose(c.write_strength, addressing.oneplus(jnp.float32(5.0)))
        np.testing.assert_allclose(c.erase, jax.nn.sigmoid(6.0))
        np.testing.assert_array_equal(c.write_vector, 7.0)
        np.testing.assert_allclose(c.free_gates, jax.nn.sigmoid(8.0))
        np.testing.assert_allclose(c.allocation_gate, jax.nn.sigmoid(9.0))
        np.testing.assert_allclose(c.write_gate, jax.nn.sigmoid(10.0))
        # The default layout reads the same vector differently.
        assert not np.array_equal(dnc.controls_from_interface(raw, W, R, h).write_key, c.write_key)


# ---------------------------------------------------------------- write before read


def test_reads_follow_the_write_and_content_reads_see_the_written_memory():
    # DeepMind (MemoryAccess._build) and pytorch-dnc (Memory.forward: write, then
    # read) write first and look up read content in the written memory M_t; so does
    # our default. read_previous_memory=True looks up in M_{t-1}.
    rng = np.random.default_rng(5)
    state = dnc.init_state(N, W, R)._replace(
        memory=jnp.asarray(rng.normal(size=(N, W)), jnp.float32), usage=jnp.asarray(rng.uniform(size=N), jnp.float32)
    )
    raw = jnp.asarray(2.0 * rng.normal(size=dnc.interface_size(W, R)), jnp.float32)
    content_only = jnp.tile(jnp.asarray([0.0, 1.0, 0.0]), (R, 1))
    controls = dnc.controls_from_interface(raw, W, R)._replace(read_modes=content_only)
    after, _ = dnc.step(state, controls)
    before, _ = dnc.step(state, controls, read_previous_memory=True)
    np.testing.assert_allclose(
        after.read_weights,
        addressing.content_weights(after.memory, controls.read_keys, controls.read_strengths),
        atol=1e-6,
    )
    np.testing.assert_allclose(
        before.read_weights,
        addressing.content_weights(state.memory, controls.read_keys, controls.read_strengths),
        atol=1e-6,
    )
    assert float(jnp.max(jnp.abs(after.read_weights - before.read_weights))) > 1e-3
    # Both read the written memory.
    np.testing.assert_allclose(before.reads, dnc.read(after.memory, before.read_weights), atol=1e-6)


# ---------------------------------------------------------------- argument order


def test_link_takes_the_precedence_before_its_update():
    rng = np.random.default_rng(6)
    prev_link, prev_p = _random_link(rng), _distributions(rng, N)
    w = _distributions(rng, N)
    right = dnc.link(prev_link, prev_p, w)
    # L_t[i, j] = (1 - w_i - w_j) L_{t-1}[i, j] + w_i p_{t-1}[j] off the diagonal.
    i, j = 2, 5
    want = (1 - w[i] - w[j]) * prev_link[i, j] + w[i] * prev_p[j]
    np.testing.assert_allclose(right[i, j], want, rtol=1e-6)
    wrong = dnc.link(prev_link, dnc.precedence(prev_p, w), w)  # the updated precedence: a trap
    assert float(jnp.max(jnp.abs(wrong - right))) > 1e-3
    # What step does, per write head.
    state = dnc.init_state(N, W, R)._replace(link=prev_link[None], precedence=prev_p[None])
    controls = dnc.controls_from_interface(jnp.asarray(rng.normal(size=dnc.interface_size(W, R)), jnp.float32), W, R)
    new, _ = dnc.step(state, controls)
    np.testing.assert_allclose(new.link[0], dnc.link(prev_link, prev_p, new.write_weights[0]), atol=1e-7)
    np.testing.assert_allclose(new.precedence[0], dnc.precedence(prev_p, new.write_weights[0]), atol=1e-7)


def test_directions_come_backward_first_as_read_weights_takes_them():
    # directional_weights returns Directions(backward, forward), the order of the
    # modes and of read_weights(modes, backward, content, forward). pytorch-dnc's
    # directional_weightings returns (forward, backward): unpacking it into our
    # order swaps the directions.
    rng = np.random.default_rng(7)
    link, prev_read = _random_link(rng), _distributions(rng, R, N)
    directions = dnc.directional_weights(link, prev_read)
    backward, forward = directions
    np.testing.assert_allclose(backward, prev_read @ link, atol=1e-7)  # b = L^T w
    np.testing.assert_allclose(forward, prev_read @ link.T, atol=1e-7)  # f = L w
    assert directions.backward is backward and directions.forward is forward
    fused = dnc.link_and_directions(link, _distributions(rng, N), jnp.zeros(N), prev_read)
    np.testing.assert_array_equal(fused.backward, backward)  # zero write weights: L_t = L_{t-1}
    np.testing.assert_array_equal(fused.forward, forward)
    modes = jnp.tile(jnp.asarray([0.6, 0.1, 0.3]), (R, 1))  # backward, content, forward
    content = _distributions(rng, R, N)
    right = dnc.read_weights(modes, backward, content, forward)
    np.testing.assert_allclose(right, 0.6 * backward + 0.1 * content + 0.3 * forward, atol=1e-7)
    swapped = dnc.read_weights(modes, forward, content, backward)  # (forward, backward) unpacked as ours
    assert float(jnp.max(jnp.abs(swapped - right))) > 1e-3


# ---------------------------------------------------------------- content similarity


def test_deepmind_cosine_has_epsilons_ours_is_scale_invariant():
    # DeepMind: norms sqrt(|x|^2 + 1e-6), similarity dot / (norms + 1e-6); pytorch-dnc:
    # dot / (|a| |b| + 1e-6). Ours is u.v / (|u| |v|) at every scale.
    rng = np.random.default_rng(8)
    memory = rng.normal(size=(N, W)).astype(np.float32)
    key = rng.normal(size=(1, W)).astype(np.float32)

    def deepmind(key, memory):
        norms_m = np.sqrt((memory * memory).sum(-1) + EPS)
        norms_k = np.sqrt((key * key).sum(-1) + EPS)
        return (key @ memory.T) / (norms_k[:, None] * norms_m[None, :] + EPS)

    exact = (key @ memory.T) / (np.linalg.norm(key) * np.linalg.norm(memory, axis=-1))
    for scale in (1.0, 1e-3):
        ours = np.asarray(addressing.cosine_similarity(jnp.asarray(key * scale), jnp.asarray(memory * scale)))
        np.testing.assert_allclose(ours, exact, atol=1e-6)
    np.testing.assert_allclose(deepmind(key, memory), exact, atol=1e-5)  # unit scale: close
    small = deepmind(key * 1e-3, memory * 1e-3)
    assert np.max(np.abs(small - exact)) > 0.1  # 1e-3 scale: damped towards 0
