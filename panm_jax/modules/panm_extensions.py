"""This library's own options of the PANM decoder: experiments, not in the paper (all off by default).

``ExtendedDecoder`` is ``modules.panm.PANMDecoder`` with the steps these options change overridden; its
options are the config ``Ours``, which a model config holds as its ``variant``
(``models.panm.PANMConfig``). With every option at its default it is the paper's decoder.

Distractors (``distractors = K``, ``distractor_sampling``). Trained on lengths ``<= L`` (12 slots for Copy
at ``L = 10``), the softmax of Eq. 2 only ever tells apart a window of fewer than 16 consecutive addresses,
and their 4 lowest bits already do that: nothing in the loss asks the Pointer Units to get the higher bits
of ``p^a_t`` right, and at test time they do not. Traced on Copy at length 81
(``python -m benchmarks.accuracy.diagnose_pointer``), the head 0 of a model trained with the scaled dot
score steps through slots 6, 7, ..., 15 and then jumps to 64: it moves the low bits right and the high bits
at random.

With ``distractors = K``, each training example adds ``K`` addresses from outside its bank to the softmax
of Eq. 2 and to the average of Eq. 3; they hold no data, so the mass they take reads nothing, and a
distractor that shares its low bits with the right address can only be told apart by the high bits.
``distractor_sampling="uniform"`` draws them uniformly from the addresses off the bank
(``pointer.off_bank_addresses``); ``"neighbours"`` flips one random bit of a random bank address
(``pointer.neighbour_addresses``), so that each bit is tested by itself::

    w_t     = softmax(tau_a score(h^a_t, [g^a(A[1..l(X)]); g^a(d_1..d_K)]))
    p^a_t   = [A; bin(d_1..d_K)] w_t                    (Eq. 3 over the bank and the distractors)
    *p^a_t  = M w_t[1..l(X)]                            (Mode 1 reads the bank's part)

At evaluation (and whenever no distractor key is passed) the decoder is exactly Eq. 2-3. The softmax is not
taken over the whole space of ``2^b`` addresses instead: at initialisation that leaves about 1% of the mass
on the bank, and Mode 1 is then not learned.

Snapping (``snap_pointers``: "never", "eval" or "always"). The pointer fed back to the Pointer Units, and
kept in the traces, is ``pointer.snap_to_address(p^a_t)``: each bit rounded to 0 or 1 (straight-through
gradient). Over a long memory every slot takes a little of the softmax's mass, so the soft pointer's high
bits drift from 0 and 1 and the drift compounds from step to step; a snapped pointer is always one address.
"eval" snaps at evaluation only, "always" in training too.

The controller's start (``controller_start``): ``"sum"`` is Eq. 7's ``h^c_0 = sum_i M[i]`` over the real
slots (the paper's), whose scale grows with ``l(X)``; ``"mean"`` divides it by ``l(X)`` (at least 1), so
that its scale does not. (The authors' code starts from the encoder's last hidden state:
``modules.panm_authors``.)
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from panm_jax import checks
from panm_jax.kernels import pointer
from panm_jax.modules.panm import DecoderContext, PANMDecoder, extend, lengths
from panm_jax.options import check_options, option

__all__ = ["DISTRACTOR_SAMPLING", "ExtendedContext", "ExtendedDecoder", "Ours"]

# How the training distractors are drawn: uniformly off the bank, or one bit away from it.
DISTRACTOR_SAMPLING = {"uniform": pointer.off_bank_addresses, "neighbours": pointer.neighbour_addresses}


@dataclasses.dataclass(frozen=True)
class Ours:
    """This library's options of the decoder (module docstring): the variant ``"ours"`` of PANM."""

    name: ClassVar[str] = "ours"

    distractors: int = option(0, checks.nonnegative_int, doc="off-bank addresses added to Eq. 2 in training")
    distractor_sampling: str = option(
        "uniform",
        checks.one_of,
        DISTRACTOR_SAMPLING,
        doc='"uniform" off the bank, or "neighbours": one bit away from it',
    )
    snap_pointers: str = option(
        "never",
        checks.one_of,
        ("never", "eval", "always"),
        doc='feed back the nearest address: "never", "eval" (only) or "always"',
    )
    controller_start: str = option(
        "sum", checks.one_of, ("sum", "mean"), doc='h^c_0: "sum" of the slots (Eq. 7) or their "mean"'
    )

    def __post_init__(self):
        check_options(self)

    def pointer_options(self) -> list[str]:
        """The options set here that act on the Mode-1 pointers (``"name = value"``): none may be set
        without them (``pointer_heads = 0``)."""
        acting = ("distractors", "distractor_sampling", "snap_pointers")
        fields = {f.name: f for f in dataclasses.fields(self)}
        return [f"{n} = {getattr(self, n)!r}" for n in acting if getattr(self, n) != fields[n].default]


@dataclasses.dataclass(frozen=True)
class ExtendedContext(DecoderContext):
    """``DecoderContext`` and whether to snap the pointers fed back."""

    snap: bool = False


class ExtendedDecoder(PANMDecoder):
    """``PANMDecoder`` with this library's options, ``variant`` (module docstring)."""

    variant_config = Ours
    variant: Ours

    @classmethod
    def call_options(cls, variant: Ours, train: bool, key) -> dict:
        """The per-call options of ``context`` for a call in training (``train``) or not: the distractors'
        key (from ``key``'s stream 1, training only) and whether to snap."""
        snap = variant.snap_pointers == "always" or (variant.snap_pointers == "eval" and not train)
        distractor_key = jax.random.fold_in(key, 1) if train and variant.distractors else None
        return {"distractor_key": distractor_key, "snap_pointers": snap}

    def context(self, memory, mask, base, *, distractor_key=None, snap_pointers: bool = False, **options):
        """``PANMDecoder.context``, with ``K`` distractors after the bank when ``distractor_key`` is given
        (``DISTRACTOR_SAMPLING[distractor_sampling]`` per example) and the snapping flag."""
        context = super().context(memory, mask, base, **options)
        v, bits = self.variant, self.config.address_bits
        if not (v.distractors and distractor_key is not None):
            return extend(context, ExtendedContext, snap=snap_pointers)
        sample = DISTRACTOR_SAMPLING[v.distractor_sampling]
        draw = jax.vmap(lambda k, a, n: sample(k, a, n, v.distractors, bits))
        drawn, valid = draw(jax.random.split(distractor_key, base.shape[0]), base, lengths(context.mask))  # [B, K]
        codes = jax.vmap(jax.vmap(lambda a: pointer.address_bits(a, bits, dtype=memory.dtype)))(drawn)
        return extend(
            context,
            ExtendedContext,
            keys=jnp.concatenate([context.keys, self.address_embedding(codes)], axis=1),  # [B, L + K, D]
            codes=jnp.concatenate([context.codes, codes], axis=1),  # [B, L + K, A]
            candidates=jnp.concatenate([context.candidates, valid], axis=1),  # [B, L + K]
            snap=snap_pointers,
        )

    def controller_start_state(self, memory, mask):
        """``h^c_0``: Eq. 7's sum, or with ``controller_start="mean"`` that sum divided by ``l(X)`` (at least 1)."""
        total = super().controller_start_state(memory, mask)
        if self.variant.controller_start != "mean":
            return total
        count = jnp.maximum(jnp.sum(jnp.asarray(mask).astype(bool), axis=1), 1).astype(memory.dtype)  # [B] l(X)
        return total / count[:, None]

    def point(self, carry, context):
        """``PANMDecoder.point``; with the context's ``snap``, ``p^a_t`` is the nearest address (fed back)."""
        pu_hidden, w_a, p_a = super().point(carry, context)
        if getattr(context, "snap", False):
            p_a = pointer.snap_to_address(p_a)  # the nearest address is fed back (Eq. 1's input)
        return pu_hidden, w_a, p_a
