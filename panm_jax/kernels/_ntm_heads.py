"""``HeadControls``: the activated addressing controls of a group of NTM heads.

Its own module because two modules use it: ``ntm`` (which exports it) and
``_ntm_vjp`` (the hand-written VJP of the NTM step, which ``ntm`` imports and
which must therefore import nothing from ``ntm``).

The fields are the addressing outputs of each head in Graves, Wayne & Danihelka
2014, "Neural Turing Machines" (arXiv:1410.5401), §3.3: the key vector ``k_t``
and key strength ``beta_t`` of content addressing (Eq. 5), the interpolation
gate ``g_t`` (Eq. 7), the shift weighting ``s_t`` (Eq. 8) and the sharpening
exponent ``gamma_t`` (Eq. 9), with the ranges the paper requires of them
(``beta_t`` positive, ``g_t`` in ``(0, 1)``, ``s_t`` a distribution,
``gamma_t >= 1``); ``ntm.controls_from_interface`` meets those ranges with its
activations.
"""

from __future__ import annotations

from typing import NamedTuple

import jax

__all__ = ["HeadControls"]


class HeadControls(NamedTuple):
    """Activated addressing controls of a group of ``K`` heads (Graves et al. 2014, §3.3, Eqs. 5-9)."""

    key: jax.Array  # [K, W] k_t (Eq. 5; identity activation)
    strength: jax.Array  # [K]    beta_t >= 0 (Eq. 5; softplus)
    gate: jax.Array  # [K]    g_t in [0, 1] (Eq. 7; sigmoid)
    shift: jax.Array  # [K, S] s_t, a distribution over shifts -(S-1)/2 .. (S-1)/2 (Eq. 8; softmax)
    sharpen: jax.Array  # [K]    gamma_t >= 1 (Eq. 9; 1 + softplus)
