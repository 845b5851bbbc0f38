"""The NTM conventions of docs/conventions.md, each built from this library's functions.

Peers: pytorch-ntm (loudinthecloud/pytorch-ntm) and Collier & Beel's TensorFlow
NTM (MarkPKCollier/NeuralTuringMachine, the code of "Implementing Neural Turing
Machines", ICANN 2018). Each test writes the peer's convention with NumPy or with
``panm_jax`` functions and checks the relation the page states.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from panm_jax.kernels import addressing as A
from panm_jax.kernels import ntm

N, W = 7, 4


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def pytorch_ntm_shift(w: np.ndarray, s: np.ndarray) -> np.ndarray:
    """pytorch-ntm's ``_convolve``: pad circularly by two, ``conv1d`` (a cross-correlation), drop one each end."""
    t = np.concatenate([w[-2:], w, w[:2]])
    c = np.array([np.dot(t[i : i + 3], s) for i in range(len(t) - 2)])
    return c[1:-1]


def test_shift_direction_is_reversed_in_pytorch_ntm():
    rng = np.random.default_rng(0)
    w = _softmax(rng.normal(size=N))
    s = _softmax(rng.normal(size=3))
    ours_reversed = np.asarray(A.circular_shift(jnp.asarray(w[None]), jnp.asarray(s[::-1][None].copy())))[0]
    np.testing.assert_allclose(pytorch_ntm_shift(w, s), ours_reversed, atol=1e-6)
    # And not the same shift unreversed: [0, 0, 1] moves slot j to j + 1 here, to j - 1 there.
    one_hot = np.eye(N)[2]
    np.testing.assert_array_equal(
        np.asarray(A.circular_shift(jnp.asarray(one_hot[None]), jnp.asarray([[0.0, 0.0, 1.0]])))[0], np.eye(N)[3]
    )
    np.testing.assert_array_equal(pytorch_ntm_shift(one_hot, np.array([0.0, 0.0, 1.0])), np.eye(N)[1])


def _controls(rng, write_vector):
    # The write head stays where it was (gate 0: slot 0) and writes v there over an erase of 1;
    # the read head looks v up by content.
    def head(k, gate):
        return ntm.HeadControls(
            key=jnp.asarray(k, jnp.float32)[None],
            strength=jnp.asarray([20.0]),
            gate=jnp.asarray([gate]),
            shift=jnp.asarray([[0.0, 1.0, 0.0]]),
            sharpen=jnp.asarray([1.0]),
        )

    v = write_vector
    return ntm.NTMControls(
        read=head(v, 1.0),
        write=head(rng.normal(size=W), 0.0),
        erase=jnp.ones((1, W)),
        add=jnp.asarray(v, jnp.float32)[None],
    )


def peer_read_before_write(state: ntm.NTMState, c: ntm.NTMControls):
    """pytorch-ntm's and Collier & Beel's order: the read heads address and read M_{t-1}, then the write."""
    read_weights = ntm.address(state.memory, state.read_weights, c.read)
    reads = ntm.read(state.memory, read_weights)
    write_weights = ntm.address(state.memory, state.write_weights, c.write)
    memory = ntm.write(state.memory, write_weights, c.erase, c.add)
    return ntm.NTMState(memory, read_weights, write_weights, reads), reads


def test_read_after_write_here_read_before_write_in_the_peers():
    rng = np.random.default_rng(1)
    state = ntm.init_state(N, W)
    v = rng.normal(size=W)
    c = _controls(rng, write_vector=v)  # write v, and look it up by content at once
    ours, ours_read = ntm.step(state, c)
    peer, peer_read = peer_read_before_write(state, c)
    # The memory written is the same; the read differs: ours sees v at step t, the peer's does not.
    np.testing.assert_allclose(np.asarray(ours.memory), np.asarray(peer.memory), atol=1e-6)
    assert np.abs(np.asarray(ours_read)[0] - v).max() < 0.05
    assert np.abs(np.asarray(peer_read)[0] - v).max() > 0.5
    # With a step that writes nothing the two orders agree.
    quiet = c._replace(erase=jnp.zeros((1, W)), add=jnp.zeros((1, W)))
    np.testing.assert_allclose(
        np.asarray(ntm.step(state, quiet)[1]), np.asarray(peer_read_before_write(state, quiet)[1]), atol=1e-6
    )


def test_initial_state_and_zero_weights():
    state = ntm.init_state(N, W, 2, 1)
    np.testing.assert_array_equal(np.asarray(state.memory), np.float32(ntm.MEMORY_INIT))  # Collier & Beel's constant
    np.testing.assert_array_equal(np.asarray(state.read_weights), np.tile(np.eye(N)[0], (2, 1)))
    np.testing.assert_array_equal(np.asarray(state.reads), 0.0)
    # pytorch-ntm starts every head from all-zero weights; its sharpening of an all-zero
    # weighting, w^gamma / (sum w^gamma + 1e-16), is all zero, ours is uniform.
    zero = np.zeros(N)
    assert np.all(zero**2.0 / (np.sum(zero**2.0) + 1e-16) == 0.0)
    np.testing.assert_allclose(np.asarray(A.sharpen(jnp.zeros((1, N)), jnp.asarray([2.0]))), 1.0 / N, rtol=1e-6)


def test_interface_activations():
    # Ours: keys identity, beta softplus, g sigmoid, s softmax, gamma 1 + softplus, e sigmoid, a identity.
    rng = np.random.default_rng(2)
    s = 3
    raw = rng.normal(size=ntm.interface_size(W, 1, 1, s)) * 3
    c = ntm.controls_from_interface(jnp.asarray(raw, jnp.float32), W, 1, 1, s)
    r = raw[: W + s + 3]
    softplus = lambda x: np.log1p(np.exp(x))  # noqa: E731
    np.testing.assert_allclose(np.asarray(c.read.key)[0], r[:W], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(c.read.strength)[0], softplus(r[W]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(c.read.gate)[0], 1 / (1 + np.exp(-r[W + 1])), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(c.read.shift)[0], _softmax(r[W + 2 : W + 2 + s]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(c.read.sharpen)[0], 1 + softplus(r[W + 2 + s]), rtol=1e-5)
    wb = raw[W + s + 3 :]
    np.testing.assert_allclose(np.asarray(c.erase)[0], 1 / (1 + np.exp(-wb[W + s + 3 : 2 * W + s + 3])), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(c.add)[0], wb[2 * W + s + 3 :], rtol=1e-6)


def collier_to_ours(raw: np.ndarray, num_reads: int, num_writes: int, shift_width: int = 3) -> np.ndarray:
    """Collier & Beel's flat layout -> ours.

    Theirs: every head's ``[k, beta, g, s, gamma]`` (read heads, then write heads), then
    ``[e_1, a_1, e_2, a_2, ...]``. Ours: the read heads, then each write head's
    ``[k, beta, g, s, gamma, e, a]``.
    """
    head = W + shift_width + 3
    heads = [raw[i * head : (i + 1) * head] for i in range(num_reads + num_writes)]
    rest = raw[(num_reads + num_writes) * head :]
    erase_add = [rest[i * W : (i + 1) * W] for i in range(2 * num_writes)]
    out = heads[:num_reads]
    for h in range(num_writes):
        out += [heads[num_reads + h], erase_add[2 * h], erase_add[2 * h + 1]]
    return np.concatenate(out)


def test_collier_layout_maps_onto_ours():
    rng = np.random.default_rng(3)
    r, h, s = 2, 2, 3
    size = ntm.interface_size(W, r, h, s)
    raw = rng.normal(size=size)
    ours = ntm.controls_from_interface(jnp.asarray(collier_to_ours(raw, r, h, s), jnp.float32), W, r, h, s)
    head = W + s + 3
    first_write = raw[r * head : (r + 1) * head]
    np.testing.assert_allclose(np.asarray(ours.write.key)[0], first_write[:W], rtol=1e-6)
    second_erase = raw[(r + h) * head + 2 * W : (r + h) * head + 3 * W]
    np.testing.assert_allclose(np.asarray(ours.erase)[1], 1 / (1 + np.exp(-second_erase)), rtol=1e-5)
    # Collier & Beel pass keys and add vectors through tanh and clip the interface to [-20, 20]:
    # a port applies those before calling controls_from_interface (ours leaves both raw).
    assert np.asarray(ours.read.key).max() == np.float32(np.max(raw[:W].tolist() + raw[head : head + W].tolist()))


def test_memory_layout_is_the_transpose():
    rng = np.random.default_rng(4)
    memory = rng.normal(size=(N, W)).astype(np.float32)  # the peers' [N, W]
    keys = rng.normal(size=(2, W)).astype(np.float32)
    np.testing.assert_allclose(
        np.asarray(ntm.similarity(jnp.asarray(keys), jnp.asarray(memory.T))),
        np.asarray(A.cosine_similarity(jnp.asarray(keys), jnp.asarray(memory))),
        atol=1e-7,
    )
    weights = _softmax(rng.normal(size=(2, N))).astype(np.float32)
    np.testing.assert_allclose(
        np.asarray(ntm.read(jnp.asarray(memory.T), jnp.asarray(weights))), weights @ memory, rtol=1e-5
    )


def test_guarded_cosines_of_the_peers_against_the_exact_one():
    # Collier & Beel: u.v / (|u| |v| + 1e-8), short of the exact cosine by the factor
    # |u| |v| / (|u| |v| + 1e-8): 0.2 % for a unit key against the initial 1e-6 memory at
    # W = 20 (what ntm.MEMORY_INIT's comment says), 70 % against a 1e-9 memory.
    width = 20
    rng = np.random.default_rng(5)
    key = rng.normal(size=width)
    key /= np.linalg.norm(key)
    exact = lambda u, v: u @ v / (np.linalg.norm(u) * np.linalg.norm(v))  # noqa: E731
    collier = lambda u, v: u @ v / (np.linalg.norm(u) * np.linalg.norm(v) + 1e-8)  # noqa: E731
    for scale, shortfall in ((1e-6, 2.2e-3), (1e-9, 0.69)):
        row = np.full(width, scale)
        ours = float(ntm.similarity(jnp.asarray(key[None], jnp.float32), jnp.asarray(row[:, None], jnp.float32))[0, 0])
        np.testing.assert_allclose(ours, exact(key, row), rtol=1e-6)
        np.testing.assert_allclose(1 - collier(key, row) / exact(key, row), shortfall, rtol=0.02)
