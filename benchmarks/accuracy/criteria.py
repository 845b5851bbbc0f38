"""When a run counts as having fit its training lengths: one threshold for every runner and results page.

A run fits when its token accuracy at the training lengths (the validation lengths its task trains on: the
``L`` mode of the algorithmic tasks, lengths 1..40 of the Chomsky tasks) reaches ``FIT``, or, where the paper
prints its own model's accuracy there and that is lower, the paper's figure less ``SLACK`` points (Le et al.
2024's PANM reaches 92 % at L on Dynamic Recall and 97 % on Priority Sort: a run of ours that matches it has
learnt what the paper's learnt). A run that does not
fit has not learnt what it was shown, so its score beyond the training lengths says how far its budget got, not
how its model generalises; the results pages mark such rows so.
"""

from __future__ import annotations

FIT = 0.99  # token accuracy (a fraction) at the training lengths from which a run fits them
SLACK = 1.0  # points below the paper's own accuracy at the training lengths that still fit, where that is lower


def fits(accuracy_percent: float | None, published_percent: float | None = None) -> bool | None:
    """Whether a token accuracy at the training lengths, in percent, reaches ``FIT`` (or the paper's own
    ``published_percent`` less ``SLACK``, where that is lower); ``None`` where it is not recorded."""
    if accuracy_percent is None:
        return None
    threshold = 100 * FIT if published_percent is None else min(100 * FIT, published_percent - SLACK)
    return accuracy_percent >= threshold - 1e-9


def fit_count(accuracies_percent: list[float], published_percent: float | None = None) -> str:
    """``"2 of 3"``: how many runs (one accuracy at the training lengths each, in percent) fit them (``fits``)."""
    return f"{sum(bool(fits(a, published_percent)) for a in accuracies_percent)} of {len(accuracies_percent)}"


def all_fit(count: str) -> bool:
    """Whether a recorded ``fit_count`` says every run fit: ``"3 of 3"`` -> True, ``"2 of 3"`` -> False."""
    done, _, total = count.partition(" of ")
    return done == total
