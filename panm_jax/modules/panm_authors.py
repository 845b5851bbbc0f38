"""Choices of the authors' public PyTorch code of PANM, as options for measuring them (not the paper).

Le et al. 2024's published numbers come from their code (thaihungle/PANM), which differs from the paper's
equations (``modules.panm``) in the ways below. Each is an option of ``AuthorsCode``, the variant
``"authors_code"`` of PANM (``models.panm.PANMConfig.variant``), off by default, so that its effect can be
measured; ``AuthorsDecoder`` overrides the decoder's steps they change (a sibling of this library's
``modules.panm_extensions.ExtendedDecoder``: the two variants do not combine). Further choices of that code
live where they act: ``score="scaled_dot"`` (``modules.panm``), the bidirectional GRU encoder
``encoder="bigru"``, ``random_base_at_eval`` and ``init="pytorch"`` (``models.panm``,
``modules.pytorch_init``); ``models.panm.AUTHORS_CODE`` names them all.

* ``eq3_addresses="authors_view"``, the authors' Eq. 3. Their code keeps the bank sequence-first,
  ``[L, B, A]``, and computes Eq. 3 as ``aweights.bmm(A.view(B, L, A))``: a reshape where a transpose was
  meant, so that at ``B > 1`` an example's new pointer averages rows of other examples' banks, whose bases
  differ (``authors_view``). The option feeds those pointers back to the Pointer Units (Eq. 1). Eq. 2's
  keys stay each example's own ``g^a(A)``, as in that code; with bucket padding ``L`` is the padded length
  (that code pads nothing: one length per batch).
* ``controller_start="encoder_final"``: the decoder starts at the encoder's last hidden state (a GRU
  state, bounded whatever ``l(X)``) instead of Eq. 7's ``sum_i M[i]`` (``"sum"``).
* ``controller_reads_mode2=False``: the Controller is fed Mode 1's reads only (Mode 2's ``*p^c_t`` joins
  ``g^o``'s input alone, where Eq. 7 feeds it to the Controller too).
* ``controller_attention``: an additive (Bahdanau) attention over ``M`` queried by ``h^c_{t-1}``,
  ``c_t = M softmax(v^T tanh(W_q h^c_{t-1} + W_k M))``, whose context joins the Controller's input and
  ``g^o``'s: ``GRU_c([*p^a_t, *p^c_t, c_t (, z_t)])`` and ``g^o([*p^a_t, *p^c_t, h^c_t, c_t])``.
* ``mode2_dropout = p``: the dropout (0.5 there) that its Mode-2 attention applies to its weights in
  training: ``*p^c_t`` reads ``M (w^c_t * keep / (1 - p))``, ``keep ~ Bernoulli(1 - p)`` per weight.
* ``attention_projections``: the query, key, value and output projections of the
  ``torch.nn.MultiheadAttention`` (one head) through which it reads Modes 1 and 2
  (``modules.attention_projections``): per head, Eq. 2 scores ``W_q h^a_t + b_q`` against
  ``W_k g^a(A[n]) + b_k`` and Mode 1 reads ``W_o (w^a_t V) + b_o`` with ``V = M W_v + b_v``; Eq. 5-6
  likewise with ``q_t`` and keys ``M W_k + b_k``. Eq. 3's pointer still averages the binary codes.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.kernels import pointer
from panm_jax.modules.additive_attention import AdditiveAttention
from panm_jax.modules.attention_projections import AttentionProjections
from panm_jax.modules.controllers import GRUCell
from panm_jax.modules.layers import MLP
from panm_jax.modules.panm import (
    DecoderCarry,
    DecoderContext,
    PANMDecoder,
    extend,
)
from panm_jax.options import check_options, option

__all__ = ["AuthorsCode", "AuthorsContext", "AuthorsDecoder", "authors_view"]


def authors_view(addresses: jax.Array) -> jax.Array:
    """The bank ``[B, L, A]`` as the authors' public code hands it to Eq. 3: ``A.view(B, L, A)`` of the
    sequence-first ``[L, B, A]`` tensor, a reshape where a transpose was meant.

    Row ``l`` of example ``i`` becomes row ``(i L + l) // B`` of example ``(i L + l) mod B``: with
    ``B > 1`` an example's pointer averages other examples' addresses (each with its own base);
    with ``B = 1`` nothing changes.
    """
    return jnp.swapaxes(addresses, 0, 1).reshape(addresses.shape)


@dataclasses.dataclass(frozen=True)
class AuthorsCode:
    """The authors' code's choices of the decoder (module docstring): the variant ``"authors_code"`` of PANM."""

    name: ClassVar[str] = "authors_code"

    eq3_addresses: str = option(
        "own",
        checks.one_of,
        ("own", "authors_view"),
        doc="Eq. 3 averages the example's own bank, or \"authors_view\" (the reshaped bank of the authors' code)",
    )
    controller_attention: bool = option(
        False, checks.boolean, doc="the authors' code: an additive attention over M feeds the Controller"
    )
    mode2_dropout: float = option(
        0.0,
        checks.number,
        0.0,
        1.0,
        hi_open=True,
        doc="dropout on the Mode-2 weights in training (the authors' code: 0.5)",
    )
    attention_projections: bool = option(
        False, checks.boolean, doc="the authors' code: W_q, W_k, W_v, W_o around Modes 1 and 2"
    )
    controller_reads_mode2: bool = option(
        True, checks.boolean, doc="Eq. 7 feeds *p^c_t to the Controller; the authors' code: g^o only"
    )
    controller_start: str = option(
        "sum",
        checks.one_of,
        ("sum", "encoder_final"),
        doc='h^c_0: "sum" of the slots (Eq. 7), or the authors\' code\'s "encoder_final" (the encoder\'s last state)',
    )

    def __post_init__(self):
        check_options(self)

    def pointer_options(self) -> list[str]:
        """Every option set here (``"name = value"``): the authors' code's decoder reads the Mode-1 values, so
        none may be set without them (``pointer_heads = 0``)."""
        return [
            f"{f.name} = {getattr(self, f.name)!r}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != f.default
        ]


@dataclasses.dataclass(frozen=True)
class AuthorsContext(DecoderContext):
    """``DecoderContext`` and what the authors' options read at every step."""

    encoder_final: jax.Array | None = None  # [B, D] the encoder's last hidden state
    dropout_key: jax.Array | None = None  # the call's key of the Mode-2 dropout (training only)
    step_key: jax.Array | None = None  # the step's key of the Mode-2 dropout
    attention_keys: jax.Array | None = None  # [B, L, D] W_k M of the controller attention
    pointer_keys: jax.Array | None = None  # [B, H^a, N, D] W_k keys + b_k, per Mode-1 head
    pointer_values: jax.Array | None = None  # [B, H^a, L, D] M W_v + b_v, what each Mode-1 head reads
    mode2_keys: jax.Array | None = None  # [B, H^c, L, D] M W_k + b_k, per Mode-2 head
    mode2_values: jax.Array | None = None  # [B, H^c, L, D] M W_v + b_v


class AuthorsDecoder(PANMDecoder):
    """``PANMDecoder`` with the authors' code's options, ``variant`` (module docstring)."""

    variant_config = AuthorsCode
    variant: AuthorsCode

    @classmethod
    def call_options(cls, variant: AuthorsCode, train: bool, key) -> dict:
        """The per-call options of ``context``: the Mode-2 dropout's key (``key``'s stream 2, training only)."""
        return {"dropout_key": jax.random.fold_in(key, 2) if train and variant.mode2_dropout else None}

    def build_access(self, rngs: nnx.Rngs) -> None:
        """``PANMDecoder.build_access``, then the projections around Modes 1 and 2 and the controller
        attention (``None`` where off)."""
        super().build_access(rngs)
        c, v = self.config, self.variant
        d, ha, hc = c.hidden, c.pointer_heads, c.mode2_heads
        projections = v.attention_projections
        self.pointer_projections = AttentionProjections(ha, d, d, d, d, rngs=rngs) if projections else None
        self.mode2_projections = AttentionProjections(hc, d, d, d, d, rngs=rngs) if projections and hc else None
        self.memory_attention = AdditiveAttention(d, d, d, rngs=rngs) if v.controller_attention else None

    def build_controller(self, num_classes: int, rngs: nnx.Rngs) -> None:
        """The Controller over the reads it takes (and ``c_t``, ``z_t``), and ``g^o`` (with ``c_t``)."""
        c, v = self.config, self.variant
        d, ha, hc = c.hidden, c.pointer_heads, c.mode2_heads
        extra = d if v.controller_attention else 0
        reads = (ha + hc) * d if v.controller_reads_mode2 else ha * d
        self.controller = GRUCell(reads + self.input_features + extra, d, rngs=rngs)  # Ctrl (Eq. 7)
        self.output_net = MLP((ha + hc + 1) * d + extra, c.mlp_hidden, num_classes, rngs=rngs)  # g^o

    def context(self, memory, mask, base, *, encoder_final=None, dropout_key=None, **options):
        """``PANMDecoder.context``, with Eq. 3's bank codes in the authors' view, the projected keys and
        values (once per sequence), the encoder's final state and the dropout's key."""
        context = super().context(memory, mask, base, **options)
        codes = context.codes
        if self.variant.eq3_addresses == "authors_view":
            codes = authors_view(codes)
        extra = {}
        if self.memory_attention is not None:
            extra["attention_keys"] = self.memory_attention.project_keys(memory)
        if self.pointer_projections is not None:
            extra["pointer_keys"] = self.pointer_projections.keys(context.keys)  # [B, H^a, N, D]
            extra["pointer_values"] = self.pointer_projections.values(memory)  # [B, H^a, L, D]
        if self.mode2_projections is not None:
            extra["mode2_keys"] = self.mode2_projections.keys(memory)  # [B, H^c, L, D]
            extra["mode2_values"] = self.mode2_projections.values(memory)
        return extend(
            context, AuthorsContext, codes=codes, encoder_final=encoder_final, dropout_key=dropout_key, **extra
        )

    def start(self, context) -> DecoderCarry:
        """``PANMDecoder.start``; with ``controller_start="encoder_final"``, ``h^c_0`` is the context's
        ``encoder_final`` ``[B, D]`` (required then)."""
        carry = super().start(context)
        if self.variant.controller_start != "encoder_final":
            return carry
        memory, encoder_final = context.memory, context.encoder_final
        b, _, d = memory.shape
        if encoder_final is None or tuple(encoder_final.shape) != (b, d):
            got = None if encoder_final is None else tuple(encoder_final.shape)
            raise UserError(
                f"encoder_final: expected the encoder's final hidden state of shape {(b, d)} "
                f"(controller_start = 'encoder_final'), got {got}"
            )
        return carry._replace(ctrl_hidden=encoder_final.astype(memory.dtype))

    def step_inputs(self, zs, context, num_outputs):
        """``(z_t, the step's dropout key)``: one key per step split from the call's, or ``None``."""
        keys = None
        if self.variant.mode2_dropout and self.config.mode2_heads and context.dropout_key is not None:
            keys = jax.random.split(context.dropout_key, num_outputs)  # [T_out] keys: one per step
        return zs, keys

    def decode_step(self, carry, x, context, *, return_traces):
        """``PANMDecoder.decode_step`` with the step's dropout key in the context."""
        z, step_key = x
        return super().decode_step(
            carry, z, dataclasses.replace(context, step_key=step_key), return_traces=return_traces
        )

    def address_weights(self, pu_hidden, context):
        """Eq. 2; with the projections, each head scores its own projected query against its own
        projected keys."""
        if self.pointer_projections is None:
            return super().address_weights(pu_hidden, context)
        score = self.config.score
        one = lambda q, k, m, tau: pointer.address_attention(  # noqa: E731
            q[None], k, m, score=score, inverse_temperature=tau[None]
        )[0]
        per_head = jax.vmap(one, in_axes=(0, 0, None, 0))
        queries = self.pointer_projections.queries(pu_hidden)  # [B, H^a, D]
        return jax.vmap(per_head, in_axes=(0, 0, 0, None))(
            queries, context.pointer_keys, context.candidates, context.tau_a
        )  # [B, H^a, L (+ K)]

    def mode1(self, w_a, context):
        """Mode 1; with the projections ``W_o (w V) + b_o``, ``V = M W_v + b_v`` per head."""
        if self.pointer_projections is None:
            return super().mode1(w_a, context)
        return self.pointer_projections.output(jnp.einsum("bhl,bhld->bhd", w_a, context.pointer_values))

    def mode2_weights(self, q, context):
        """Eq. 5; with the projections, each head's projected query against its projected keys."""
        if self.mode2_projections is None:
            return super().mode2_weights(q, context)
        one = lambda q, k: pointer.attention_scores(q[None], k, score=self.config.score)[0]  # noqa: E731
        scores = jax.vmap(jax.vmap(one))(self.mode2_projections.queries(q), context.mode2_keys)  # [B, H^c, L]
        return jax.vmap(lambda s, m: pointer.masked_softmax(s, m, context.tau_c))(scores, context.mask)

    def mode2(self, q, context):
        """Eq. 5-6, reading through the dropped-out weights (with the context's ``step_key``) and the
        projections; returns ``w^c_t`` without dropout."""
        weights = self.mode2_weights(q, context)
        read_weights = weights
        p = self.variant.mode2_dropout
        step_key = getattr(context, "step_key", None)
        if p and step_key is not None:
            keep = jax.random.bernoulli(step_key, 1.0 - p, weights.shape)
            read_weights = jnp.where(keep, weights / (1.0 - p), 0).astype(context.memory.dtype)
        if self.mode2_projections is None:
            return jnp.einsum("bhl,bld->bhd", read_weights, context.memory), weights
        values = jnp.einsum("bhl,bhld->bhd", read_weights, context.mode2_values)
        return self.mode2_projections.output(values), weights

    def control(self, ctrl_hidden, values, z, context):
        """Eq. 7 and ``g^o`` with the controller attention's ``c_t`` (queried by ``h^c_{t-1}``) in both
        inputs, and without ``*p^c_t`` in the Controller's unless ``controller_reads_mode2``."""
        c = self.config
        extra = []
        if self.memory_attention is not None:  # c_t, queried by h^c_{t-1}
            w_m = self.memory_attention(ctrl_hidden, context.attention_keys, context.mask)  # [B, L]
            extra = [jnp.einsum("bl,bld->bd", w_m.astype(context.memory.dtype), context.memory)]
        reads = values if self.variant.controller_reads_mode2 else values[:, : c.pointer_heads * c.hidden]
        ctrl_in = jnp.concatenate([reads, *extra] + ([] if z is None else [z]), axis=-1)  # Eq. 7
        ctrl_hidden, _ = self.controller(ctrl_hidden, ctrl_in)
        return ctrl_hidden, self.output_net(jnp.concatenate([values, ctrl_hidden, *extra], axis=-1))  # g^o
