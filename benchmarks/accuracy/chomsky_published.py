"""The published scores of the Chomsky-hierarchy tasks: Delétang et al. 2023, Table 2.

Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR 2023), Table 2: per task and
architecture, the token accuracy (%) averaged over the test lengths 41..500, of the best of their runs
(10 seeds and 3 learning rates, 1,000,000 steps each; for the Transformer also the best of five positional
encodings). ``PUBLISHED`` holds the cells known to this package, ``{task: {model: score}}``, with this
package's names: the tasks of ``panm_jax.tasks.chomsky`` and the models of the paper's columns
(``PAPER_MODELS``: RNN ``rnn``, Stack-RNN ``stack_rnn``, Tape-RNN ``tape_rnn``, Transformer
``transformer_encoder``, LSTM ``single_lstm``). The paper's "Modular Arithmetic (Simple)" (R) is
``modular_arithmetic`` here and its "Modular Arithmetic" (DCF) is ``modular_arithmetic_brackets``; the other
task names are the paper's in snake case. A cell not known here is absent: the runner and the results pages
leave it blank and the runner counts the blanks in its notes.

The table and its arithmetic (Table 2's layout with ours beside it, the means per level of the hierarchy)
are kept apart from the runner (``benchmarks.accuracy.chomsky``) so that the results pages
(``benchmarks.pages``) use them without importing JAX: the Chomsky page takes its published column from here
when it is rendered, so every recorded file shows the cells known today.
"""

from __future__ import annotations

from typing import Any

# Table 2's columns, in its order: (its heading, the model here).
PAPER_MODELS = (
    ("RNN", "rnn"),
    ("Stack-RNN", "stack_rnn"),
    ("Tape-RNN", "tape_rnn"),
    ("Transformer", "transformer_encoder"),
    ("LSTM", "single_lstm"),
)
LEVELS = {"regular": "R", "context_free": "DCF", "context_sensitive": "CS"}  # Table 2's level names

# Table 2's cells known to this package. Cycle navigation's Transformer cell is also given in the paper's text
# (appendix B.3.2: "a non-trivial generalization score (61.9% with baseline 20%)").
PUBLISHED: dict[str, dict[str, float]] = {
    "modular_arithmetic": {
        "rnn": 100.0,
        "stack_rnn": 100.0,
        "tape_rnn": 100.0,
        "transformer_encoder": 24.2,
        "single_lstm": 100.0,
    },
    "parity_check": {
        "rnn": 100.0,
        "stack_rnn": 100.0,
        "tape_rnn": 100.0,
        "transformer_encoder": 52.0,
        "single_lstm": 100.0,
    },
    "cycle_navigation": {"transformer_encoder": 61.9},
    "stack_manipulation": {
        "rnn": 56.0,
        "stack_rnn": 100.0,
        "tape_rnn": 100.0,
        "transformer_encoder": 57.5,
        "single_lstm": 59.1,
    },
    "reverse_string": {
        "rnn": 62.0,
        "stack_rnn": 100.0,
        "tape_rnn": 100.0,
        "transformer_encoder": 62.3,
        "single_lstm": 60.9,
    },
    "duplicate_string": {
        "rnn": 50.3,
        "stack_rnn": 52.8,
        "tape_rnn": 100.0,
        "transformer_encoder": 52.8,
        "single_lstm": 57.6,
    },
    "odds_first": {"rnn": 51.0, "stack_rnn": 51.9, "tape_rnn": 100.0, "transformer_encoder": 52.8, "single_lstm": 55.6},
}


def published(task: str, run: str) -> float | None:
    """The published cell of ``task`` for the paper model that ``run`` names; a run label with model options
    (``stack_rnn-stack_size=512``, ``benchmarks.accuracy.reproduce.options_tag``) is its model's. ``None``
    where the cell is not known here or the model is not one of the paper's (``panm``; the encoder-decoder
    ``lstm`` of the older files, which is not the paper's LSTM)."""
    return PUBLISHED.get(task, {}).get(run.split("-", 1)[0])


def per_level(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per level of the hierarchy (in the order met): each model's mean score over that level's rows."""
    cells: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        cells.setdefault(r["level"], {}).setdefault(r["model"], []).append(r["score"])
    return [
        {"level": level, **{m: round(sum(v) / len(v), 1) for m, v in by_model.items()}}
        for level, by_model in cells.items()
    ]


def published_per_level(levels: dict[str, str]) -> list[dict[str, Any]]:
    """Each paper model's mean published score per level over the tasks of ``levels`` (``{task: level}``, in
    order), where every one of that level's tasks has a published cell for it (blank otherwise: a mean over part
    of a level would not be the paper's)."""
    out = []
    for level in dict.fromkeys(levels.values()):
        level_tasks = [t for t, lv in levels.items() if lv == level]
        row: dict[str, Any] = {"level": level}
        for _, model in PAPER_MODELS:
            known = [PUBLISHED.get(t, {}).get(model) for t in level_tasks]
            row[model] = round(sum(known) / len(known), 1) if None not in known else ""
        out.append(row)
    return out


def table_two(rows: list[dict[str, Any]], levels: dict[str, str]) -> list[dict[str, Any]]:
    """Table 2's layout over the tasks of ``levels`` (``{task: level}``, in order): one row per task, one column
    per paper model, ``ours / published`` in each cell (ours: the best seed, as the paper's; ``-``: not run here
    or not published), and a PANM column where ``rows`` hold PANM runs."""
    best: dict[tuple[str, str], float] = {}
    for r in rows:
        best[r["task"], r["model"]] = max(best.get((r["task"], r["model"]), 0.0), r["score"])
    out = []
    for task, level in levels.items():
        row: dict[str, Any] = {"level": LEVELS[level], "task": task}
        for heading, model in PAPER_MODELS:
            ours, theirs = best.get((task, model)), PUBLISHED.get(task, {}).get(model)
            row[heading] = f"{'-' if ours is None else ours} / {'-' if theirs is None else theirs}"
        if any(m == "panm" for _, m in best):
            row["PANM"] = best.get((task, "panm"), "-")
        out.append(row)
    return out
