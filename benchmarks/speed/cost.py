"""Count a function's FLOPs and recurrent-state bytes from its jaxpr, loops included.

XLA's cost analysis counts the body of a ``while`` loop once, so a ``lax.scan``
over T steps is undercounted T-fold. This walks the jaxpr instead and multiplies
every ``scan`` body by its length:

* FLOPs: ``dot_general`` counts ``2 * (output elements) * (contracted size)``;
  every other primitive counts one FLOP per output element (elementwise work,
  reductions); sub-jaxprs (``pjit``, ``custom_jvp``, ``custom_vjp``, ``remat``,
  ``cond`` (the largest branch), ``scan``) are walked. ``while`` loops with an
  unknown trip count are counted once. A foreign call (``ffi_call``) of the DNC
  link's CPU kernel counts what ``_dnc_link_cpu.flops`` says, the same
  arithmetic as the equations it replaces.
* Bytes: the memory traffic a step cannot avoid: for every ``scan``, its carry
  is read and written once per iteration (``2 * carry bytes * length``) and its
  per-step inputs and outputs are read or written once. The forward and the
  transposed (backward) scans of a gradient are both in the jaxpr, so both count.
  This is a lower bound: the bytes XLA actually moves can only be more.

Used by ``benchmarks/speed/suite.py`` for its floors: ``max(FLOPs / matmul rate,
bytes / memory bandwidth)``.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.extend.core  # noqa: F401  (ClosedJaxpr, Jaxpr)
import numpy as np

from panm_jax.kernels import _dnc_link_cpu

__all__ = ["count"]


def _size(aval) -> int:
    return int(np.prod(aval.shape)) if hasattr(aval, "shape") else 1


def _bytes(aval) -> int:
    return _size(aval) * (np.dtype(aval.dtype).itemsize if hasattr(aval, "dtype") else 4)


def _sub_jaxprs(eqn):
    for value in eqn.params.values():
        if isinstance(value, jax.extend.core.ClosedJaxpr):
            yield value.jaxpr
        elif isinstance(value, jax.extend.core.Jaxpr):
            yield value
        elif isinstance(value, (tuple, list)):
            for v in value:
                if isinstance(v, jax.extend.core.ClosedJaxpr):
                    yield v.jaxpr
                elif isinstance(v, jax.extend.core.Jaxpr):
                    yield v


def _stacked(outer, inner, length: int) -> bool:
    """Whether ``outer`` is ``inner`` stacked over the scan's ``length`` steps."""
    return tuple(outer.shape) == (length, *inner.shape)


def _scan_operands(eqn, body, length: int) -> tuple[float, float, float]:
    """Bytes of a scan's carry (one copy), its whole ``xs`` and its whole ``ys``.

    Read from the shapes, not from the scan's parameters (their names changed:
    jax 0.11 replaced ``num_consts``/``num_carry``): an operand or result whose
    shape is the body's with a leading ``length`` axis is scanned over (``xs``,
    ``ys``); a result of the body's own shape is carried. The body's outputs
    line up with the scan's results; its inputs line up with the scan's operands
    when both have as many, and only then are the ``xs`` counted.
    """
    carry = ys = 0.0
    for outer, inner in zip(eqn.outvars, body.outvars, strict=True):
        if _stacked(outer.aval, inner.aval, length):
            ys += _bytes(outer.aval)
        else:
            carry += _bytes(outer.aval)
    xs = 0.0
    if len(eqn.invars) == len(body.invars):
        xs = sum(
            _bytes(o.aval) for o, i in zip(eqn.invars, body.invars, strict=True) if _stacked(o.aval, i.aval, length)
        )
    return carry, xs, ys


def _kernel_flops(eqn) -> float | None:
    """A foreign call's arithmetic, where the library's kernel says it (the DNC link's CPU kernel)."""
    link, reads = eqn.invars[0].aval, eqn.invars[3].aval if len(eqn.invars) > 3 else None
    if reads is None or len(link.shape) < 2 or len(reads.shape) < 2:
        return None
    return _dnc_link_cpu.flops(eqn.params.get("target_name", ""), tuple(link.shape), int(reads.shape[-2]))


def _walk(jaxpr) -> tuple[float, float]:
    flops = 0.0
    traffic = 0.0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "scan":
            body = eqn.params["jaxpr"].jaxpr
            length = eqn.params["length"]
            f, b = _walk(body)
            carry, xs, ys = _scan_operands(eqn, body, length)
            flops += f * length
            traffic += b * length + 2 * carry * length + xs + ys
        elif name == "cond":
            branches = [_walk(br.jaxpr) for br in eqn.params["branches"]]
            flops += max(f for f, _ in branches)
            traffic += max(b for _, b in branches)
        elif name == "ffi_call" and (kernel := _kernel_flops(eqn)) is not None:
            flops += kernel
        elif name == "dot_general":
            (lhs_contract, _), _ = eqn.params["dimension_numbers"]
            contracted = int(np.prod([eqn.invars[0].aval.shape[d] for d in lhs_contract])) if lhs_contract else 1
            flops += 2.0 * _size(eqn.outvars[0].aval) * contracted
        else:
            subs = list(_sub_jaxprs(eqn))
            if subs:
                for sub in subs:
                    f, b = _walk(sub)
                    flops += f
                    traffic += b
            else:
                flops += sum(_size(v.aval) for v in eqn.outvars)
    return flops, traffic


def count(fn: Callable, *args) -> dict[str, float]:
    """``{"flops": ..., "bytes": ...}`` of ``fn(*args)`` (see the module docstring)."""
    jaxpr = jax.make_jaxpr(fn)(*args)
    flops, traffic = _walk(jaxpr.jaxpr)
    return {"flops": flops, "bytes": traffic}
