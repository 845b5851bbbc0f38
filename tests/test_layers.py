"""The layers import one way: kernels <- modules <- models <- train <- cli, with tasks beside the models;
and no modules import each other in a circle.

Every import of ``panm_jax`` by ``panm_jax`` is read from the source (function-level ones included, which
a test of what is loaded would miss): a module may import its own layer and the layers below it, the
package's shared modules (``checks``, ``errors`` and the other top-level ones) from anywhere, and tasks
and models neither of each other. Within a layer, the modules' imports form no circle (a package's
``__init__`` aside, which names its modules for lazy import).
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


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def import_circles(root: Path | None = None) -> list[list[str]]:
    """The circles of modules importing each other (any depth), each sorted; a module importing its own
    package (``__init__``) is left out."""
    modules = _modules(root or ROOT)
    graph = {}
    for name, path in modules.items():
        deps = set()
        for _, module in _imports(path):
            deps.add(module if module in modules else module.rpartition(".")[0])
        graph[name] = {d for d in deps if d in modules and d != name and not name.startswith(d + ".")}
    circles, seen = [], set()
    for start in graph:  # a circle through start: a path back to it
        stack, parents = [start], {start: None}
        while stack:
            here = stack.pop()
            for there in graph[here]:
                if there == start:
                    circle, node = [], here
                    while node is not None:
                        circle.append(node)
                        node = parents[node]
                    key = tuple(sorted(circle))
                    if key not in seen:
                        seen.add(key)
                        circles.append(sorted(circle))
                elif there not in parents:
                    parents[there] = here
                    stack.append(there)
    return circles


def test_no_modules_import_each_other_in_a_circle():
    assert import_circles() == []


def test_the_walk_finds_a_circle_through_a_function_level_import(tmp_path):
    fake = tmp_path / "panm_jax"
    (fake / "train").mkdir(parents=True)
    (fake / "train" / "__init__.py").write_text("")
    (fake / "train" / "engine.py").write_text("def f():\n    from panm_jax.train.loop import Run\n")
    (fake / "train" / "loop.py").write_text("from panm_jax.train import engine\n")
    assert import_circles(fake) == [["panm_jax.train.engine", "panm_jax.train.loop"]]


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
