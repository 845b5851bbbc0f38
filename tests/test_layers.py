"""The layers import one way: kernels <- modules <- models <- train <- cli, with tasks beside the models.

Every import of ``panm_jax`` by ``panm_jax`` is read from the source (function-level ones included, which
a test of what is loaded would miss): a module may import its own layer and the layers below it, the
package's shared modules (``checks``, ``errors`` and the other top-level ones) from anywhere, and tasks
and models neither of each other.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import panm_jax

ROOT = Path(panm_jax.__file__).parent
LAYERS = {"kernels": 0, "modules": 1, "models": 2, "tasks": 2, "train": 3, "cli": 4}


def _imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every absolute import in ``path``, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]  # from panm_jax import train
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "panm_jax" and parts[1] in LAYERS else None


def upward_imports() -> list[str]:
    """``file:line: module`` for each import of a higher layer, or between tasks and models."""
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        here = path.relative_to(ROOT).parts[0]
        if here not in LAYERS:
            continue
        for line, module in _imports(path):
            there = _layer(module)
            if there is None or there == here:
                continue
            if LAYERS[there] > LAYERS[here] or {here, there} == {"models", "tasks"}:
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line}: {module}")
    return sorted(set(wrong))


def test_no_layer_imports_a_layer_above_it():
    assert upward_imports() == []


def test_the_walk_finds_a_function_level_upward_import(tmp_path, monkeypatch):
    fake = tmp_path / "panm_jax"
    (fake / "models").mkdir(parents=True)
    (fake / "models" / "m.py").write_text("def f():\n    from panm_jax.train.config import TrainConfig\n")
    (fake / "tasks").mkdir()
    (fake / "tasks" / "t.py").write_text("import panm_jax.models.registry\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", fake)
    assert upward_imports() == [
        "panm_jax/models/m.py:2: panm_jax.train.config",
        "panm_jax/models/m.py:2: panm_jax.train.config.TrainConfig",
        "panm_jax/tasks/t.py:1: panm_jax.models.registry",
    ]
