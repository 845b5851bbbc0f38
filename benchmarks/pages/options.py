from __future__ import annotations

import json
from typing import Any

from benchmarks.pages.records import Record
from benchmarks.pages.tables import code
from panm_jax.models.panm import AUTHORS_CODE

# Option sets the tables name instead of listing them (model options as ``benchmarks.accuracy.ablation`` writes them).
OURS = {"distractors": "16", "distractor_sampling": "neighbours", "score": "scaled_dot", "snap_pointers": "always"}


def option_text(value: Any) -> str:
    """A model option's value as a command line writes it: ``16``, ``true``, ``scaled_dot``."""
    return value if isinstance(value, str) else json.dumps(value)


# The library's preset of the authors' code (``panm_jax.models.panm.AUTHORS_CODE``), as text.
AUTHORS = {name: option_text(value) for name, value in AUTHORS_CODE.items()}
NAMED_OPTIONS = {
    "the options of ours": OURS,
    "every choice of the authors' code that is an option here": AUTHORS,
}


def describe_options(options: dict[str, str], select: str = "L+1") -> str:
    """What a run changes from the paper's model: a named set (``NAMED_OPTIONS``, also one less one or two of
    its options) or the options themselves, and the selection when it is not L+1."""
    parts = []
    for name, named in NAMED_OPTIONS.items():
        missing = {k: v for k, v in named.items() if options.get(k) != v}
        if (
            options
            and set(options) <= set(named)
            and all(options[k] == named[k] for k in options)
            and len(missing) <= 2
        ):
            parts.append(name + "".join(f", without {code(f'{k}={v}')}" for k, v in missing.items()))
            break
    else:
        parts += [code(f"{k}={v}") for k, v in options.items()]
    if select != "L+1":
        parts.append(f"selected on {select}")
    return ", ".join(parts) if parts else "none"


def run_options(record: Record, model: str) -> dict[str, str]:
    """A ``reproduce`` file's model options for ``model``, as text (its ``settings``)."""
    options = record.settings.get("model_options", {}).get(model, {})
    return {k: option_text(v) for k, v in options.items()}


def variant_options(variant: str) -> tuple[dict[str, str], dict[str, str], str]:
    """``benchmarks.accuracy.ablation``'s variant ``"panm.score=scaled_dot,optimizer.eps_in_sqrt=true,select=2L+1"`` ->
    ``({"score": "scaled_dot"}, {"optimizer.eps_in_sqrt": "true"}, "2L+1")``: model options, other changes,
    selection."""
    options, other, select = {}, {}, "L+1"
    if variant != "default":
        for item in variant.split(","):
            key, _, value = item.partition("=")
            if key == "select":
                select = value
            elif key.startswith("panm."):
                options[key.removeprefix("panm.")] = value
            else:
                other[key] = value
    return options, other, select


# --- the algorithmic tasks ------------------------------------------------------------------------------------

MODEL_NAMES = {
    "panm": "PANM",
    "lstm": "LSTM",
    "ntm": "NTM",
    "dnc": "DNC",
    "stack_lstm": "Stack-LSTM",
    "lstm_attention": "LSTM + attention",
    "pointer_network": "Pointer Network",
    "transformer": "Transformer",
}


def display_model(model: str) -> str:
    return MODEL_NAMES.get(model, model)
