"""The PANM decoder: address bank, Pointer Units, Mode-1/Mode-2 access, Controller.

Implements §2.3 of Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural
Memory, TMLR)
(Eq. 1-7, Algorithm 1, App. B-C) on top of the parameter-free ``panm_jax.kernels.pointer``. Given a
memory ``M`` (an encoder's outputs, one slot per input step) it decodes
``T_out`` steps in one ``scan``:

    A          = binary_addresses(a_B, L, b)                  (Algorithm 1, l. 3-5)
    G          = g^a(A)                                        address embedding, once
    h^a_t      = GRU_h(p^a_{t-1}, h^a_{t-1})                   Eq. 1, one GRU per head
    w^a_t      = softmax_n(tau_a * cos(h^a_t, G[n]))           Eq. 2 (masked to l(X))
    p^a_t      = A w^a_t;   *p^a_t = M w^a_t                   Eq. 3; Mode 1
    q_t        = g^c([*p^a_{t,1..H^a}])                        Eq. 4
    w^c_t      = softmax_n(tau_c * cos(q_t, M[n]));  *p^c_t = M w^c_t     Eq. 5-6
    h^c_t      = GRU_c([*p^a_t, *p^c_t, z_t], h^c_{t-1})       Eq. 7, h^c_0 = sum_i M[i]
    logits_t   = g^o([*p^a_t, *p^c_t, h^c_t])

Choices where the paper is silent or differs from its authors' code (docs/design.md):

* ``p^a_0``: head 0 starts at the base address ``a_B``, head 1 at the end address
  ``a_E = (a_B + l(X) - 1) mod 2^b`` (App. C: both must be among the starts);
  further heads alternate base, end. ``h^a_0 = 0``.
* inverse temperatures ``tau_a`` (per Mode-1 head) and ``tau_c`` (per Mode-2
  head) multiply the cosine: Eq. 2/5 put a bare cosine in [-1, 1] inside the
  softmax, which cannot point sharply into a long memory. They are learned,
  positive (``softplus`` of a parameter) and start at ``inverse_temperature``;
  ``score="scaled_dot"`` selects the authors' code's scaled dot product instead.
* ``z_t = 0`` (no teacher forcing): the zero decoder input is left out of the
  controller's input rather than multiplied by weights; a decoder built with
  ``input_features > 0`` takes a given ``z_t`` instead (a decoder the Controller
  is stacked on, §2.3.3 and App. D.3).
* the controller and the memory share the width ``D`` (``h^c_0 = sum_i M[i]``
  needs it).

Distractors (an option of this library, not in the paper; off by default). Trained
on lengths ``<= L`` (12 slots for Copy at ``L = 10``), the softmax of Eq. 2 only
ever tells apart a window of fewer than 16 consecutive addresses, and their 4
lowest bits already do that: nothing in the loss asks the Pointer Units to get
the higher bits of ``p^a_t`` right, and at test time they do not. Traced on Copy
at length 81 (``python -m benchmarks.diagnose_pointer``), the head 0 of a model
trained with the scaled dot score steps through slots 6, 7, ..., 15 and then
jumps to 64: it moves the low bits right and the high bits at random.

With ``distractors = K``, each training example adds ``K`` addresses from
outside its bank to the softmax of Eq. 2 and to the average of Eq. 3; they hold
no data, so the mass they take reads nothing, and a distractor that shares its
low bits with the right address can only be told apart by the high bits.
``distractor_sampling="uniform"`` draws them uniformly from the addresses off the
bank (``pointer.off_bank_addresses``); ``"neighbours"`` flips one random bit of a
random bank address (``pointer.neighbour_addresses``), so that each bit is
tested by itself::

    w_t     = softmax(tau_a score(h^a_t, [g^a(A[1..l(X)]); g^a(d_1..d_K)]))
    p^a_t   = [A; bin(d_1..d_K)] w_t                    (Eq. 3 over the bank and the distractors)
    *p^a_t  = M w_t[1..l(X)]                            (Mode 1 reads the bank's part)

At evaluation (and whenever no distractor key is passed) the decoder is exactly
Eq. 2-3. (Taking the softmax over the whole space of ``2^b`` addresses instead
left about 1% of the mass on the bank at initialisation, and the model never
learned to use Mode 1: we tried it and did not keep it.)

Snapping (an option of this library; off by default). With ``snap_pointers=True``
the pointer fed back to the Pointer Units, and kept in the traces, is
``pointer.snap_to_address(p^a_t)``: each bit rounded to 0 or 1 (straight-through
gradient). Over a long memory every slot takes a little of the softmax's mass,
so the soft pointer's high bits drift from 0 and 1 and the drift compounds from
step to step; a snapped pointer is always one address. The model decides when
(``PANMConfig.snap_pointers``: never, at evaluation only, or always).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax.kernels import pointer
from panm_jax.kernels.scan import scan
from panm_jax.modules.controllers import GRUCell
from panm_jax.modules.layers import MLP

__all__ = ["CONTROLLER_STARTS", "DISTRACTOR_SAMPLING", "PANMDecoder", "PANMTraces", "PointerUnits"]

# How the training distractors are drawn: uniformly off the bank, or one bit away from it.
DISTRACTOR_SAMPLING = {"uniform": pointer.off_bank_addresses, "neighbours": pointer.neighbour_addresses}
# The controller's start h^c_0: "sum" is Eq. 7's sum_i M[i] over the real slots (the paper's);
# "mean" divides it by l(X), so its scale does not grow with the input length (ours).
CONTROLLER_STARTS = ("sum", "mean")


class PANMTraces(NamedTuple):
    """Per-step traces for plots (Le et al. 2024, Fig. 2c/d)."""

    pointer_weights: jax.Array  # [B, T_out, H^a, L] w^a_t
    pointer_values: jax.Array  # [B, T_out, H^a, A] p^a_t (soft binary addresses)
    mode2_weights: jax.Array  # [B, T_out, H^c, L] w^c_t
    base: jax.Array  # [B] a_B, the base address of each example


class _Carry(NamedTuple):
    pu_hidden: jax.Array  # [B, H^a, D] h^a_t
    pointers: jax.Array  # [B, H^a, A] p^a_t
    ctrl_hidden: jax.Array  # [B, D] h^c_t


class PointerUnits(nnx.Module):
    """``H`` Pointer Units (Le et al. 2024, Eq. 1): GRUs with separate parameters, one per head.

    The heads' parameters are stacked on a leading head axis so that one batched
    matmul serves every head. The GRU is ``GRUCell``'s (PyTorch conventions) and
    the initialisation is ``nnx.Linear``'s (LeCun normal kernels, zero biases).

    Call: ``(hidden [B, H, D], pointers [B, H, A]) -> hidden [B, H, D]``.
    """

    def __init__(self, heads: int, address_bits: int, hidden: int, *, rngs: nnx.Rngs):
        # batch_axis=0: the head axis is not part of fan-in, so each head's kernel
        # gets the variance of its own [fan_in, fan_out] Linear.
        init = nnx.initializers.lecun_normal(batch_axis=(0,))
        self.hidden = hidden
        self.input_kernel = nnx.Param(init(rngs.params(), (heads, address_bits, 3 * hidden)))  # [H, A, 3D]
        self.input_bias = nnx.Param(jnp.zeros((heads, 3 * hidden)))  # [H, 3D]
        self.hidden_kernel = nnx.Param(init(rngs.params(), (heads, hidden, 3 * hidden)))  # [H, D, 3D]
        self.hidden_bias = nnx.Param(jnp.zeros((heads, 3 * hidden)))  # [H, 3D]

    def __call__(self, hidden: jax.Array, pointers: jax.Array) -> jax.Array:
        gx = jnp.einsum("bha,haj->bhj", pointers, self.input_kernel[...]) + self.input_bias[...]
        gh = jnp.einsum("bhd,hdj->bhj", hidden, self.hidden_kernel[...]) + self.hidden_bias[...]
        d = self.hidden
        r = jax.nn.sigmoid(gx[..., :d] + gh[..., :d])
        z = jax.nn.sigmoid(gx[..., d : 2 * d] + gh[..., d : 2 * d])
        n = jnp.tanh(gx[..., 2 * d :] + r * gh[..., 2 * d :])
        return (1.0 - z) * n + z * hidden


def _inverse_softplus(y: float) -> float:
    # softplus(x) = y  <=>  x = log(e^y - 1); plain Python, so the module can be built abstractly.
    return math.log(math.expm1(y))


class PANMDecoder(nnx.Module):
    """Decodes ``T_out`` steps from a memory with pointer-based access.

    Call: ``(memory [B, L, D], mask [B, L], base [B] int, num_outputs) -> logits
    [B, T_out, K]`` (and ``PANMTraces`` with ``return_traces=True``).

    ``input_features = Z > 0`` gives the Controller a decoding input ``z_t``
    (Eq. 7: ``h^c_t = GRU_c([*p^a_t, *p^c_t, z_t], h^c_{t-1})``), passed per call as
    ``decoder_inputs [B, T_out, Z]``: e.g. the output of a Transformer decoder the
    Controller is stacked on (``models.panm_transformer``). With the default
    ``input_features = 0`` there is none (``z_t = 0`` left out) and the decoder
    is exactly the one above.
    """

    def __init__(
        self,
        hidden: int,
        num_classes: int,
        *,
        address_bits: int = 10,
        pointer_heads: int = 2,
        mode2_heads: int = 1,
        mlp_hidden: int = 128,
        score: str = "cosine",
        inverse_temperature: float = 5.0,
        distractors: int = 0,
        distractor_sampling: str = "uniform",
        remat: bool = False,
        input_features: int = 0,
        controller_start: str = "sum",
        rngs: nnx.Rngs,
    ):
        if controller_start not in CONTROLLER_STARTS:
            raise ValueError(f"controller_start: expected one of {list(CONTROLLER_STARTS)}, got {controller_start!r}")
        if isinstance(distractors, bool) or not isinstance(distractors, int) or distractors < 0:
            raise ValueError(f"distractors: expected a non-negative integer, got {distractors!r}")
        if distractor_sampling not in DISTRACTOR_SAMPLING:
            raise ValueError(
                f"distractor_sampling: expected one of {list(DISTRACTOR_SAMPLING)}, got {distractor_sampling!r}"
            )
        if isinstance(input_features, bool) or not isinstance(input_features, int) or input_features < 0:
            raise ValueError(f"input_features: expected a non-negative integer, got {input_features!r}")
        if pointer_heads < 1 or mode2_heads < 0:
            raise ValueError(f"pointer_heads / mode2_heads: expected >= 1 / >= 0, got {pointer_heads} / {mode2_heads}")
        self.hidden = hidden
        self.address_bits = address_bits
        self.pointer_heads = pointer_heads
        self.mode2_heads = mode2_heads
        self.score = score
        self.distractors = distractors  # off-bank addresses added to Eq. 2 in training
        self.distractor_sampling = distractor_sampling
        self.remat = remat  # recompute each decoding step in the backward pass (jax.checkpoint)
        self.input_features = input_features  # Z, the width of z_t (0: no decoding input)
        self.controller_start = controller_start  # h^c_0: "sum" (Eq. 7) or "mean" over the real slots
        d, a, ha, hc = hidden, address_bits, pointer_heads, mode2_heads
        self.address_embedding = MLP(a, mlp_hidden, d, rngs=rngs)  # g^a
        self.pointer_units = PointerUnits(ha, a, d, rngs=rngs)  # PU_1..H^a (Eq. 1)
        if hc:
            self.query_net = MLP(ha * d, mlp_hidden, hc * d, rngs=rngs)  # g^c
        self.controller = GRUCell((ha + hc) * d + input_features, d, rngs=rngs)  # Ctrl (Eq. 7)
        self.output_net = MLP((ha + hc + 1) * d, mlp_hidden, num_classes, rngs=rngs)  # g^o
        tau = _inverse_softplus(inverse_temperature)
        self.pointer_temperature = nnx.Param(jnp.full((ha,), tau, jnp.float32))  # softplus -> tau_a
        self.mode2_temperature = nnx.Param(jnp.full((max(hc, 1),), tau, jnp.float32))  # softplus -> tau_c

    def controller_start_state(self, memory: jax.Array, mask: jax.Array) -> jax.Array:
        """``h^c_0`` ``[B, D]`` from the memory ``[B, L, D]`` and its slot mask ``[B, L]``.

        ``"sum"``: ``sum_i M[i]`` over the real slots (Le et al. 2024, Eq. 7), whose
        scale grows with ``l(X)``; ``"mean"``: that sum divided by ``l(X)`` (at least 1).
        """
        mask = jnp.asarray(mask).astype(bool)
        total = jnp.sum(jnp.where(mask[..., None], memory, 0), axis=1)  # [B, D]
        if self.controller_start == "sum":
            return total
        count = jnp.maximum(jnp.sum(mask, axis=1), 1).astype(memory.dtype)  # [B] l(X)
        return total / count[:, None]

    def __call__(
        self,
        memory: jax.Array,
        mask: jax.Array,
        base: jax.Array,
        num_outputs: int,
        *,
        distractor_key: jax.Array | None = None,
        snap_pointers: bool = False,
        return_traces: bool = False,
        decoder_inputs: jax.Array | None = None,
    ):
        b, length, d = memory.shape
        if d != self.hidden:
            raise ValueError(f"memory: expected width D = {self.hidden} on the last axis, got shape {memory.shape}")
        if self.input_features:
            expected = (b, num_outputs, self.input_features)
            if decoder_inputs is None or tuple(decoder_inputs.shape) != expected:
                got = None if decoder_inputs is None else tuple(decoder_inputs.shape)
                raise ValueError(f"decoder_inputs: expected shape [B, T_out, Z] = {expected}, got {got}")
            zs = jnp.swapaxes(decoder_inputs, 0, 1).astype(memory.dtype)  # [T_out, B, Z]
        elif decoder_inputs is not None:
            raise ValueError("decoder_inputs: this decoder was built with input_features = 0 and takes none")
        else:
            zs = None
        if length > 2**self.address_bits:
            raise ValueError(
                f"inputs: expected at most 2^address_bits = {2**self.address_bits} memory slots, got L = {length}; "
                "raise address_bits"
            )
        bits = self.address_bits
        mask = jnp.asarray(mask).astype(bool)
        lengths = jnp.sum(mask, axis=1).astype(jnp.int32)  # [B] l(X)
        addresses = jax.vmap(lambda a: pointer.binary_addresses(a, length, bits))(base)  # [B, L, A]
        embedded = self.address_embedding(addresses)  # [B, L, D] g^a(A), once for all steps
        end = jax.vmap(lambda a, n: pointer.end_address(a, n, bits))(base, lengths)  # [B] a_E
        starts = jnp.stack([base if h % 2 == 0 else end for h in range(self.pointer_heads)], axis=1)  # [B, H^a]
        p0 = jax.vmap(jax.vmap(lambda a: pointer.address_bits(a, bits)))(starts)  # [B, H^a, A]
        carry = _Carry(
            pu_hidden=jnp.zeros((b, self.pointer_heads, d), memory.dtype),
            pointers=p0.astype(memory.dtype),
            ctrl_hidden=self.controller_start_state(memory, mask),
        )
        tau_a = jax.nn.softplus(self.pointer_temperature[...])
        tau_c = jax.nn.softplus(self.mode2_temperature[...])

        attend = jax.vmap(
            lambda k, e, m: pointer.address_attention(k, e, m, score=self.score, inverse_temperature=tau_a)
        )
        keys, codes, candidates = embedded, addresses, mask  # Eq. 2 over the bank
        if self.distractors and distractor_key is not None:
            sample = DISTRACTOR_SAMPLING[self.distractor_sampling]
            draw = jax.vmap(lambda k, a, n: sample(k, a, n, self.distractors, bits))
            drawn, valid = draw(jax.random.split(distractor_key, b), base, lengths)  # [B, K], [B, K]
            drawn_codes = jax.vmap(jax.vmap(lambda a: pointer.address_bits(a, bits, dtype=memory.dtype)))(drawn)
            keys = jnp.concatenate([embedded, self.address_embedding(drawn_codes)], axis=1)  # [B, L + K, D]
            codes = jnp.concatenate([addresses, drawn_codes], axis=1)  # [B, L + K, A]
            candidates = jnp.concatenate([mask, valid], axis=1)  # [B, L + K]

        relate = jax.vmap(
            lambda q, mem, m: pointer.relational_access(q, mem, m, score=self.score, inverse_temperature=tau_c)
        )

        def step(c: _Carry, z):
            pu_hidden = self.pointer_units(c.pu_hidden, c.pointers)  # Eq. 1
            w_all = attend(pu_hidden, keys, candidates)  # [B, H^a, L (+ K)] Eq. 2
            p_a = jax.vmap(pointer.pointer_values)(w_all, codes)  # [B, H^a, A] Eq. 3: p = A w
            w_a = w_all[:, :, :length]  # the bank's part: what Mode 1 reads
            if snap_pointers:
                p_a = pointer.snap_to_address(p_a)  # the nearest address is fed back (Eq. 1's input)
            v_a = jax.vmap(pointer.dereference)(w_a, memory)  # [B, H^a, D] Mode 1: *p = M w
            flat_a = v_a.reshape(b, -1)
            if self.mode2_heads:
                q = self.query_net(flat_a).reshape(b, self.mode2_heads, d)  # Eq. 4
                read = relate(q, memory, mask)  # Eq. 5-6: RelationalRead(values, weights)
                w_c = read.weights
                values = jnp.concatenate([flat_a, read.values.reshape(b, -1)], axis=-1)
            else:
                w_c = jnp.zeros((b, 0, length), memory.dtype)
                values = flat_a
            ctrl_in = values if z is None else jnp.concatenate([values, z], axis=-1)  # Eq. 7 ([.., z_t] if given)
            ctrl_hidden, _ = self.controller(c.ctrl_hidden, ctrl_in)
            logits = self.output_net(jnp.concatenate([values, ctrl_hidden], axis=-1))  # g^o
            trace = (w_a, p_a, w_c) if return_traces else ()
            return _Carry(pu_hidden, p_a, ctrl_hidden), (logits, trace)

        _, (logits, trace) = scan(step, carry, zs, length=num_outputs, remat=self.remat)
        logits = jnp.swapaxes(logits, 0, 1)  # [B, T_out, K]
        if not return_traces:
            return logits
        w_a, p_a, w_c = (jnp.swapaxes(x, 0, 1) for x in trace)
        return logits, PANMTraces(w_a, p_a, w_c, base)
