"""The table of the training settings that the design page shows where it has ``<!-- settings -->``
(``mkdocs_hook.on_page_markdown``): ``TrainConfig``'s and ``OptimizerConfig``'s fields as they are declared
(``panm_jax.options.declared``)."""

from __future__ import annotations

from panm_jax.options import declared
from panm_jax.train.config import OptimizerConfig, TrainConfig

__all__ = ["SETTINGS", "settings_table"]

SETTINGS = "<!-- settings -->"  # where a page shows the training settings


def settings_table() -> str:
    """``TrainConfig``'s fields, then ``OptimizerConfig``'s as ``optimizer.NAME``: a Markdown table of each
    one's default, allowed values and meaning, read from its declaration."""
    rows = ["| setting | default | allowed | meaning |", "|---|---|---|---|"]
    fields = [(n, d) for n, d in declared(TrainConfig).items() if n != "optimizer"]
    fields += [(f"optimizer.{n}", d) for n, d in declared(OptimizerConfig).items()]
    for name, d in fields:
        cells = [f"`{name}`", f"`{d.default!r}`", d.allowed, d.doc]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)
