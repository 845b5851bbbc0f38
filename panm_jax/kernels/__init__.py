"""Pure memory kernels: no parameters, no Flax.

Each memory family lives in its own module and provides an arrays-only
``XxxState``, an ``init_state``, an ``XxxControls`` of already-activated interface
values, ``step(state, controls, mask=None) -> (state, read)`` in ``lax.scan``
carry order, ``controls_from_interface`` (the split-and-activate of a raw
controller output), and one public function per equation.

Leading axes, one rule for every family (NTM, DNC, Stack, Queue, DeQue,
Stack-RNN, Tape-RNN):

* ``init_state(..., batch_shape=())`` puts ``batch_shape`` in front of every
  field of the state;
* ``step(state, controls, mask)`` takes a state whose fields carry any leading
  (batch) axes ``[...]`` in front of the shapes its docstring gives for one
  example, controls and a mask with the same leading axes, and returns a state
  and a read with them; stepping a ``[2, 3]`` batch equals stepping each of its
  six examples;
* ``controls_from_interface(raw [..., P])`` keeps the leading axes of ``raw``.

Raw interface values are bounded: every ``controls_from_interface`` sets values
beyond ``+-validation.raw_limit(dtype)`` (``1e4``; ``128`` in float16) to that
bound before its activations, with gradient 0 there, so that value and gradient
stay finite for any finite raw value. Sizes are checked before allocating:
``init_state`` refuses a state that int32 indices or XLA cannot address
(``validation.check_state_sizes``).

So a kernel can be called on a batch directly, or on one example inside the
caller's own ``jax.vmap``: the two compile to the same program (the NTM, DNC,
Stack-RNN and Tape-RNN steps map their one-example equations over the leading
axes with ``jax.vmap`` at trace time; the Stack, Queue and DeQue are written
for leading axes). The per-equation functions say in their docstrings which
shapes they take; those written for one example (``ntm.address``,
``dnc.allocation``, PANM's ``pointer`` functions, ...) are mapped with
``jax.vmap``.

Modules:

* ``scan``: the one recurrence wrapper (masks, remat, unroll).
* ``addressing``: content addressing and the NTM location-addressing primitives.
* ``ntm``: the Neural Turing Machine memory (Graves et al. 2014).
* ``dnc``: the Differentiable Neural Computer memory (Graves et al. 2016).
* ``stack``, ``queue``, ``deque``: the neural Stack, Queue and DeQue
  (Grefenstette et al. 2015), one module each with the same contract.
* ``stack_rnn``: the Stack-RNN's stack of soft push / pop / no-op actions
  (Joulin & Mikolov 2015).
* ``tape_rnn``: the Tape-RNN's tape of soft write-and-move actions (Delétang et
  al. 2023).
* ``pointer``: PANM's address bank, pointer attention and Mode-1/Mode-2 access
  (Le et al. 2024, "Plug, Play, and Generalize: Length Extrapolation with
  Pointer-Augmented Neural Memory").
* ``validation``: entry checks with named errors (shapes and dtypes at trace
  time, ranges eagerly).

Import the family you need: ``from panm_jax.kernels import ntm``. Importing this
package imports none of them; each loads on first use.
"""

from __future__ import annotations

from panm_jax._lazy import lazy_exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

__all__ = [
    "addressing",
    "deque",
    "dnc",
    "ntm",
    "pointer",
    "queue",
    "scan",
    "stack",
    "stack_rnn",
    "tape_rnn",
    "validation",
]

if TYPE_CHECKING:
    from panm_jax.kernels import (
        addressing,
        deque,
        dnc,
        ntm,
        pointer,
        queue,
        scan,
        stack,
        stack_rnn,
        tape_rnn,
        validation,
    )


__getattr__, __dir__ = lazy_exports(__name__, {name: f"{__name__}.{name}" for name in __all__}, __all__)
