"""Recurrent controllers behind one small interface.

Every controller answers ``init_carry(batch_shape)`` and
``__call__(carry, x) -> (carry, h)``, so a model runs it inside the kernels'
``scan`` wrapper. The recurrent cells also split their work in two so that a
model can hoist the input projection out of the time loop when the inputs are
known in advance (an encoder): ``project_inputs(x)`` for all steps at once (one
large matmul), then ``step_projected(carry, gx_t)`` inside the loop.

Shapes: ``x [..., I]`` inputs, ``h [..., D]`` hidden states; leading axes (batch,
heads) are free.

Kinds (``make_controller(kind, ...)``; Reina Campo 2022, MPSoC-NTM documentation,
"Turing Machine" chapter, gives the NTM and the DNC each with a feed-forward, an
LSTM and a Transformer controller):

* ``"feedforward"``: ``FeedForwardController``, no recurrence (its carry is ``()``);
* ``"lstm"``: ``LSTMCell``; ``"gru"``: ``GRUCell``;
* ``"transformer"``: ``panm_jax.modules.transformer.TransformerController``, a
  causal Transformer over its own past with a fixed-size cache of ``max_steps``
  (imported lazily: it lives in its own module).

Both cells fuse their gates into one matmul per operand (``[I, 3D]`` for the GRU,
``[I, 4D]`` for the LSTM) and follow the PyTorch conventions (GRU reset gate
applied to the projected hidden state; LSTM gate order i, f, g, o), so parameter
counts match ``torch.nn.GRU`` / ``torch.nn.LSTM`` (two bias vectors each).
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks

__all__ = [
    "CONTROLLER_KINDS",
    "FeedForwardController",
    "GRUCell",
    "LSTMCell",
    "LSTMState",
    "gru_pointwise",
    "lstm_pointwise",
    "make_controller",
]

# The controller kinds ``make_controller`` builds, in the order tables list them.
CONTROLLER_KINDS = ("feedforward", "lstm", "gru", "transformer")


def _split(x: jax.Array, parts: int) -> list[jax.Array]:
    d = x.shape[-1] // parts
    return [x[..., k * d : (k + 1) * d] for k in range(parts)]


@jax.custom_vjp
def gru_pointwise(gx: jax.Array, gh: jax.Array, h: jax.Array) -> jax.Array:
    """The GRU's gates after its two matmuls: ``(gx [..., 3D], gh [..., 3D], h [..., D]) -> h'``.

    ``gx = W_i x + b_i`` and ``gh = W_h h + b_h``, each laid out ``r, z, n``::

        r = s(gx_r + gh_r),  z = s(gx_z + gh_z),  n = tanh(gx_n + r gh_n),  h' = (1 - z) n + z h

    Its VJP is written out so that a ``scan`` over a GRU keeps three residuals per
    step (``gx``, ``gh``, ``h``) and rebuilds the gates in one elementwise pass,
    where autodiff kept each activation separately; with ``g`` the cotangent of ``h'``
    and ``a_n = gx_n + r gh_n``::

        dn = g (1 - z)   da_n = dn (1 - n^2)   da_r = da_n gh_n r (1 - r)   da_z = g (h - n) z (1 - z)
        dgx = [da_r, da_z, da_n]   dgh = [da_r, da_z, da_n r]   dh = g z

    ``tests/modules/test_controllers.py`` checks it against autodiff in float64.
    """
    return _gru_fwd(gx, gh, h)[0]


def _gru_gates(gx, gh):
    (xr, xz, xn), (hr, hz, hn) = _split(gx, 3), _split(gh, 3)
    r = jax.nn.sigmoid(xr + hr)
    z = jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * hn)
    return r, z, n, hn


def _gru_fwd(gx, gh, h):
    _, z, n, _ = _gru_gates(gx, gh)
    return (1.0 - z) * n + z * h, (gx, gh, h)


def _gru_bwd(residuals, g):
    gx, gh, h = residuals
    r, z, n, hn = _gru_gates(gx, gh)
    da_n = g * (1.0 - z) * (1.0 - n * n)
    da_r = da_n * hn * r * (1.0 - r)
    da_z = g * (h - n) * z * (1.0 - z)
    return (jnp.concatenate([da_r, da_z, da_n], -1), jnp.concatenate([da_r, da_z, da_n * r], -1), g * z)


gru_pointwise.defvjp(_gru_fwd, _gru_bwd)


@jax.custom_vjp
def lstm_pointwise(gates: jax.Array, c: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The LSTM's gates after its matmuls: ``(gates [..., 4D], c [..., D]) -> (h', c')``.

    ``gates = W_x x + b_x + W_h h + b_h`` laid out ``i, f, g, o``::

        i, f, o = s(.),  g = tanh(.),  c' = f c + i g,  h' = o tanh(c')

    Its VJP is written out so that a ``scan`` keeps two residuals per step
    (``gates``, ``c``) and rebuilds the activations in one elementwise pass; with
    cotangents ``gh`` of ``h'`` and ``gc`` of ``c'``::

        gc~ = gc + gh o (1 - tanh(c')^2)
        dgates = [gc~ g i (1 - i), gc~ c f (1 - f), gc~ i (1 - g^2), gh tanh(c') o (1 - o)]
        dc = gc~ f

    ``tests/modules/test_controllers.py`` checks it against autodiff in float64.
    """
    return _lstm_fwd(gates, c)[0]


def _lstm_gates(gates, c):
    zi, zf, zg, zo = _split(gates, 4)
    i, f, g, o = jax.nn.sigmoid(zi), jax.nn.sigmoid(zf), jnp.tanh(zg), jax.nn.sigmoid(zo)
    new_c = f * c + i * g
    return i, f, g, o, new_c, jnp.tanh(new_c)


def _lstm_fwd(gates, c):
    *_, o, new_c, tanh_c = _lstm_gates(gates, c)
    return (o * tanh_c, new_c), (gates, c)


def _lstm_bwd(residuals, cotangents):
    gates, c = residuals
    g_h, g_c = cotangents
    i, f, g, o, _, tanh_c = _lstm_gates(gates, c)
    g_c = g_c + g_h * o * (1.0 - tanh_c * tanh_c)
    d_gates = jnp.concatenate(
        [g_c * g * i * (1.0 - i), g_c * c * f * (1.0 - f), g_c * i * (1.0 - g * g), g_h * tanh_c * o * (1.0 - o)], -1
    )
    return d_gates, g_c * f


lstm_pointwise.defvjp(_lstm_fwd, _lstm_bwd)


class GRUCell(nnx.Module):
    """A gated recurrent unit (Cho et al. 2014), the Pointer Unit and Controller of PANM.

    ``r = s(W_ir x + b_ir + W_hr h + b_hr)``, ``z = s(W_iz x + b_iz + W_hz h + b_hz)``,
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) n + z h``.
    """

    def __init__(self, in_features: int, hidden: int, *, rngs: nnx.Rngs):
        self.in_features = in_features
        self.hidden = hidden
        self.input_proj = nnx.Linear(in_features, 3 * hidden, rngs=rngs)  # [I, 3D]: r, z, n
        self.hidden_proj = nnx.Linear(hidden, 3 * hidden, rngs=rngs)  # [D, 3D]: r, z, n

    def init_carry(self, batch_shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
        return jnp.zeros((*batch_shape, self.hidden), dtype)

    def project_inputs(self, x: jax.Array) -> jax.Array:
        """``[..., I] -> [..., 3D]``: the input half of the gates, for all steps at once."""
        return self.input_proj(x)

    def step_projected(self, h: jax.Array, gx: jax.Array) -> tuple[jax.Array, jax.Array]:
        h = gru_pointwise(gx, self.hidden_proj(h), h)
        return h, h

    def __call__(self, h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return self.step_projected(h, self.project_inputs(x))


class LSTMState(tuple):
    """``(h, c)``: hidden and cell states, each ``[..., D]``."""

    __slots__ = ()

    def __new__(cls, h, c):
        return super().__new__(cls, (h, c))

    h = property(lambda self: self[0])
    c = property(lambda self: self[1])


jax.tree_util.register_pytree_node(LSTMState, lambda s: (tuple(s), None), lambda _, xs: LSTMState(*xs))


class LSTMCell(nnx.Module):
    """A long short-term memory cell (Hochreiter & Schmidhuber 1997), gates i, f, g, o.

    ``c' = f * c + i * g``, ``h' = o * tanh(c')`` with ``i, f, o`` sigmoid and ``g``
    tanh of ``W_x x + b_x + W_h h + b_h``.
    """

    def __init__(self, in_features: int, hidden: int, *, rngs: nnx.Rngs):
        self.in_features = in_features
        self.hidden = hidden
        self.input_proj = nnx.Linear(in_features, 4 * hidden, rngs=rngs)  # [I, 4D]: i, f, g, o
        self.hidden_proj = nnx.Linear(hidden, 4 * hidden, rngs=rngs)  # [D, 4D]: i, f, g, o

    def init_carry(self, batch_shape: tuple[int, ...], dtype=jnp.float32) -> LSTMState:
        zeros = jnp.zeros((*batch_shape, self.hidden), dtype)
        return LSTMState(zeros, zeros)

    def project_inputs(self, x: jax.Array) -> jax.Array:
        """``[..., I] -> [..., 4D]``: the input half of the gates, for all steps at once."""
        return self.input_proj(x)

    def step_projected(self, carry: LSTMState, gx: jax.Array) -> tuple[LSTMState, jax.Array]:
        h, c = carry
        h, c = lstm_pointwise(gx + self.hidden_proj(h), c)
        return LSTMState(h, c), h

    def __call__(self, carry: LSTMState, x: jax.Array) -> tuple[LSTMState, jax.Array]:
        return self.step_projected(carry, self.project_inputs(x))


class FeedForwardController(nnx.Module):
    """A feed-forward controller: ``h_t = tanh(W_L ... tanh(W_1 x_t + b_1) ... + b_L)``.

    The feed-forward NTM/DNC controller of Reina Campo 2022
    ("Feedforward Neural Turing Machine", "Feedforward Differentiable Neural
    Computer"): no recurrent state, so everything the model remembers between
    steps is in the external memory (and, in the memory models, the previous
    reads that are part of ``x_t``).

    The carry is the empty tuple ``()`` (a pytree with no leaves), so the controller
    fits the recurrent interface at no cost: ``scan`` carries nothing, a masked
    step's ``select`` has nothing to choose. ``tanh`` (our choice; the source gives
    no activation) keeps ``h`` in ``(-1, 1)`` like an LSTM's or a GRU's hidden
    state, so the interface projection sees the same scale whichever controller
    drives it.

    Call: ``(carry (), x [..., I]) -> ((), h [..., D])``.
    """

    def __init__(self, in_features: int, hidden: int, *, num_layers: int = 1, rngs: nnx.Rngs):
        num_layers = checks.positive_int("num_layers", num_layers)
        self.in_features = in_features
        self.hidden = hidden
        widths = [in_features] + [hidden] * num_layers
        self.layers = nnx.List(
            [nnx.Linear(a, b, rngs=rngs) for a, b in itertools.pairwise(widths)]
        )  # L layers: [I, D], then [D, D]

    def init_carry(self, batch_shape: tuple[int, ...] = (), dtype=jnp.float32) -> tuple:
        """No state: the empty tuple, whatever the batch shape."""
        del batch_shape, dtype
        return ()

    def __call__(self, carry: tuple, x: jax.Array) -> tuple[tuple, jax.Array]:
        h = x
        for layer in self.layers:
            h = jnp.tanh(layer(h))
        return carry, h


def make_controller(
    kind: str,
    in_features: int,
    hidden: int,
    *,
    rngs: nnx.Rngs,
    max_steps: int | None = None,
    **kw,
) -> nnx.Module:
    """Build a controller of ``kind`` (one of ``CONTROLLER_KINDS``).

    Every kind answers ``init_carry(batch_shape)`` and ``__call__(carry, x [..., I])
    -> (carry, h [..., D])`` with ``I = in_features`` and ``D = hidden``.

    Args:
      kind: ``"feedforward"``, ``"lstm"``, ``"gru"`` or ``"transformer"``.
      in_features: ``I``, the width of the controller's input.
      hidden: ``D``, the width of ``h``.
      rngs: parameter initialisation.
      max_steps: the Transformer's cache length (the most steps one sequence may
        take); required for ``"transformer"`` and ignored by the other kinds.
      **kw: options of the kind: ``num_layers`` for ``"feedforward"``;
        ``num_layers``, ``num_heads`` for ``"transformer"``; none for ``"lstm"``
        and ``"gru"``.

    Raises:
      ValueError: for an unknown ``kind`` (listing the known ones), a missing
        ``max_steps`` for the Transformer, or an option the kind does not take.
    """
    if kind not in CONTROLLER_KINDS:
        raise ValueError(f"kind: unknown controller {kind!r}; known controllers: {list(CONTROLLER_KINDS)}")
    in_features = checks.positive_int("in_features", in_features)
    hidden = checks.positive_int("hidden", hidden)
    if kind in ("lstm", "gru") and kw:
        raise ValueError(f"kw: controller {kind!r} takes no options, got {sorted(kw)}")
    if kind == "feedforward":
        unknown = sorted(set(kw) - {"num_layers"})
        if unknown:
            raise ValueError(f"kw: controller 'feedforward' takes only num_layers, got {unknown}")
        return FeedForwardController(in_features, hidden, rngs=rngs, **kw)
    if kind == "lstm":
        return LSTMCell(in_features, hidden, rngs=rngs)
    if kind == "gru":
        return GRUCell(in_features, hidden, rngs=rngs)
    if max_steps is None:
        raise ValueError("max_steps: the 'transformer' controller needs its cache length, got None")
    from panm_jax.modules.transformer import TransformerController  # lazy: its own module

    return TransformerController(in_features, hidden, max_steps=max_steps, rngs=rngs, **kw)
