"""The PANM decoder of the paper: address bank, Pointer Units, Mode-1/Mode-2 access, Controller.

Implements §2.3 (Eq. 1-7, Algorithm 1, App. B-C) of Le et al. 2024, "Plug, Play, and Generalize: Length
Extrapolation with Pointer-Augmented Neural Memory" (TMLR), on top of the parameter-free
``panm_jax.kernels.pointer``. Given a memory ``M`` (an encoder's outputs, one slot per input step) it
decodes ``T_out`` steps in one ``scan`` (``PANMDecoder``: ``start``, then ``decode_step`` per step):

    A          = binary_addresses(a_B, L, b)                  (Algorithm 1, l. 3-5)
    G          = g^a(A)                                        address embedding, once
    h^a_t      = GRU_h(p^a_{t-1}, h^a_{t-1})                   Eq. 1, one GRU per head
    w^a_t      = softmax_n(tau_a * cos(h^a_t, G[n]))           Eq. 2 (masked to l(X))
    p^a_t      = A w^a_t;   *p^a_t = M w^a_t                   Eq. 3; Mode 1
    q_t        = g^c([*p^a_{t,1..H^a}])                        Eq. 4
    w^c_t      = softmax_n(tau_c * cos(q_t, M[n]));  *p^c_t = M w^c_t     Eq. 5-6
    h^c_t      = GRU_c([*p^a_t, *p^c_t, z_t], h^c_{t-1})       Eq. 7, h^c_0 = sum_i M[i]
    logits_t   = g^o([*p^a_t, *p^c_t, h^c_t])

Choices where the paper is silent (docs/design.md):

* ``p^a_0``: head 0 starts at the base address ``a_B``, head 1 at the end address
  ``a_E = (a_B + l(X) - 1) mod 2^b`` (App. C: both must be among the starts) and
  head 2 at the middle address ``a_M = (a_B + ceil(l(X) / 2) - 1) mod 2^b``
  (App. D.6: "with the base, end and middle addresses"; the middle slot is the
  one the Mix task of §3.1 reads, ``x_{ceil(L/2)}``). The paper places at most
  three heads, so ``pointer_heads`` is 0 to 3. ``h^a_0 = 0``.
* ``pointer_heads = 0`` (App. D.6: "there is no pointer information for the
  Controller, PANM should be equivalent to an GRU") removes Mode 1: no address
  bank, Pointer Units, ``g^a`` or ``tau_a``, and no ``*p^a_t`` in Eq. 7 or
  ``g^o``. Eq. 4 builds the Mode-2 query from the Mode-1 reads, so it needs
  ``mode2_heads = 0`` too. The Controller then reads nothing but ``z_t``; with
  no decoding input it is ``h^c_t = GRU_c(0, h^c_{t-1})`` (Eq. 7 with
  ``z_t = 0``, one zero feature: a GRU driven by its biases) and the output is
  ``g^o(h^c_t)``: the encoder's memory reaches the decoder only through
  ``h^c_0 = sum_i M[i]``.
* ``mode2_heads = 0`` removes Mode 2: no ``g^c`` and no ``*p^c_t`` in Eq. 7 or
  ``g^o`` (App. C: "If H^c = 0, obviously PANM will fail in tasks such as ID Sort").
* inverse temperatures ``tau_a`` (per Mode-1 head) and ``tau_c`` (per Mode-2
  head) multiply the score: Eq. 2/5 put a bare cosine in [-1, 1] inside the
  softmax, which cannot point sharply into a long memory. They are learned,
  positive (``softplus`` of a parameter) and start at ``inverse_temperature``;
  ``learn_temperature=False`` holds them at ``inverse_temperature`` instead, so
  that ``inverse_temperature=1, learn_temperature=False`` is Eq. 2/5 as printed;
  ``score="scaled_dot"`` selects the authors' code's scaled dot product instead.
* ``z_t = 0`` (no teacher forcing): the zero decoder input is left out of the
  controller's input rather than multiplied by weights; a decoder built with
  ``input_features > 0`` takes a given ``z_t`` instead (a decoder the Controller
  is stacked on, §2.3.3 and App. D.3).
* the controller and the memory share the width ``D`` (``h^c_0 = sum_i M[i]``
  needs it).

Variants are sibling subclasses that override the steps below (``context``, ``start``,
``address_weights``, ``point``, ``mode1``, ``mode2_weights``, ``mode2``, ``control``, ``decode_step``):
this library's own options in ``modules.panm_extensions``, the choices of the authors' public code in
``modules.panm_authors``. Each variant's options are a config of its own (``Ours``, ``AuthorsCode``),
which a model config holds beside this ``DecoderConfig`` (``models.panm.PANMConfig.variant``); the
variant's decoder takes it as ``variant``. Every option is declared with ``panm_jax.options.option`` (its
default, check, allowed values and meaning), and ``check_options`` runs every check once, when a config is
made.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, NamedTuple, cast

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.kernels import pointer
from panm_jax.kernels.scan import scan
from panm_jax.modules.controllers import GRUCell, gru_pointwise
from panm_jax.modules.layers import MLP
from panm_jax.options import check_options, option

__all__ = [
    "MAX_POINTER_HEADS",
    "DecoderCarry",
    "DecoderConfig",
    "DecoderContext",
    "PANMDecoder",
    "PANMTraces",
    "PointerUnits",
    "start_addresses",
]

# The Mode-1 heads whose starts the paper gives: a_B, a_E, a_M (Le et al. 2024, App. D.6).
MAX_POINTER_HEADS = 3


@dataclasses.dataclass(frozen=True)
class DecoderConfig:
    """The paper's decoder: its sizes and scores (defaults from Le et al. 2024, §3 and App. C).

    Every field declared with ``option`` (here and in subclasses) is checked when the config is made.
    """

    hidden: int = option(
        256, checks.positive_int, doc="D: encoder, Pointer Unit and Controller GRU width (App. C: 256)"
    )
    address_bits: int = option(10, checks.integer, 1, pointer.MAX_ADDRESS_BITS, doc="b: 2^b addresses (§3: 10 bits)")
    pointer_heads: int = option(
        2,
        checks.integer,
        0,
        MAX_POINTER_HEADS,
        doc="H^a Mode-1 pointers, 0-3, started at a_B, a_E, a_M (App. C, D.6); 0: no Mode 1",
    )
    mode2_heads: int = option(1, checks.nonnegative_int, doc="H^c Mode-2 pointers (App. C: 1); 0: no Mode 2")
    mlp_hidden: int = option(128, checks.positive_int, doc="hidden width of g^a, g^c, g^o")
    score: str = option(
        "cosine", checks.one_of, pointer.SCORES, doc="Eq. 2/5's cosine, or the authors' code's scaled_dot"
    )
    inverse_temperature: float = option(
        5.0, checks.positive_number, doc="initial tau of the pointer attentions (learned)"
    )
    learn_temperature: bool = option(
        True, checks.boolean, doc="False: tau held at inverse_temperature (1: Eq. 2/5 as printed)"
    )
    remat: bool = option(
        False, checks.boolean, doc="recompute each step in the backward pass (jax.checkpoint): less memory"
    )

    def __post_init__(self):
        check_options(self)
        if self.mode2_heads and not self.pointer_heads:
            raise UserError(
                f"mode2_heads: expected 0 with pointer_heads = 0 (Eq. 4 builds the Mode-2 query from the "
                f"Mode-1 reads), got {self.mode2_heads}"
            )


class PANMTraces(NamedTuple):
    """Per-step traces for plots (Le et al. 2024, Fig. 2c/d)."""

    pointer_weights: jax.Array  # [B, T_out, H^a, L] w^a_t
    pointer_values: jax.Array  # [B, T_out, H^a, A] p^a_t (soft binary addresses)
    mode2_weights: jax.Array  # [B, T_out, H^c, L] w^c_t
    base: jax.Array  # [B] a_B, the base address of each example


class DecoderCarry(NamedTuple):
    """The decoder's state between steps."""

    pu_hidden: jax.Array  # [B, H^a, D] h^a_t
    pointers: jax.Array  # [B, H^a, A] p^a_t
    ctrl_hidden: jax.Array  # [B, D] h^c_t


@dataclasses.dataclass(frozen=True)
class DecoderContext:
    """What every decoding step reads and none changes (a variant's subclass adds its own)."""

    memory: jax.Array  # [B, L, D] M
    mask: jax.Array  # [B, L] bool, the real slots
    keys: jax.Array  # [B, N, D] g^a of the candidate addresses of Eq. 2 (N = L: the bank)
    codes: jax.Array  # [B, N, A] their binary codes (Eq. 3 averages them)
    candidates: jax.Array  # [B, N] bool, which candidates take part
    tau_a: jax.Array  # [H^a] inverse temperatures of Eq. 2
    tau_c: jax.Array  # [max(H^c, 1)] inverse temperatures of Eq. 5
    base: jax.Array | None = None  # [B] a_B


def extend(context: DecoderContext, cls: type, **fields) -> Any:
    """``context`` as an instance of its subclass ``cls``, with ``fields`` added or replaced."""
    return cls(**{**{f.name: getattr(context, f.name) for f in dataclasses.fields(context)}, **fields})


class PointerUnits(nnx.Module):
    """``H`` Pointer Units (Le et al. 2024, Eq. 1): GRUs with separate parameters, one per head.

    The heads' parameters are stacked on a leading head axis so that one batched
    matmul serves every head. The GRU is ``GRUCell``'s (PyTorch conventions, gates
    laid out ``r, z, n``), its gates computed by ``controllers.gru_pointwise`` with
    the same hand-written VJP; the initialisation is ``nnx.Linear``'s (LeCun normal
    kernels, zero biases).

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
        gx = jnp.einsum("bha,haj->bhj", pointers, self.input_kernel[...]) + self.input_bias[...]  # [B, H, 3D]
        gh = jnp.einsum("bhd,hdj->bhj", hidden, self.hidden_kernel[...]) + self.hidden_bias[...]  # [B, H, 3D]
        return gru_pointwise(gx, gh, hidden)


def _inverse_softplus(y: float) -> float:
    # softplus(x) = y  <=>  x = log(e^y - 1); plain Python, so the module can be built abstractly.
    return math.log(math.expm1(y))


def lengths(mask: jax.Array) -> jax.Array:
    """``[B, L]`` bool -> ``[B]`` int32 ``l(X)``, the number of real slots."""
    return jnp.sum(mask, axis=1).astype(jnp.int32)


def start_addresses(base: jax.Array, length: jax.Array, heads: int, bits: int) -> jax.Array:
    """The start ``p^a_{0,h}`` of each Mode-1 head as an integer address, ``[B, H^a]`` int32.

    Le et al. 2024, App. C ("a_B, a_E in {p^a_{0,h}}") and App. D.6 ("with the base, end and middle
    addresses"), for ``base`` ``a_B [B]`` and ``length`` ``l(X) [B]``::

        head 0:  a_B
        head 1:  a_E = (a_B + l(X) - 1) mod 2^b
        head 2:  a_M = (a_B + ceil(l(X) / 2) - 1) mod 2^b      (x_{ceil(L/2)}, the middle of §3.1's Mix)

    the first ``heads`` (0 to ``MAX_POINTER_HEADS``) of them.
    """
    if not 0 <= heads <= MAX_POINTER_HEADS:
        raise UserError(f"pointer_heads: expected an integer in [0, {MAX_POINTER_HEADS}], got {heads!r}")
    end = jax.vmap(lambda a, n: pointer.end_address(a, n, bits))(base, length)  # [B] a_E
    middle = jnp.mod(base + (length + 1) // 2 - 1, 2**bits).astype(base.dtype)  # [B] a_M
    return jnp.stack([base, end, middle], axis=1)[:, :heads]


class PANMDecoder(nnx.Module):
    """Decodes ``T_out`` steps from a memory with pointer-based access (the module docstring's equations).

    Call: ``(memory [B, L, D], mask [B, L], base [B] int, num_outputs) -> logits
    [B, T_out, K]`` (and ``PANMTraces`` with ``return_traces=True``): ``context``
    gives what every step reads, ``start`` the initial state, and one ``lax.scan``
    runs ``decode_step`` ``T_out`` times.

    ``input_features = Z > 0`` gives the Controller a decoding input ``z_t``
    (Eq. 7: ``h^c_t = GRU_c([*p^a_t, *p^c_t, z_t], h^c_{t-1})``), passed per call as
    ``decoder_inputs [B, T_out, Z]``: e.g. the output of a Transformer decoder the
    Controller is stacked on (``models.panm_transformer``). With the default
    ``input_features = 0`` there is none (``z_t = 0`` left out).

    It reads the fields of ``DecoderConfig`` only; a variant's decoder also takes that variant's config
    (``models.panm.decoder_class`` picks the decoder by the variant's name).
    """

    # A variant's decoder: the config class of its options, given as ``variant`` (None: the paper's, none).
    variant_config: ClassVar[type | None] = None

    def __init__(
        self, config: DecoderConfig, num_classes: int, *, variant: Any = None, input_features: int = 0, rngs: nnx.Rngs
    ):
        want = self.variant_config
        if not (variant is None if want is None else isinstance(variant, want)):
            expected = "None" if want is None else f"an {want.__name__} config"
            raise UserError(f"variant: {type(self).__name__} expected {expected}, got {type(variant).__name__}")
        self.variant = variant
        self.config = config
        self.hidden = config.hidden
        self.input_features = checks.nonnegative_int("input_features", input_features)  # Z (0: no z_t)
        self.build_access(rngs)
        self.build_controller(num_classes, rngs)
        ha, hc = config.pointer_heads, config.mode2_heads
        if config.learn_temperature:
            tau = _inverse_softplus(config.inverse_temperature)
            if ha:
                self.pointer_temperature = nnx.Param(jnp.full((ha,), tau, jnp.float32))  # softplus -> tau_a
            self.mode2_temperature = nnx.Param(jnp.full((max(hc, 1),), tau, jnp.float32))  # softplus -> tau_c

    def build_access(self, rngs: nnx.Rngs) -> None:
        """The memory's side: ``g^a``, the Pointer Units (Eq. 1) and ``g^c`` (Eq. 4); none of the first two
        with ``H^a = 0``, no ``g^c`` with ``H^c = 0``."""
        c = self.config
        d, ha, hc = c.hidden, c.pointer_heads, c.mode2_heads
        if ha:
            self.address_embedding = MLP(c.address_bits, c.mlp_hidden, d, rngs=rngs)  # g^a
            self.pointer_units = PointerUnits(ha, c.address_bits, d, rngs=rngs)  # PU_1..H^a (Eq. 1)
        if hc:
            self.query_net = MLP(ha * d, c.mlp_hidden, hc * d, rngs=rngs)  # g^c

    def build_controller(self, num_classes: int, rngs: nnx.Rngs) -> None:
        """The Controller GRU (Eq. 7), reading ``[*p^a_t, *p^c_t, z_t]`` (one zero feature when that is
        empty: ``H^a = H^c = 0`` and no ``z_t``), and ``g^o``."""
        c = self.config
        reads = (c.pointer_heads + c.mode2_heads) * c.hidden
        self.controller = GRUCell(max(reads + self.input_features, 1), c.hidden, rngs=rngs)  # Ctrl (Eq. 7)
        self.output_net = MLP(reads + c.hidden, c.mlp_hidden, num_classes, rngs=rngs)  # g^o

    # ---- what every step reads ------------------------------------------------------------

    def address_bank(self, base: jax.Array, length: int, dtype=jnp.float32) -> jax.Array:
        """The address bank ``A`` ``[B, L, A]`` of each example from its base ``a_B`` ``[B]`` (Algorithm 1, l. 3-5).

        ``A[j] = bin((a_B + j) mod 2^b)`` for ``j = 0 .. L - 1``, one row per memory slot, in ``dtype``
        (the codes are 0 and 1: exact in every floating dtype).
        """
        bits = self.config.address_bits
        return jax.vmap(lambda a: pointer.binary_addresses(a, length, bits, dtype=dtype))(base)

    def candidates(self, addresses: jax.Array, mask: jax.Array, base: jax.Array) -> tuple[jax.Array, ...]:
        """What Eq. 2 attends over and Eq. 3 averages: the bank ``(g^a(A) [B, L, D], A [B, L, A], mask [B, L])``."""
        return self.address_embedding(addresses), addresses, mask  # g^a(A), once for all steps

    def temperatures(self) -> dict[str, jax.Array]:
        """``tau_a [H^a]`` and ``tau_c [max(H^c, 1)]``: learned (softplus of a parameter), or held."""
        if self.config.learn_temperature:
            return {
                "tau_a": jax.nn.softplus(self.pointer_temperature[...])
                if self.config.pointer_heads
                else jnp.zeros((0,), jnp.float32),
                "tau_c": jax.nn.softplus(self.mode2_temperature[...]),
            }
        fixed = float(self.config.inverse_temperature)  # tau_a = tau_c, held
        return {
            "tau_a": jnp.full((self.config.pointer_heads,), fixed, jnp.float32),
            "tau_c": jnp.full((max(self.config.mode2_heads, 1),), fixed, jnp.float32),
        }

    def context(self, memory: jax.Array, mask: jax.Array, base: jax.Array) -> DecoderContext:
        """What every step reads: the memory, its mask, Eq. 2's candidates, the temperatures and ``a_B``.

        A variant's ``context`` takes its per-call options as keywords (``PANMDecoder`` has none). With
        ``H^a = 0`` there is no bank: Eq. 2 has no candidates (``N = 0``).
        """
        addresses = self.address_bank(base, memory.shape[1], memory.dtype)  # [B, L, A]
        if self.config.pointer_heads:
            keys, codes, candidates = self.candidates(addresses, mask, base)
        else:
            keys, codes, candidates = memory[:, :0], addresses[:, :0], mask[:, :0]
        return DecoderContext(memory, mask, keys, codes, candidates, **self.temperatures(), base=base)

    # ---- the start (t = 0) ----------------------------------------------------------------

    def controller_start_state(self, memory: jax.Array, mask: jax.Array) -> jax.Array:
        """``h^c_0 = sum_i M[i]`` ``[B, D]`` over the real slots of ``memory [B, L, D]`` (``mask [B, L]``), Eq. 7."""
        mask = jnp.asarray(mask).astype(bool)
        return jnp.sum(jnp.where(mask[..., None], memory, 0), axis=1)  # [B, D]

    def start(self, context: DecoderContext) -> DecoderCarry:
        """The state before the first step: ``(h^a_0, p^a_0, h^c_0)``, in the memory's dtype.

        ``h^a_0 = 0`` ``[B, H^a, D]``; ``p^a_0`` ``[B, H^a, A]`` is ``bin`` of ``a_B``, ``a_E``,
        ``a_M`` for heads 0, 1, 2 (``start_addresses``: Le et al. 2024, App. C and D.6);
        ``h^c_0`` ``[B, D]`` is ``controller_start_state``.
        """
        memory, mask, base = context.memory, context.mask, cast(jax.Array, context.base)
        bits, heads = self.config.address_bits, self.config.pointer_heads
        b, _, d = memory.shape
        starts = start_addresses(base, lengths(mask), heads, bits)  # [B, H^a]
        p0 = jax.vmap(jax.vmap(lambda a: pointer.address_bits(a, bits)))(starts).reshape(b, heads, bits)
        return DecoderCarry(
            pu_hidden=jnp.zeros((b, self.config.pointer_heads, d), memory.dtype),
            pointers=p0.astype(memory.dtype),
            ctrl_hidden=self.controller_start_state(memory, mask),
        )

    # ---- one decoding step --------------------------------------------------------------

    def address_weights(self, pu_hidden: jax.Array, context: DecoderContext) -> jax.Array:
        """Eq. 2: ``w_t = softmax_n(tau_a score(h^a_t, keys[n]))`` ``[B, H^a, N]`` over the candidates."""
        c = self.config
        attend = jax.vmap(
            lambda k, e, m: pointer.address_attention(k, e, m, score=c.score, inverse_temperature=context.tau_a)
        )
        return attend(pu_hidden, context.keys, context.candidates)

    def point(self, carry: DecoderCarry, context: DecoderContext) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Pointer Units and address attention: Eq. 1-3.

        ``h^a_t = PU(p^a_{t-1}, h^a_{t-1})`` (Eq. 1), ``w_t`` (Eq. 2, ``address_weights``),
        ``p^a_t = codes w_t`` (Eq. 3).

        Returns:
          ``(h^a_t [B, H^a, D], w^a_t [B, H^a, L], p^a_t [B, H^a, A])``, with ``w^a_t`` the
          bank's part of ``w_t`` (what Mode 1 reads); empty (``H^a = 0``) without Mode 1.
        """
        if not self.config.pointer_heads:
            b, length, _ = context.memory.shape
            return carry.pu_hidden, jnp.zeros((b, 0, length), context.memory.dtype), carry.pointers
        pu_hidden = self.pointer_units(carry.pu_hidden, carry.pointers)  # Eq. 1
        w_all = self.address_weights(pu_hidden, context)  # [B, H^a, N] Eq. 2
        p_a = jax.vmap(pointer.pointer_values)(w_all, context.codes)  # [B, H^a, A] Eq. 3: p = A w
        return pu_hidden, w_all[:, :, : context.memory.shape[1]], p_a

    def mode1(self, w_a: jax.Array, context: DecoderContext) -> jax.Array:
        """Mode 1: ``*p^a_t = M w^a_t`` ``[B, H^a, D]``."""
        return jax.vmap(pointer.dereference)(w_a, context.memory)

    def mode2_weights(self, q: jax.Array, context: DecoderContext) -> jax.Array:
        """Eq. 5: ``w^c_t = softmax_n(tau_c score(q_t, M[n]))`` ``[B, H^c, L]`` for ``q`` ``[B, H^c, D]``."""
        c = self.config
        relate = jax.vmap(
            lambda q, mem, m: pointer.relational_access(q, mem, m, score=c.score, inverse_temperature=context.tau_c)
        )
        return relate(q, context.memory, context.mask).weights

    def mode2(self, q: jax.Array, context: DecoderContext) -> tuple[jax.Array, jax.Array]:
        """Eq. 5-6: ``(*p^c_t = M w^c_t [B, H^c, D], w^c_t [B, H^c, L])`` for ``q`` ``[B, H^c, D]``."""
        weights = self.mode2_weights(q, context)
        return jnp.einsum("bhl,bld->bhd", weights, context.memory), weights

    def read(self, w_a: jax.Array, context: DecoderContext) -> tuple[jax.Array, jax.Array]:
        """Mode 1 and Mode 2 reads: ``*p^a_t = M w^a_t``, then ``q_t = g^c([*p^a_{t,1..H^a}])`` (Eq. 4) and
        Eq. 5-6 (``mode2``); no Mode 2 with ``H^c = 0``.

        Returns:
          ``(values [B, (H^a + H^c) D], w^c_t [B, H^c, L])``: ``values`` is ``[*p^a_t, *p^c_t]`` flattened.
        """
        memory = context.memory
        b, length, d = memory.shape
        flat_a = self.mode1(w_a, context).reshape(b, -1)
        if not self.config.mode2_heads:
            return flat_a, jnp.zeros((b, 0, length), memory.dtype)
        q = self.query_net(flat_a).reshape(b, self.config.mode2_heads, d)  # Eq. 4
        values, weights = self.mode2(q, context)
        return jnp.concatenate([flat_a, values.reshape(b, -1)], axis=-1), weights

    def control(
        self, ctrl_hidden: jax.Array, values: jax.Array, z: jax.Array | None, context: DecoderContext
    ) -> tuple[jax.Array, jax.Array]:
        """Eq. 7 and the output: ``h^c_t = GRU_c([*p^a_t, *p^c_t (, z_t)], h^c_{t-1})``,
        ``logits_t = g^o([*p^a_t, *p^c_t, h^c_t])``; returns ``(h^c_t [B, D], logits_t [B, K])``. With
        nothing to read (``H^a = H^c = 0``, no ``z_t``) the Controller's input is ``z_t = 0``, one feature."""
        ctrl_in = jnp.concatenate([values] + ([] if z is None else [z]), axis=-1)  # Eq. 7
        if not ctrl_in.shape[-1]:
            ctrl_in = jnp.zeros((*ctrl_in.shape[:-1], 1), ctrl_in.dtype)  # z_t = 0
        ctrl_hidden, _ = self.controller(ctrl_hidden, ctrl_in)
        return ctrl_hidden, self.output_net(jnp.concatenate([values, ctrl_hidden], axis=-1))  # g^o

    def decode_step(self, carry: DecoderCarry, z: jax.Array | None, context: DecoderContext, *, return_traces: bool):
        """One decoding step ``t``: ``point`` (Eq. 1-3), ``read`` (Mode 1, Eq. 4-6), ``control`` (Eq. 7, ``g^o``).

        Args:
          carry: ``(h^a_{t-1} [B, H^a, D], p^a_{t-1} [B, H^a, A], h^c_{t-1} [B, D])``.
          z: ``[B, Z]`` ``z_t``, or ``None`` (no decoding input).
          context: the step's constants (``context``).
          return_traces: also return ``(w^a_t, p^a_t, w^c_t)``.

        Returns:
          ``(carry_t, (logits_t [B, K], trace_t))``, ``trace_t`` being
          ``(w^a_t [B, H^a, L], p^a_t [B, H^a, A], w^c_t [B, H^c, L])`` or ``()``.
        """
        pu_hidden, w_a, p_a = self.point(carry, context)
        values, w_c = self.read(w_a, context)
        ctrl_hidden, logits = self.control(carry.ctrl_hidden, values, z, context)
        trace = (w_a, p_a, w_c) if return_traces else ()
        return DecoderCarry(pu_hidden, p_a, ctrl_hidden), (logits, trace)

    # ---- the whole decoder --------------------------------------------------------------

    @classmethod
    def call_options(cls, config: Any, train: bool, key) -> dict:
        """The keywords a call passes to ``context`` in training (``train``) or not, drawn from ``key``: none
        for the paper's decoder (its one random draw, ``a_B``, is the model's)."""
        return {}

    def step_inputs(self, zs: jax.Array | None, context: DecoderContext, num_outputs: int):
        """What the scan hands each step besides the context: ``z_t`` (``zs [T_out, B, Z]``, or ``None``)."""
        return zs

    def _decoding_inputs(self, memory: jax.Array, num_outputs: int, decoder_inputs: jax.Array | None):
        # Check the call's shapes; return z as [T_out, B, Z] (the scan's xs), or None.
        b, length, d = memory.shape
        if d != self.hidden:
            raise UserError(f"memory: expected width D = {self.hidden} on the last axis, got shape {memory.shape}")
        zs = None
        if self.input_features:
            expected = (b, num_outputs, self.input_features)
            if decoder_inputs is None or tuple(decoder_inputs.shape) != expected:
                got = None if decoder_inputs is None else tuple(decoder_inputs.shape)
                raise UserError(f"decoder_inputs: expected shape [B, T_out, Z] = {expected}, got {got}")
            zs = jnp.swapaxes(decoder_inputs, 0, 1).astype(memory.dtype)  # [T_out, B, Z]
        elif decoder_inputs is not None:
            raise UserError("decoder_inputs: this decoder was built with input_features = 0 and takes none")
        bits = self.config.address_bits
        if length > 2**bits:
            raise UserError(
                f"inputs: expected at most 2^address_bits = {2**bits} memory slots, got L = {length}; "
                "raise address_bits"
            )
        return zs

    def __call__(
        self,
        memory: jax.Array,
        mask: jax.Array,
        base: jax.Array,
        num_outputs: int,
        *,
        return_traces: bool = False,
        decoder_inputs: jax.Array | None = None,
        **options,
    ):
        """Decode ``num_outputs`` steps: ``context``, ``start``, then a ``lax.scan`` of ``decode_step``.

        Args:
          memory: ``[B, L, D]`` ``M``, one slot per input step.
          mask: ``[B, L]``, the real slots (``l(X)`` of them per example).
          base: ``[B]`` integer base addresses ``a_B``.
          num_outputs: ``T_out``, a static Python int.
          return_traces: also return ``PANMTraces``.
          decoder_inputs: ``[B, T_out, Z]`` ``z``, required iff ``input_features = Z > 0``.
          **options: a variant's per-call options (its ``context``'s keywords; none here).

        Returns:
          ``logits [B, T_out, K]``, or ``(logits, PANMTraces)``.
        """
        zs = self._decoding_inputs(memory, num_outputs, decoder_inputs)
        context = self.context(memory, jnp.asarray(mask).astype(bool), base, **options)

        def step(carry, x):
            return self.decode_step(carry, x, context, return_traces=return_traces)

        xs = self.step_inputs(zs, context, num_outputs)
        _, (logits, trace) = scan(step, self.start(context), xs, length=num_outputs, remat=self.config.remat)
        logits = jnp.swapaxes(logits, 0, 1)  # [B, T_out, K]
        if not return_traces:
            return logits
        w_a, p_a, w_c = (jnp.swapaxes(x, 0, 1) for x in trace)
        return logits, PANMTraces(w_a, p_a, w_c, base)
