"""``init_state`` refuses sizes that cannot be indexed or allocated, before allocating anything.

A state axis beyond ``2^31 - 1`` cannot be indexed with the kernels' int32
indices, and an array of ``2^63`` bytes or more cannot be described by XLA, which
then aborts the process (SIGABRT, "overflow in static extent product") instead of
raising: ``stack.init_state(2**31, 2**31)`` used to kill Python. Each kernel's
``init_state`` must raise ``UserError`` naming the argument, the limit and the
value. Were the check after the allocation, these calls would abort the test
process or exhaust its memory; they return at once.
"""

from __future__ import annotations

import pytest

from panm_jax.errors import UserError
from panm_jax.kernels import deque, dnc, ntm, queue, stack, stack_rnn, tape_rnn
from panm_jax.kernels.validation import MAX_AXIS

BIG = MAX_AXIS + 1  # 2^31

# name -> (init_state with one axis of 2^31, the argument named, init_state of more than 2^63 bytes)
CASES = {
    "ntm": (lambda: ntm.init_state(BIG, 4), "num_slots", lambda: ntm.init_state(2**20, 2**20, batch_shape=(2**22,))),
    "dnc": (
        lambda: dnc.init_state(4, BIG, 1),
        r"word_size \(W\)",
        lambda: dnc.init_state(MAX_AXIS, 1, 1),
    ),  # link [1, N, N]: 2^64 bytes
    "stack": (lambda: stack.init_state(BIG, BIG), "capacity", lambda: stack.init_state(2**30, 2**30, batch_shape=(4,))),
    "queue": (lambda: queue.init_state(BIG, 2), "capacity", lambda: queue.init_state(2**30, 2**30, batch_shape=(4,))),
    "deque": (
        lambda: deque.init_state(2**30, 2),  # 2C = 2^31 rows
        r"capacity \(2 rows per step\)",
        lambda: deque.init_state(2**29, 2**30, batch_shape=(4,)),
    ),
    "stack_rnn": (
        lambda: stack_rnn.init_state(BIG, 2),
        "size",
        lambda: stack_rnn.init_state(2**30, 2**30, batch_shape=(4,)),
    ),
    "tape_rnn": (
        lambda: tape_rnn.init_state(3, BIG),
        "width",
        lambda: tape_rnn.init_state(2**30, 2**30, batch_shape=(4,)),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_axis_beyond_int32_indexing_is_refused(name):
    init, argument, _ = CASES[name]
    with pytest.raises(UserError, match=rf"^{argument}: expected at most 2147483647 .*int32.*, got 2147483648$"):
        init()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_state_beyond_what_xla_can_allocate_is_refused(name):
    _, _, init = CASES[name]
    with pytest.raises(UserError, match=r"expected state\.\w+ to take at most 9223372036854775807 bytes .* got shape"):
        init()


def test_the_stack_that_used_to_abort_python_names_its_capacity():
    with pytest.raises(UserError, match=r"capacity: expected at most 2147483647"):
        stack.init_state(2**31, 2**31)
