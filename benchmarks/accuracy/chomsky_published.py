"""The published scores of the Chomsky-hierarchy tasks: Delétang et al. 2023, Table 2.

Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR 2023), Table 2: per task and
architecture, the token accuracy (%) averaged over the test lengths 41..500, of the best of their runs
(10 seeds and 3 learning rates, 1,000,000 steps each; for the Transformer also the best of five positional
encodings). ``PUBLISHED`` holds the cells known to this package, ``{task: {model: score}}``, with this
package's names: the tasks of ``panm_jax.tasks.chomsky`` and the models of the paper's columns
(``benchmarks.accuracy.chomsky.PAPER_MODELS``: RNN ``rnn``, Stack-RNN ``stack_rnn``, Tape-RNN ``tape_rnn``,
Transformer ``transformer_encoder``, LSTM ``single_lstm``). The paper's "Modular Arithmetic (Simple)" (R) is
``modular_arithmetic`` here and its "Modular Arithmetic" (DCF) is ``modular_arithmetic_brackets``; the other
task names are the paper's in snake case. A cell not known here is absent: the runner and the results pages
leave it blank and the runner counts the blanks in its notes.

The table is kept apart from the runner (``benchmarks.accuracy.chomsky``) so that the results pages
(``benchmarks.pages``) read it without importing JAX: the Chomsky page takes its published column from here
when it is rendered, so every recorded file shows the cells known today.
"""

from __future__ import annotations

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
