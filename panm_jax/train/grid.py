"""Best of a grid: per cell, the member (seed, learning rate) with the best score.

Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR 2023),
train every cell (task x architecture) at 10 seeds x 3 learning rates and
report, in Table 2, the score of the best of those runs: the maximum over seeds
and learning rates of the token accuracy averaged over the test lengths. The seeds and rates
are trained together here by ``train_seeds`` (``train/seeds.py``; ``panm-jax
train --seeds 0,1 --learning-rates 1e-3,3e-4,1e-4``), one folder per member.

``best_of_grid(records, scores)`` is that rule over any score: a cell is the
members whose configs differ only in ``seed`` and ``optimizer.learning_rate``,
and its pick is the member of the highest score. With each member's test score
it is the paper's rule (which reads the test lengths to choose); with
``validation_scores(workdirs)``, each member's best checkpoint's validation score
(the headline metric on ``select_mode``, ties to the lower loss: the training
loop's own selection), it chooses without looking at a test length, so the
pick's test results played no part in choosing it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from panm_jax.errors import UserError

__all__ = ["best_of_grid", "cell_of", "validation_scores"]


def cell_of(record: dict[str, Any]) -> str:
    """The cell of a results record: its config without ``seed`` and ``optimizer.learning_rate``, as sorted
    JSON (equal for the members of one grid)."""
    config = dict(record["config"])
    config.pop("seed", None)
    config["optimizer"] = {k: v for k, v in config.get("optimizer", {}).items() if k != "learning_rate"}
    return json.dumps(config, sort_keys=True)


def validation_scores(workdirs: Sequence[str | Path]) -> list[tuple[float, float] | None]:
    """Per run folder, its best checkpoint's ``(score, -loss)`` on the validation mode, read from the record in
    ``best/`` (``None``: no best checkpoint, as in a run that never reached an evaluation)."""
    from panm_jax.train.checkpoint import Checkpointer

    out = []
    for workdir in workdirs:
        ckpt = Checkpointer(workdir, read_only=True)
        try:
            meta = ckpt.best_meta(then="ranking the run below every scored one")
        finally:
            ckpt.close()
        out.append(None if meta is None else (float(meta["score"]), -float(meta["loss"])))
    return out


def best_of_grid(records: Sequence[dict[str, Any]], scores: Sequence[Any]) -> list[dict[str, Any]]:
    """Per cell (``cell_of``), in the order the cells first appear, the record of the member with the highest
    ``scores[i]`` (any comparable values: a float, or ``validation_scores``' tuples; ``None`` ranks below every
    score; ties go to the member given first).

    Raises ``UserError`` when ``records`` is empty or ``scores`` is not one score per record.
    """
    if not records:
        raise UserError("records: expected at least one results record, got none")
    if len(scores) != len(records):
        raise UserError(f"scores: expected one score per record ({len(records)}), got {len(scores)}")
    best: dict[str, int] = {}
    for i, (record, score) in enumerate(zip(records, scores, strict=True)):
        key = cell_of(record)
        j = best.get(key)
        if j is None or (score is not None and (scores[j] is None or score > scores[j])):
            best[key] = i
    return [records[i] for i in best.values()]
