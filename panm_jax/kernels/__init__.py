"""Pure memory kernels: no parameters, no Flax, one example at a time (the Stack,
Queue and DeQue also take leading batch axes).

Each memory family lives in its own module and provides an arrays-only
``XxxState``, an ``init_state``, an ``XxxControls`` of already-activated interface
values, ``step(state, controls, mask=None) -> (state, read)`` in ``lax.scan``
carry order, ``controls_from_interface`` (the split-and-activate of a raw
controller output), and one public function per equation.

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
