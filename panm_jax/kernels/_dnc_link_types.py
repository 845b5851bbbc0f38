"""``LinkAndDirections``: what the DNC's link step returns, in either implementation.

Its own module because three modules use it: ``dnc`` (which exports it and whose
``link_and_directions`` returns it), and ``_dnc_link_cpu`` (the same step as a
C++ kernel), which ``dnc`` imports and which must therefore import nothing from
``dnc``.

Graves et al. 2016, "Hybrid computing using a neural network with dynamic
external memory", Nature 538 (Methods, "Temporal memory linkage"): the link
matrix ``L_t`` and the directional weights ``b_t = L_t^T w^r_{t-1}`` and
``f_t = L_t w^r_{t-1}``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax

__all__ = ["LinkAndDirections"]


class LinkAndDirections(NamedTuple):
    """What ``dnc.link_and_directions`` returns: this step's link and its directions."""

    link: jax.Array  # [N, N] L_t
    backward: jax.Array  # [R, N] b_t = L_t^T w^r_{t-1}
    forward: jax.Array  # [R, N] f_t = L_t w^r_{t-1}
