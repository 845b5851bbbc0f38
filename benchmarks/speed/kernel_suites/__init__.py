"""One module per kernel family; each exposes ``run(quick: bool)``."""
