"""The PANM decoder: address bank, Pointer Units, Mode-1/Mode-2 access, Controller.

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

Choices where the paper is silent or differs from its authors' code (docs/design.md):

* ``p^a_0``: head 0 starts at the base address ``a_B``, head 1 at the end address
  ``a_E = (a_B + l(X) - 1) mod 2^b`` (App. C: both must be among the starts);
  further heads alternate base, end. ``h^a_0 = 0``.
* inverse temperatures ``tau_a`` (per Mode-1 head) and ``tau_c`` (per Mode-2
  head) multiply the cosine: Eq. 2/5 put a bare cosine in [-1, 1] inside the
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

Distractors (an option of this library, not in the paper; off by default). Trained
on lengths ``<= L`` (12 slots for Copy at ``L = 10``), the softmax of Eq. 2 only
ever tells apart a window of fewer than 16 consecutive addresses, and their 4
lowest bits already do that: nothing in the loss asks the Pointer Units to get
the higher bits of ``p^a_t`` right, and at test time they do not. Traced on Copy
at length 81 (``python -m benchmarks.accuracy.diagnose_pointer``), the head 0 of a model
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
Eq. 2-3. The softmax is not taken over the whole space of ``2^b`` addresses
instead: at initialisation that leaves about 1% of the mass on the bank, and
Mode 1 is then not learned.

Snapping (an option of this library; off by default). With ``snap_pointers=True``
the pointer fed back to the Pointer Units, and kept in the traces, is
``pointer.snap_to_address(p^a_t)``: each bit rounded to 0 or 1 (straight-through
gradient). Over a long memory every slot takes a little of the softmax's mass,
so the soft pointer's high bits drift from 0 and 1 and the drift compounds from
step to step; a snapped pointer is always one address. The model decides when
(``PANMConfig.snap_pointers``: never, at evaluation only, or always).

The authors' Eq. 3 (a measurement, not the paper; off by default). The authors'
public PyTorch code keeps the bank sequence-first, ``[L, B, A]``, and computes
Eq. 3 as ``aweights.bmm(A.view(B, L, A))``: a reshape where a transpose was
meant, so that at ``B > 1`` an example's new pointer averages rows of other
examples' banks, whose bases differ (``authors_view``). Its published numbers
come from that code; ``eq3_addresses="authors_view"`` feeds those pointers back
to the Pointer Units (Eq. 1) so that the difference can be measured. Eq. 2's
keys stay each example's own ``g^a(A)``, as in that code; with bucket padding
``L`` is the padded length (that code pads nothing: one length per batch).

Five more of that code's choices are options, for the same purpose (off by
default, not in the paper): ``controller_start="encoder_final"``, its decoder's
start at the encoder's last hidden state (a GRU state, bounded whatever ``l(X)``)
instead of Eq. 7's ``sum_i M[i]``; ``controller_reads_mode2=False``, its decoder's
Controller fed Mode 1's reads only (Mode 2's ``*p^c_t`` joins ``g^o``'s input
alone, where Eq. 7 feeds it to the Controller too); ``controller_attention``, its decoder's additive
(Bahdanau) attention over ``M`` queried by ``h^c_{t-1}``, whose context joins
the Controller's input and ``g^o``'s; ``mode2_dropout``, the dropout (0.5
there) that its Mode-2 attention applies to its weights in training; and
``attention_projections``, the query, key, value and output projections of the
``torch.nn.MultiheadAttention`` (one head) through which it reads Modes 1 and 2
(``modules.attention_projections``): per head, Eq. 2 scores ``W_q h^a_t + b_q``
against ``W_k g^a(A[n]) + b_k`` and Mode 1 reads ``W_o (w^a_t V) + b_o`` with
``V = M W_v + b_v``; Eq. 5-6 likewise with ``q_t`` and keys ``M W_k + b_k``.
Eq. 3's pointer still averages the binary codes.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.kernels import pointer
from panm_jax.kernels.scan import scan
from panm_jax.modules.additive_attention import AdditiveAttention
from panm_jax.modules.attention_projections import AttentionProjections
from panm_jax.modules.controllers import GRUCell, gru_pointwise
from panm_jax.modules.layers import MLP

__all__ = [
    "CONTROLLER_STARTS",
    "DISTRACTOR_SAMPLING",
    "PANMDecoder",
    "PANMTraces",
    "PointerUnits",
    "check_decoder_options",
]

# How the training distractors are drawn: uniformly off the bank, or one bit away from it.
DISTRACTOR_SAMPLING = {"uniform": pointer.off_bank_addresses, "neighbours": pointer.neighbour_addresses}
# The controller's start h^c_0: "sum" is Eq. 7's sum_i M[i] over the real slots (the paper's);
# "mean" divides it by l(X), so its scale does not grow with the input length (ours).
CONTROLLER_STARTS = ("sum", "mean", "encoder_final")

# Which codes Eq. 3 averages: each example's own bank ("own", the paper), or the
# authors' public code's layout ("authors_view", see ``authors_view``), kept only to
# measure what that code's published numbers came from.
EQ3_ADDRESSES = ("own", "authors_view")


def authors_view(addresses: jax.Array) -> jax.Array:
    """The bank ``[B, L, A]`` as the authors' public code hands it to Eq. 3: ``A.view(B, L, A)`` of the
    sequence-first ``[L, B, A]`` tensor, a reshape where a transpose was meant.

    Row ``l`` of example ``i`` becomes row ``(i L + l) // B`` of example ``(i L + l) mod B``: with
    ``B > 1`` an example's pointer averages other examples' addresses (each with its own base);
    with ``B = 1`` nothing changes. Not the paper's model (``EQ3_ADDRESSES``).
    """
    return jnp.swapaxes(addresses, 0, 1).reshape(addresses.shape)


def check_decoder_options(
    *,
    hidden,
    address_bits,
    pointer_heads,
    mode2_heads,
    mlp_hidden,
    score,
    inverse_temperature,
    distractors,
    distractor_sampling,
    controller_start,
    input_features=0,
    learn_temperature=True,
    eq3_addresses="own",
    controller_attention=False,
    mode2_dropout=0.0,
    attention_projections=False,
    controller_reads_mode2=True,
) -> None:
    """Raise ``UserError`` (naming the option) unless every ``PANMDecoder`` option is valid.

    The one check of these options: ``PANMDecoder`` calls it, and so does
    ``models.panm.PANMConfig`` so that a bad configuration fails when it is made.
    ``address_bits`` lies in ``[1, pointer.MAX_ADDRESS_BITS]``; ``score`` is one of
    ``pointer.SCORES``; ``inverse_temperature`` (the initial ``tau``, or the fixed
    one without ``learn_temperature``) is a finite positive number; ``mode2_heads``,
    ``distractors`` and ``input_features`` may be 0.
    """
    checks.positive_int("hidden", hidden)
    checks.integer("address_bits", address_bits, 1, pointer.MAX_ADDRESS_BITS)
    checks.positive_int("pointer_heads", pointer_heads)
    checks.nonnegative_int("mode2_heads", mode2_heads)
    checks.positive_int("mlp_hidden", mlp_hidden)
    checks.one_of("score", score, pointer.SCORES)
    checks.positive_number("inverse_temperature", inverse_temperature)
    checks.boolean("learn_temperature", learn_temperature)
    checks.nonnegative_int("distractors", distractors)
    checks.one_of("distractor_sampling", distractor_sampling, DISTRACTOR_SAMPLING)
    checks.one_of("controller_start", controller_start, CONTROLLER_STARTS)
    checks.nonnegative_int("input_features", input_features)
    checks.one_of("eq3_addresses", eq3_addresses, EQ3_ADDRESSES)
    checks.boolean("controller_attention", controller_attention)
    checks.number("mode2_dropout", mode2_dropout, 0.0, 1.0, hi_open=True)
    checks.boolean("attention_projections", attention_projections)
    checks.boolean("controller_reads_mode2", controller_reads_mode2)


class PANMTraces(NamedTuple):
    """Per-step traces for plots (Le et al. 2024, Fig. 2c/d)."""

    pointer_weights: jax.Array  # [B, T_out, H^a, L] w^a_t
    pointer_values: jax.Array  # [B, T_out, H^a, A] p^a_t (soft binary addresses)
    mode2_weights: jax.Array  # [B, T_out, H^c, L] w^c_t
    base: jax.Array  # [B] a_B, the base address of each example


class _Carry(NamedTuple):
    """The decoder's state between steps."""

    pu_hidden: jax.Array  # [B, H^a, D] h^a_t
    pointers: jax.Array  # [B, H^a, A] p^a_t
    ctrl_hidden: jax.Array  # [B, D] h^c_t


class _Context(NamedTuple):
    """What every decoding step reads and none changes."""

    memory: jax.Array  # [B, L, D] M
    mask: jax.Array  # [B, L] bool, the real slots
    keys: jax.Array  # [B, N, D] g^a of the candidate addresses of Eq. 2 (N = L, or L + K with distractors)
    codes: jax.Array  # [B, N, A] their binary codes (Eq. 3 averages them)
    candidates: jax.Array  # [B, N] bool, which candidates take part
    tau_a: jax.Array  # [H^a] inverse temperatures of Eq. 2
    tau_c: jax.Array  # [max(H^c, 1)] inverse temperatures of Eq. 5
    attention_keys: jax.Array | None = None  # [B, L, D] W_k M of the controller attention (None: off)
    # With attention_projections (None: off): the projected keys and values, once per sequence.
    pointer_keys: jax.Array | None = None  # [B, H^a, N, D] W_k keys + b_k, per Mode-1 head
    pointer_values: jax.Array | None = None  # [B, H^a, L, D] M W_v + b_v, what each Mode-1 head reads
    mode2_keys: jax.Array | None = None  # [B, H^c, L, D] M W_k + b_k, per Mode-2 head
    mode2_values: jax.Array | None = None  # [B, H^c, L, D] M W_v + b_v


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


def _lengths(mask: jax.Array) -> jax.Array:
    # [B, L] bool -> [B] int32 l(X), the number of real slots.
    return jnp.sum(mask, axis=1).astype(jnp.int32)


class PANMDecoder(nnx.Module):
    """Decodes ``T_out`` steps from a memory with pointer-based access.

    Call: ``(memory [B, L, D], mask [B, L], base [B] int, num_outputs) -> logits
    [B, T_out, K]`` (and ``PANMTraces`` with ``return_traces=True``): ``start``
    gives the initial state, ``candidates`` what Eq. 2 attends over, and one
    ``lax.scan`` runs ``decode_step`` ``T_out`` times.

    ``input_features = Z > 0`` gives the Controller a decoding input ``z_t``
    (Eq. 7: ``h^c_t = GRU_c([*p^a_t, *p^c_t, z_t], h^c_{t-1})``), passed per call as
    ``decoder_inputs [B, T_out, Z]``: e.g. the output of a Transformer decoder the
    Controller is stacked on (``models.panm_transformer``). With the default
    ``input_features = 0`` there is none (``z_t = 0`` left out) and the decoder
    is exactly the one above.

    The options are checked by ``check_decoder_options``.
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
        learn_temperature: bool = True,
        distractors: int = 0,
        distractor_sampling: str = "uniform",
        remat: bool = False,
        input_features: int = 0,
        controller_start: str = "sum",
        eq3_addresses: str = "own",
        controller_attention: bool = False,
        mode2_dropout: float = 0.0,
        attention_projections: bool = False,
        controller_reads_mode2: bool = True,
        rngs: nnx.Rngs,
    ):
        check_decoder_options(
            hidden=hidden,
            address_bits=address_bits,
            pointer_heads=pointer_heads,
            mode2_heads=mode2_heads,
            mlp_hidden=mlp_hidden,
            score=score,
            inverse_temperature=inverse_temperature,
            learn_temperature=learn_temperature,
            distractors=distractors,
            distractor_sampling=distractor_sampling,
            controller_start=controller_start,
            input_features=input_features,
            eq3_addresses=eq3_addresses,
            controller_attention=controller_attention,
            mode2_dropout=mode2_dropout,
            attention_projections=attention_projections,
            controller_reads_mode2=controller_reads_mode2,
        )
        self.hidden = hidden
        self.address_bits = address_bits
        self.pointer_heads = pointer_heads
        self.mode2_heads = mode2_heads
        self.score = score
        self.distractors = distractors  # off-bank addresses added to Eq. 2 in training
        self.distractor_sampling = distractor_sampling
        self.remat = remat  # recompute each decoding step in the backward pass (jax.checkpoint)
        self.input_features = input_features  # Z, the width of z_t (0: no decoding input)
        self.controller_start = controller_start  # h^c_0: "sum" (Eq. 7), "mean" or the encoder's "encoder_final"
        self.eq3_addresses = eq3_addresses  # the codes Eq. 3 averages: "own" bank, or "authors_view"
        self.mode2_dropout = mode2_dropout  # dropout on w^c_t in training (the authors' code: 0.5)
        self.controller_reads_mode2 = controller_reads_mode2  # *p^c_t in Eq. 7's input (False: g^o's only)
        d, a, ha, hc = hidden, address_bits, pointer_heads, mode2_heads
        self.address_embedding = MLP(a, mlp_hidden, d, rngs=rngs)  # g^a
        self.pointer_units = PointerUnits(ha, a, d, rngs=rngs)  # PU_1..H^a (Eq. 1)
        if hc:
            self.query_net = MLP(ha * d, mlp_hidden, hc * d, rngs=rngs)  # g^c
        # The authors' code's query, key, value and output projections around Mode 1 and Mode 2 (an
        # option; not in the paper): modules.attention_projections.
        self.pointer_projections = AttentionProjections(ha, d, d, d, d, rngs=rngs) if attention_projections else None
        self.mode2_projections = (
            AttentionProjections(hc, d, d, d, d, rngs=rngs) if attention_projections and hc else None
        )
        # The authors' code's extra content attention over M, queried by h^c_{t-1}; its context c_t joins
        # the Controller's input and g^o's (an option; not in the paper).
        self.memory_attention = AdditiveAttention(d, d, d, rngs=rngs) if controller_attention else None
        extra = d if controller_attention else 0
        read = (ha + hc) * d if controller_reads_mode2 else ha * d  # the reads Eq. 7's Controller takes
        self.controller = GRUCell(read + input_features + extra, d, rngs=rngs)  # Ctrl (Eq. 7)
        self.output_net = MLP((ha + hc + 1) * d + extra, mlp_hidden, num_classes, rngs=rngs)  # g^o
        if learn_temperature:
            tau = _inverse_softplus(inverse_temperature)
            self.pointer_temperature = nnx.Param(jnp.full((ha,), tau, jnp.float32))  # softplus -> tau_a
            self.mode2_temperature = nnx.Param(jnp.full((max(hc, 1),), tau, jnp.float32))  # softplus -> tau_c
        self.fixed_temperature = None if learn_temperature else float(inverse_temperature)  # tau_a = tau_c, held

    # ---- the start (t = 0) ----------------------------------------------------------------

    def controller_start_state(
        self, memory: jax.Array, mask: jax.Array, encoder_final: jax.Array | None = None
    ) -> jax.Array:
        """``h^c_0`` ``[B, D]`` from the memory ``[B, L, D]`` and its slot mask ``[B, L]``.

        ``"sum"``: ``sum_i M[i]`` over the real slots (Le et al. 2024, Eq. 7), whose
        scale grows with ``l(X)``; ``"mean"``: that sum divided by ``l(X)`` (at least 1);
        ``"encoder_final"``: ``encoder_final`` ``[B, D]``, the recurrent encoder's last
        hidden state, as the authors' public code starts its decoder (an option, not
        the paper; bounded whatever ``l(X)``).
        """
        if self.controller_start == "encoder_final":
            b, _, d = memory.shape
            if encoder_final is None or tuple(encoder_final.shape) != (b, d):
                got = None if encoder_final is None else tuple(encoder_final.shape)
                raise UserError(
                    f"encoder_final: expected the encoder's final hidden state of shape {(b, d)} "
                    f"(controller_start = 'encoder_final'), got {got}"
                )
            return encoder_final.astype(memory.dtype)
        mask = jnp.asarray(mask).astype(bool)
        total = jnp.sum(jnp.where(mask[..., None], memory, 0), axis=1)  # [B, D]
        if self.controller_start == "sum":
            return total
        count = jnp.maximum(jnp.sum(mask, axis=1), 1).astype(memory.dtype)  # [B] l(X)
        return total / count[:, None]

    def address_bank(self, base: jax.Array, length: int, dtype=jnp.float32) -> jax.Array:
        """The address bank ``A`` ``[B, L, A]`` of each example from its base ``a_B`` ``[B]`` (Algorithm 1, l. 3-5).

        ``A[j] = bin((a_B + j) mod 2^b)`` for ``j = 0 .. L - 1``, one row per memory slot, in ``dtype``
        (the codes are 0 and 1: exact in every floating dtype).
        """
        bits = self.address_bits
        return jax.vmap(lambda a: pointer.binary_addresses(a, length, bits, dtype=dtype))(base)

    def start(
        self, memory: jax.Array, mask: jax.Array, base: jax.Array, encoder_final: jax.Array | None = None
    ) -> _Carry:
        """The state before the first step: ``(h^a_0, p^a_0, h^c_0)``.

        ``h^a_0 = 0`` ``[B, H^a, D]``; ``p^a_0`` ``[B, H^a, A]`` is ``bin(a_B)`` for the
        even heads and ``bin(a_E)``, ``a_E = (a_B + l(X) - 1) mod 2^b``, for the odd
        ones (Le et al. 2024, App. C); ``h^c_0`` ``[B, D]`` is Eq. 7's ``sum_i M[i]``
        over the real slots, its mean, or ``encoder_final`` (``controller_start_state``).

        Args:
          memory: ``[B, L, D]`` ``M``.
          mask: ``[B, L]`` bool, the real slots.
          base: ``[B]`` integer ``a_B``.
          encoder_final: ``[B, D]``, the encoder's last hidden state; required with
            ``controller_start = "encoder_final"``, else unused.

        Returns:
          ``_Carry(pu_hidden, pointers, ctrl_hidden)`` in the memory's dtype.
        """
        bits = self.address_bits
        b, _, d = memory.shape
        end = jax.vmap(lambda a, n: pointer.end_address(a, n, bits))(base, _lengths(mask))  # [B] a_E
        starts = jnp.stack([base if h % 2 == 0 else end for h in range(self.pointer_heads)], axis=1)  # [B, H^a]
        p0 = jax.vmap(jax.vmap(lambda a: pointer.address_bits(a, bits)))(starts)  # [B, H^a, A]
        return _Carry(
            pu_hidden=jnp.zeros((b, self.pointer_heads, d), memory.dtype),
            pointers=p0.astype(memory.dtype),
            ctrl_hidden=self.controller_start_state(memory, mask, encoder_final),
        )

    def candidates(
        self, addresses: jax.Array, mask: jax.Array, base: jax.Array, distractor_key: jax.Array | None, dtype
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """What Eq. 2 attends over and Eq. 3 averages: the bank, then (in training) ``K`` distractors.

        Without distractors (``self.distractors = 0`` or no ``distractor_key``) the
        candidates are the bank itself: ``(g^a(A), A, mask)``. With them, each
        example draws ``K`` addresses ``d_1..d_K`` off its bank
        (``DISTRACTOR_SAMPLING[self.distractor_sampling]``) and appends
        ``(g^a(bin(d_k)), bin(d_k), valid_k)`` after its ``L`` slots.

        Args:
          addresses: ``[B, L, A]`` the bank ``A`` (``address_bank``).
          mask: ``[B, L]`` bool, the real slots.
          base: ``[B]`` integer ``a_B``.
          distractor_key: a PRNG key, or ``None``.
          dtype: the dtype of the distractors' codes (the memory's).

        Returns:
          ``(keys [B, N, D], codes [B, N, A], candidates [B, N] bool)`` with ``N = L``
          or ``L + K``.
        """
        embedded = self.address_embedding(addresses)  # [B, L, D] g^a(A), once for all steps
        codes = authors_view(addresses) if self.eq3_addresses == "authors_view" else addresses  # Eq. 3's
        if not (self.distractors and distractor_key is not None):
            return embedded, codes, mask  # Eq. 2 over the bank
        bits = self.address_bits
        sample = DISTRACTOR_SAMPLING[self.distractor_sampling]
        draw = jax.vmap(lambda k, a, n: sample(k, a, n, self.distractors, bits))
        drawn, valid = draw(jax.random.split(distractor_key, base.shape[0]), base, _lengths(mask))  # [B, K], [B, K]
        drawn_codes = jax.vmap(jax.vmap(lambda a: pointer.address_bits(a, bits, dtype=dtype)))(drawn)  # [B, K, A]
        keys = jnp.concatenate([embedded, self.address_embedding(drawn_codes)], axis=1)  # [B, L + K, D]
        codes = jnp.concatenate([codes, drawn_codes], axis=1)  # [B, L + K, A]
        return keys, codes, jnp.concatenate([mask, valid], axis=1)  # [B, L + K]

    # ---- one decoding step --------------------------------------------------------------

    def point(self, carry: _Carry, context: _Context, snap_pointers: bool) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Pointer Units and address attention: Eq. 1-3.

        ``h^a_t = PU(p^a_{t-1}, h^a_{t-1})`` (Eq. 1), ``w_t = softmax_n(tau_a
        score(h^a_t, keys[n]))`` over the candidates (Eq. 2), ``p^a_t = codes w_t``
        (Eq. 3), rounded to the nearest address with ``snap_pointers``.

        Args:
          carry: ``h^a_{t-1}`` ``[B, H^a, D]`` and ``p^a_{t-1}`` ``[B, H^a, A]`` (``h^c`` unused).
          context: the step's constants (``_Context``).
          snap_pointers: feed back ``pointer.snap_to_address(p^a_t)``.

        Returns:
          ``(h^a_t [B, H^a, D], w^a_t [B, H^a, L], p^a_t [B, H^a, A])``, with ``w^a_t`` the
          bank's part of ``w_t`` (what Mode 1 reads).
        """
        attend = jax.vmap(
            lambda k, e, m: pointer.address_attention(k, e, m, score=self.score, inverse_temperature=context.tau_a)
        )
        pu_hidden = self.pointer_units(carry.pu_hidden, carry.pointers)  # Eq. 1
        if self.pointer_projections is None:
            w_all = attend(pu_hidden, context.keys, context.candidates)  # [B, H^a, L (+ K)] Eq. 2
        else:  # each head scores its own projected query against its own projected keys
            one = lambda q, k, m, tau: pointer.address_attention(  # noqa: E731
                q[None], k, m, score=self.score, inverse_temperature=tau[None]
            )[0]
            per_head = jax.vmap(one, in_axes=(0, 0, None, 0))
            queries = self.pointer_projections.queries(pu_hidden)  # [B, H^a, D]
            w_all = jax.vmap(per_head, in_axes=(0, 0, 0, None))(
                queries, context.pointer_keys, context.candidates, context.tau_a
            )  # [B, H^a, L (+ K)]
        p_a = jax.vmap(pointer.pointer_values)(w_all, context.codes)  # [B, H^a, A] Eq. 3: p = A w
        w_a = w_all[:, :, : context.memory.shape[1]]  # the bank's part: what Mode 1 reads
        if snap_pointers:
            p_a = pointer.snap_to_address(p_a)  # the nearest address is fed back (Eq. 1's input)
        return pu_hidden, w_a, p_a

    def read(
        self, w_a: jax.Array, context: _Context, dropout_key: jax.Array | None = None
    ) -> tuple[jax.Array, jax.Array]:
        """Mode 1 and Mode 2 reads: ``*p^a_t = M w^a_t``, then Eq. 4-6.

        ``q_t = g^c([*p^a_{t,1..H^a}])`` (Eq. 4), ``w^c_t = softmax_n(tau_c
        score(q_t, M[n]))`` (Eq. 5), ``*p^c_t = M w^c_t`` (Eq. 6); no Mode 2 with
        ``H^c = 0``.

        Args:
          w_a: ``[B, H^a, L]`` ``w^a_t``.
          context: the step's constants (``_Context``).
          dropout_key: with ``mode2_dropout = p > 0``, a PRNG key: ``*p^c_t`` then reads
            ``M (w^c_t * keep / (1 - p))``, ``keep ~ Bernoulli(1 - p)`` per weight (training only).

        With ``attention_projections`` both reads go through their heads' projections
        (``_Context``'s projected keys and values; module docstring).

        Returns:
          ``(values [B, (H^a + H^c) D], w^c_t [B, H^c, L])``: ``values`` is
          ``[*p^a_t, *p^c_t]`` flattened; ``w^c_t`` without dropout.
        """
        memory, mask = context.memory, context.mask
        b, length, d = memory.shape
        if self.pointer_projections is None:
            v_a = jax.vmap(pointer.dereference)(w_a, memory)  # [B, H^a, D] Mode 1: *p = M w
        else:  # W_o (w V) + b_o, V = M W_v + b_v per head
            v_a = self.pointer_projections.output(jnp.einsum("bhl,bhld->bhd", w_a, context.pointer_values))
        flat_a = v_a.reshape(b, -1)
        if not self.mode2_heads:
            return flat_a, jnp.zeros((b, 0, length), memory.dtype)
        q = self.query_net(flat_a).reshape(b, self.mode2_heads, d)  # Eq. 4
        if self.mode2_projections is None:  # Eq. 5-6 over M itself
            relate = jax.vmap(
                lambda q, mem, m: pointer.relational_access(
                    q, mem, m, score=self.score, inverse_temperature=context.tau_c
                )
            )
            weights, bank, spec = relate(q, memory, mask).weights, memory, "bhl,bld->bhd"  # [B, H^c, L]
        else:  # each head scores its own projected query against its own projected keys
            one = lambda q, k: pointer.attention_scores(q[None], k, score=self.score)[0]  # noqa: E731
            scores = jax.vmap(jax.vmap(one))(self.mode2_projections.queries(q), context.mode2_keys)  # [B, H^c, L]
            weights = jax.vmap(lambda s, m: pointer.masked_softmax(s, m, context.tau_c))(scores, mask)
            bank, spec = context.mode2_values, "bhl,bhld->bhd"  # [B, H^c, L, D]
        read_weights = weights
        if self.mode2_dropout and dropout_key is not None:
            keep = jax.random.bernoulli(dropout_key, 1.0 - self.mode2_dropout, weights.shape)
            read_weights = jnp.where(keep, weights / (1.0 - self.mode2_dropout), 0).astype(memory.dtype)
        values = jnp.einsum(spec, read_weights, bank)  # [B, H^c, D] *p^c_t (Eq. 6)
        if self.mode2_projections is not None:
            values = self.mode2_projections.output(values)
        return jnp.concatenate([flat_a, values.reshape(b, -1)], axis=-1), weights

    def decode_step(
        self,
        carry: _Carry,
        z: jax.Array | None,
        context: _Context,
        *,
        snap_pointers: bool,
        return_traces: bool,
        dropout_key: jax.Array | None = None,
    ):
        """One decoding step ``t``: ``point`` (Eq. 1-3), ``read`` (Mode 1, Eq. 4-6), Controller (Eq. 7), ``g^o``.

        ``h^c_t = GRU_c([*p^a_t, *p^c_t (, z_t)], h^c_{t-1})`` (Eq. 7) and
        ``logits_t = g^o([*p^a_t, *p^c_t, h^c_t])``. With ``controller_attention``,
        ``c_t = M softmax(v^T tanh(W_q h^c_{t-1} + W_k M))`` joins both:
        ``GRU_c([*p^a_t, *p^c_t, c_t (, z_t)])`` and ``g^o([*p^a_t, *p^c_t, h^c_t, c_t])``.
        Without ``controller_reads_mode2`` the Controller's input leaves ``*p^c_t`` out
        (``g^o`` still takes it), as in the authors' code.

        Args:
          carry: ``(h^a_{t-1} [B, H^a, D], p^a_{t-1} [B, H^a, A], h^c_{t-1} [B, D])``.
          z: ``[B, Z]`` ``z_t``, or ``None`` (no decoding input).
          context: the step's constants (``_Context``).
          snap_pointers: feed back the nearest address (``point``).
          return_traces: also return ``(w^a_t, p^a_t, w^c_t)``.
          dropout_key: the step's key for ``mode2_dropout`` (``read``), or ``None``.

        Returns:
          ``(carry_t, (logits_t [B, K], trace_t))``, ``trace_t`` being
          ``(w^a_t [B, H^a, L], p^a_t [B, H^a, A], w^c_t [B, H^c, L])`` or ``()``.
        """
        pu_hidden, w_a, p_a = self.point(carry, context, snap_pointers)
        values, w_c = self.read(w_a, context, dropout_key)
        extra = []
        if self.memory_attention is not None:  # c_t, queried by h^c_{t-1}
            w_m = self.memory_attention(carry.ctrl_hidden, context.attention_keys, context.mask)  # [B, L]
            extra = [jnp.einsum("bl,bld->bd", w_m.astype(context.memory.dtype), context.memory)]
        read = values if self.controller_reads_mode2 else values[:, : self.pointer_heads * self.hidden]
        ctrl_in = jnp.concatenate([read, *extra] + ([] if z is None else [z]), axis=-1)  # Eq. 7
        ctrl_hidden, _ = self.controller(carry.ctrl_hidden, ctrl_in)
        logits = self.output_net(jnp.concatenate([values, ctrl_hidden, *extra], axis=-1))  # g^o
        trace = (w_a, p_a, w_c) if return_traces else ()
        return _Carry(pu_hidden, p_a, ctrl_hidden), (logits, trace)

    # ---- the whole decoder --------------------------------------------------------------

    def _temperatures(self) -> dict[str, jax.Array]:
        # _Context's tau_a [H^a] and tau_c [max(H^c, 1)]: learned (softplus of a parameter), or held.
        if self.fixed_temperature is None:
            return {
                "tau_a": jax.nn.softplus(self.pointer_temperature[...]),
                "tau_c": jax.nn.softplus(self.mode2_temperature[...]),
            }
        return {
            "tau_a": jnp.full((self.pointer_heads,), self.fixed_temperature, jnp.float32),
            "tau_c": jnp.full((max(self.mode2_heads, 1),), self.fixed_temperature, jnp.float32),
        }

    def _projected(self, keys: jax.Array, memory: jax.Array) -> dict[str, jax.Array]:
        # With attention_projections: _Context's projected keys and values, once per sequence.
        if self.pointer_projections is None:
            return {}
        projected = {
            "pointer_keys": self.pointer_projections.keys(keys),  # [B, H^a, N, D]
            "pointer_values": self.pointer_projections.values(memory),  # [B, H^a, L, D]
        }
        if self.mode2_projections is not None:
            projected["mode2_keys"] = self.mode2_projections.keys(memory)  # [B, H^c, L, D]
            projected["mode2_values"] = self.mode2_projections.values(memory)
        return projected

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
        if length > 2**self.address_bits:
            raise UserError(
                f"inputs: expected at most 2^address_bits = {2**self.address_bits} memory slots, got L = {length}; "
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
        distractor_key: jax.Array | None = None,
        dropout_key: jax.Array | None = None,
        snap_pointers: bool = False,
        return_traces: bool = False,
        decoder_inputs: jax.Array | None = None,
        encoder_final: jax.Array | None = None,
    ):
        """Decode ``num_outputs`` steps: ``start``, then a ``lax.scan`` of ``decode_step``.

        Args:
          memory: ``[B, L, D]`` ``M``, one slot per input step.
          mask: ``[B, L]``, the real slots (``l(X)`` of them per example).
          base: ``[B]`` integer base addresses ``a_B``.
          num_outputs: ``T_out``, a static Python int.
          distractor_key: a PRNG key for the training distractors (``candidates``), or ``None``.
          dropout_key: a PRNG key for ``mode2_dropout`` (one key per step is split from it), or ``None``:
            no dropout (evaluation).
          snap_pointers: feed back the nearest address instead of the soft pointer.
          return_traces: also return ``PANMTraces``.
          decoder_inputs: ``[B, T_out, Z]`` ``z``, required iff ``input_features = Z > 0``.
          encoder_final: ``[B, D]``, the encoder's last hidden state: ``h^c_0`` with
            ``controller_start = "encoder_final"`` (required then), else unused.

        Returns:
          ``logits [B, T_out, K]``, or ``(logits, PANMTraces)``.
        """
        zs = self._decoding_inputs(memory, num_outputs, decoder_inputs)
        mask = jnp.asarray(mask).astype(bool)
        addresses = self.address_bank(base, memory.shape[1], memory.dtype)  # [B, L, A]
        keys, codes, candidates = self.candidates(addresses, mask, base, distractor_key, memory.dtype)
        context = _Context(
            memory=memory,
            mask=mask,
            keys=keys,
            codes=codes,
            candidates=candidates,
            **self._temperatures(),
            attention_keys=None if self.memory_attention is None else self.memory_attention.project_keys(memory),
            **self._projected(keys, memory),
        )
        step_keys = None
        if self.mode2_dropout and self.mode2_heads and dropout_key is not None:
            step_keys = jax.random.split(dropout_key, num_outputs)  # [T_out] keys: one per step

        def step(carry, x):
            z, key = x
            return self.decode_step(
                carry, z, context, snap_pointers=snap_pointers, return_traces=return_traces, dropout_key=key
            )

        carry = self.start(memory, mask, base, encoder_final)
        _, (logits, trace) = scan(step, carry, (zs, step_keys), length=num_outputs, remat=self.remat)
        logits = jnp.swapaxes(logits, 0, 1)  # [B, T_out, K]
        if not return_traces:
            return logits
        w_a, p_a, w_c = (jnp.swapaxes(x, 0, 1) for x in trace)
        return logits, PANMTraces(w_a, p_a, w_c, base)
