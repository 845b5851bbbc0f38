"""``panm-jax models``: the model card, a table generated from the registry, and one model's options.

    panm-jax models              every registered model: name, description, parameter count at
                                 the default config, aligned mode, controller options, traces
    panm-jax models show panm    the model's options (its config's fields): type, default,
                                 allowed values and meaning

The card fits the terminal (``_tables``): at 80 columns the name, the
description and the parameter count, with more columns as the width allows;
piped, every column. ``show`` reads each option from the model's config
dataclass: type from its field, default, allowed values and meaning from its
declaration (``panm_jax.options.option``; ``_options``).

Parameter counts are for the default config built with ``input_size = 12`` and
``output_size = 10`` (the algorithmic tasks' sizes, docs/tasks.md). The traces
column names what ``return_traces=True`` returns, found by an abstract call
(``jax.eval_shape``: traced, not run); models are built abstractly
(``nnx.eval_shape``) where their builder allows it, so the card runs in seconds.
Every model in the registry is listed, whichever module registered it.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx
from rich.console import Console

from panm_jax.cli._options import model_option_docs, variant_option_docs
from panm_jax.cli._tables import Column, print_listing, print_options, print_wrapped
from panm_jax.models.registry import build_model, get_config, list_models, supports_aligned

__all__ = ["CARD_INPUT_SIZE", "CARD_OUTPUT_SIZE", "COLUMNS", "model_card", "register"]

CARD_INPUT_SIZE = 12  # docs/tasks.md, algorithmic tasks: 10 symbols + 2 delimiters
CARD_OUTPUT_SIZE = 10  # 10 classes


def register(subparsers) -> None:
    """Add the ``models`` sub-command to the ``panm-jax`` parser."""
    parser = subparsers.add_parser(
        "models",
        help="list the models (the model card)",
        description="List every registered model: description, controller options, parameter count at the "
        f"default config (input_size={CARD_INPUT_SIZE}, output_size={CARD_OUTPUT_SIZE}), and its traces.",
    )
    parser.set_defaults(func=_list)
    sub = parser.add_subparsers(dest="models_command", metavar="ACTION")
    show = sub.add_parser(
        "show",
        help="list a model's options: type, default, allowed values, meaning",
        description="List a model's options (the fields of its config) with their types, defaults, allowed "
        "values and meanings; set them with --set model_options.NAME=VALUE in panm-jax train.",
    )
    show.add_argument("name", help="the model (panm-jax models lists them)")
    show.set_defaults(func=_show)


def _controllers(config) -> str:
    names = {f.name for f in dataclasses.fields(config)}
    if "controller" not in names:
        return "-"
    from panm_jax.modules.controllers import CONTROLLER_KINDS

    kinds = getattr(config, "CONTROLLERS", CONTROLLER_KINDS)
    default = config.controller
    return ", ".join(f"{k} (default)" if k == default else k for k in kinds)


def _abstract_model(name: str):
    """The model at its default config, built abstractly when it can be (no initialisation run)."""
    build = lambda: build_model(name, input_size=CARD_INPUT_SIZE, output_size=CARD_OUTPUT_SIZE)  # noqa: E731
    try:
        return nnx.eval_shape(build)
    except Exception:  # a builder that needs concrete values (e.g. a float() of a parameter)
        return build()


def _traces(model) -> str:
    graphdef, state = nnx.split(model)
    x = jax.ShapeDtypeStruct((1, 3, CARD_INPUT_SIZE), jnp.float32)
    mask = jax.ShapeDtypeStruct((1, 3), jnp.bool_)

    def call(state, x, mask):
        return nnx.merge(graphdef, state)(x, mask, 2, train=False, return_traces=True)

    try:
        _, traces = jax.eval_shape(call, state, x, mask)
    except Exception as err:  # a model without traces is still listed
        return f"? ({type(err).__name__})"
    if hasattr(traces, "_fields"):
        return ", ".join(traces._fields)
    if isinstance(traces, dict):
        return ", ".join(traces)
    return type(traces).__name__


def model_card() -> list[dict[str, str]]:
    """One row per registered model (the table's data, for tests and scripts)."""
    rows = []
    for name, description in list_models().items():
        config = get_config(name)
        model = _abstract_model(name)
        params = sum(int(x.size) for x in jax.tree_util.tree_leaves(nnx.state(model, nnx.Param)))
        rows.append(
            {
                "name": name,
                "description": description,
                "controllers": _controllers(config),
                "params": f"{params:,}",
                "traces": _traces(model),
                "aligned": "yes" if supports_aligned(name) else "no",
            }
        )
    return rows


# The card's columns, most important first (``_tables.fit_table`` keeps those that fit): (key, column).
COLUMNS = (
    ("name", Column("name")),
    ("description", Column("description", wrap=True, min_width=32)),
    ("params", Column("parameters", justify="right")),
    ("aligned", Column("aligned")),
    ("controllers", Column("controller options", wrap=True, min_width=20)),
    ("traces", Column("traces (return_traces=True)", wrap=True, min_width=24)),
)


def _list(args) -> int:
    del args
    print_listing(
        f"panm_jax models (parameters at the default config, input {CARD_INPUT_SIZE}, output {CARD_OUTPUT_SIZE})",
        [column for _, column in COLUMNS],
        [tuple(row[key] for key, _ in COLUMNS) for row in model_card()],
        caption="panm-jax models show NAME: a model's options",
    )
    return 0


def _show(args) -> int:
    options = model_option_docs(args.name)  # an unknown name raises UnknownNameError, printed as one line
    description = list_models()[args.name]
    config_cls = type(get_config(args.name))
    console = Console()
    print_wrapped(console, f"{args.name}: {description}", style="bold")
    print_wrapped(
        console,
        f"options of model {args.name!r}, the fields of {config_cls.__name__} ({config_cls.__module__}): set one "
        "with --set model_options.NAME=VALUE in panm-jax train; each as declared (type = default; the values its "
        "check allows; what it means):",
    )
    print_options(console, options)
    for variant, variant_options in variant_option_docs(args.name):
        print_wrapped(
            console,
            f"variant {variant.name!r} of the decoder ({variant.__name__}, {variant.__module__}): setting any of "
            "these options decodes with it; they do not combine with another variant's:",
        )
        print_options(console, variant_options)
    return 0
