"""Grids of seeds x learning rates: the traced learning rate, and the best-of-grid selection.

A grid member's step builds its optimiser from a traced rate (``make_optimizer(..., learning_rate=lr)``
under ``vmap``); for every optimiser and schedule it must update as the single run's optimiser built with
that rate as a constant. The whole-run comparison (a trained grid against its single runs) is in
``tests/train/test_seeds.py``.
"""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from panm_jax.errors import UserError
from panm_jax.train.config import OptimizerConfig
from panm_jax.train.grid import best_of_grid, cell_of, validation_scores
from panm_jax.train.optim import make_optimizer
from tests.train.tiny import tiny_config

RATES = (1e-3, 3e-4, 1e-4)
STEPS = 8  # updates, over a schedule of 10 steps: warmup, decay and the join between them
OPTIMIZERS = {
    "rmsprop with momentum, clipped": OptimizerConfig(name="rmsprop"),
    "rmsprop": OptimizerConfig(name="rmsprop", momentum=0.0, eps_in_sqrt=True),
    "adam, global-norm clip": OptimizerConfig(name="adam", clip_value=None, clip_norm=1.0),
    "adamw": OptimizerConfig(name="adamw", weight_decay=0.1),
    "sgd with momentum": OptimizerConfig(name="sgd"),
    "sgd": OptimizerConfig(name="sgd", momentum=0.0),
    "adam, warmup": OptimizerConfig(name="adam", warmup_steps=3),
    "adam, cosine": OptimizerConfig(name="adam", schedule="cosine"),
    "rmsprop, warmup then cosine": OptimizerConfig(name="rmsprop", schedule="warmup_cosine", warmup_steps=3),
}


def _updates(optimizer, params, grads):
    """The parameters after each of the updates of ``grads``: ``[STEPS, ...]`` per leaf."""
    state, out = optimizer.init(params), []
    for g in grads:
        updates, state = optimizer.update(g, state, params)
        params = optax.apply_updates(params, updates)
        out.append(params)
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *out)


@pytest.mark.parametrize("config", OPTIMIZERS.values(), ids=OPTIMIZERS.keys())
def test_a_traced_learning_rate_updates_as_the_constant_one(config):
    key = jax.random.PRNGKey(0)
    params = {"w": jax.random.normal(key, (4, 3)), "b": jnp.zeros(3)}
    # Gradients of mixed sizes, some beyond the clip of 10, the same for every rate.
    grads = [jax.tree_util.tree_map(lambda x, i=i: 20.0 * jnp.sin(3.0 * x + i) + x, params) for i in range(STEPS)]
    traced = jax.jit(jax.vmap(lambda lr: _updates(make_optimizer(config, 10, learning_rate=lr), params, grads)))(
        jnp.asarray(RATES, jnp.float32)
    )
    for i, rate in enumerate(RATES):
        single = make_optimizer(dataclasses.replace(config, learning_rate=rate), 10)
        constant = jax.jit(lambda single=single: _updates(single, params, grads))()
        for name in params:
            np.testing.assert_allclose(
                np.asarray(traced[name][i]), np.asarray(constant[name]), rtol=1e-6, atol=1e-7, err_msg=(rate, name)
            )
    # The rates are not lost on the way: the three members moved differently.
    assert not np.allclose(np.asarray(traced["w"][0]), np.asarray(traced["w"][1]))


def test_the_optimiser_state_does_not_depend_on_the_rate():
    """A member's optimiser state is its single run's (its checkpoints are the single run's): same structure,
    same initial values, for a traced rate and a constant one."""
    params = {"w": jnp.ones((2, 2))}
    for config in OPTIMIZERS.values():
        constant = make_optimizer(config, 10).init(params)
        traced = jax.jit(lambda lr, config=config: make_optimizer(config, 10, learning_rate=lr).init(params))(
            jnp.float32(3e-4)
        )
        assert jax.tree_util.tree_structure(constant) == jax.tree_util.tree_structure(traced)
        jax.tree_util.tree_map(np.testing.assert_array_equal, constant, traced)


def _record(seed, rate, score, **config_changes):
    config = tiny_config(seed=seed, **config_changes).to_dict()
    config["optimizer"]["learning_rate"] = rate
    return {"config": config, "score": score}


def test_best_of_grid_picks_each_cells_best_member():
    records = [
        _record(0, 1e-3, 0.5),
        _record(1, 1e-3, 0.9),
        _record(0, 3e-4, 0.7),
        _record(0, 1e-3, 0.95, batch_size=16),  # another cell
        _record(1, 3e-4, 0.9),  # ties the best of its cell: the first given keeps it
    ]
    assert cell_of(records[0]) == cell_of(records[2]) != cell_of(records[3])
    picked = best_of_grid(records, [r["score"] for r in records])
    assert picked == [records[1], records[3]]
    # None (a member with no best checkpoint) ranks below every score, and is kept only where nothing is scored.
    assert best_of_grid(records[:2], [None, 0.0]) == [records[1]]
    assert best_of_grid(records[:2], [None, None]) == [records[0]]
    # Validation scores are (score, -loss): a tie on the score goes to the lower loss.
    assert best_of_grid(records[:2], [(1.0, -0.3), (1.0, -0.2)]) == [records[1]]


def test_best_of_grid_refuses_mismatched_scores():
    with pytest.raises(UserError, match=r"scores: expected one score per record \(2\), got 1"):
        best_of_grid([_record(0, 1e-3, 0), _record(1, 1e-3, 0)], [0.0])
    with pytest.raises(UserError, match="records: expected at least one results record, got none"):
        best_of_grid([], [])


def test_validation_scores_read_the_best_checkpoint(finished_run, tmp_path):
    """The finished tiny run's ``best/`` record gives ``(score, -loss)``, the values its validation log holds at
    the best step; a folder without checkpoints gives ``None``."""
    (found, none) = validation_scores([finished_run, tmp_path])
    assert none is None
    record = json.loads((finished_run / "results.json").read_text())
    rows = [json.loads(line) for line in (finished_run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    (val,) = [r["validation"] for r in rows if "validation" in r and r["step"] == record["step"]]
    mode = record["config"]["select_mode"]
    assert found == (val[mode][record["metric"]], -val[mode]["loss"])


def test_the_warmup_cosine_schedule_is_optaxs():
    """``make_schedule`` writes optax's ``warmup_cosine_decay_schedule`` out (to take a traced peak): the same
    values at every step, for a constant rate."""
    from panm_jax.train.optim import make_schedule

    config = OptimizerConfig(schedule="warmup_cosine", warmup_steps=3, learning_rate=3e-4)
    ours, theirs = make_schedule(config, 10), optax.warmup_cosine_decay_schedule(0.0, 3e-4, 3, 10)
    for step in range(12):
        assert float(ours(step)) == float(theirs(step)), step
