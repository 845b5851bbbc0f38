"""Pure memory kernels: no parameters, no Flax, one example at a time.

Each memory family lives in its own module and provides an arrays-only
``XxxState``, an ``init_state``, an ``XxxControls`` of already-activated interface
values, ``step(state, controls, mask=None) -> (state, read)`` in ``lax.scan``
carry order, ``controls_from_interface`` (the split-and-activate of a raw
controller output), and one public function per equation.

Modules:
  scan        the one recurrence wrapper (masks, remat, unroll)
  addressing  content addressing and the NTM location-addressing primitives
  ntm         the Neural Turing Machine memory
  dnc         the Differentiable Neural Computer memory
  stack       the neural Stack, Queue and DeQue
  stack_rnn   the Stack-RNN's stack of soft push / pop / no-op actions (Joulin & Mikolov 2015)
  tape_rnn    the Tape-RNN's tape of soft write-and-move actions (Delétang et al. 2023)
  pointer     PANM's address bank, pointer attention, Mode-1/Mode-2 access
  validation  entry checks with named errors (shapes and dtypes at trace time, ranges eagerly)

Import the family you need: ``from panm_jax.kernels import ntm``.
"""
