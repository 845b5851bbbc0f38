"""The pointer diagnosis's arithmetic (benchmarks/accuracy/diagnose_pointer.py), on hand-built traces."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.accuracy.diagnose_pointer import pointer_summary, step_groups, target_slots


def test_target_slots_of_copy_and_reverse():
    # Slot 0 is the start delimiter. Copy of n = 3 tokens reads slots 1, 2, 3; Reverse reads 3, 2, 1.
    lengths = np.array([5, 4])  # n + 2 rows: n = 3 and n = 2
    np.testing.assert_array_equal(target_slots("copy", lengths, 3), [[1, 2, 3], [1, 2, 3]])
    np.testing.assert_array_equal(target_slots("reverse", lengths, 3), [[3, 2, 1], [2, 1, 0]])
    with pytest.raises(SystemExit, match="--task: expected one of copy, reverse, mix"):
        target_slots("dyck", lengths, 3)
    with pytest.raises(ValueError, match="needs the inputs"):
        target_slots("priority_sort", lengths, 3)


@pytest.mark.parametrize("task", ["priority_sort", "id_sort", "dynamic_recall"])
def test_the_slots_of_the_content_based_tasks_hold_the_target_tokens(task):
    # The task's generator knows the answer; the slots are read from the inputs alone (priorities, ids,
    # query). On every scored step the token in the slot named is the target token, at mixed lengths.
    from panm_jax.tasks import get_task

    gen = get_task(task)
    lengths = np.array([2, 3, 7, 10, 21, 2, 9, 16])
    batch = gen.sample(np.random.default_rng(5), len(lengths), lengths)
    inputs, targets, scored = (np.asarray(a) for a in (batch.inputs, batch.targets, batch.target_mask))
    want = target_slots(task, np.asarray(batch.input_mask).sum(1), targets.shape[1], inputs)
    rows = np.arange(len(lengths))[:, None]
    tokens = inputs[rows, want, :10].argmax(-1)
    assert scored.sum() >= len(lengths)
    np.testing.assert_array_equal(tokens[scored], targets[scored])
    assert (want[scored] >= 1).all()  # never the start delimiter
    if task != "dynamic_recall":  # a permutation of the tokens' slots (ID Sort: an involution)
        for b, n in enumerate(lengths):
            assert sorted(want[b, :n]) == list(range(1, n + 1))


def test_id_sort_slots_are_the_partners():
    # Hand-built: x_1, x_4 share an id, x_2, x_3 another, x_5 is paired with itself.
    n, width = 5, 8
    inputs = np.zeros((1, n + 2, 12 + width))
    ids = np.eye(3, width)[[0, 1, 1, 0, 2]]
    inputs[0, 1 : n + 1, 12:] = ids
    np.testing.assert_array_equal(target_slots("id_sort", np.array([n + 2]), n, inputs), [[4, 3, 2, 1, 5]])


def test_target_slots_and_step_groups_of_mix():
    # Mix of n = 5 tokens (3 1 4 1 5 -> 4 3 4 3 4): the middle x_3 (slot 3) at steps 0, 2, 4, x_1 (slot 1)
    # at steps 1, 3; n = 4: the middle is x_2 (slot 2).
    lengths = np.array([7, 6])
    np.testing.assert_array_equal(target_slots("mix", lengths, 5), [[3, 1, 3, 1, 3], [2, 1, 2, 1, 2]])
    groups = step_groups("mix", 5)
    np.testing.assert_array_equal(groups["middle"], [True, False, True, False, True])
    np.testing.assert_array_equal(groups["first"], ~groups["middle"])
    assert list(step_groups("copy", 3)) == ["all"] and step_groups("copy", 3)["all"].all()


def test_pointer_summary_picks_the_following_head_and_the_first_miss():
    # 2 examples, 4 steps, 2 heads, 6 slots. Head 1 follows slots 1, 2, 3, 4 except at step 2,
    # where it points at slot 5 in both examples; head 0 always points at slot 0.
    b, t, h, slots = 2, 4, 2, 6
    want = np.tile(np.arange(1, t + 1), (b, 1))
    weights = np.zeros((b, t, h, slots))
    weights[:, :, 0, 0] = 1.0
    path = [1, 2, 5, 4]
    for s, slot in enumerate(path):
        weights[:, s, 1, slot] = 0.7
        weights[:, s, 1, 0] = 0.3
    token_ok = np.array([[True, True, False, True], [True, False, True, True]])
    scored = np.ones((b, t), bool)
    got = pointer_summary(weights, token_ok, scored, want)
    assert got["head"] == 1 and got["first miss"] == 2
    assert got["pointer %"] == pytest.approx(75.0)  # 6 of 8 steps
    assert got["token %"] == pytest.approx(75.0)
    assert got["token if pointer right %"] == pytest.approx(100 * 5 / 6)  # one wrong token where it points right
    assert got["token if pointer wrong %"] == pytest.approx(50.0)
    assert got["max weight"] == pytest.approx(0.7)
    assert got["weight on right slot"] == pytest.approx((6 * 0.7 + 2 * 0.0) / 8)  # step 2 weighs slot 3 with 0
    # Steps that are not scored (padding) are left out of every figure.
    scored[:, 2] = False
    got = pointer_summary(weights, token_ok, scored, want)
    assert got["pointer %"] == pytest.approx(100.0) and got["first miss"] == "none"
