"""The README's commands and code work as written, so that the README cannot drift from the code.

Every fenced ``bash`` and ``python`` block of README.md is extracted and checked:

* each shell command (a line, or each part of a line between ``;``, comments
  dropped) must be a key of ``COMMANDS``, which says how the test treats it. A
  command added to the README, or changed, fails ``test_every_command_is_classified``
  until it is listed there:

  - ``Make()``: ``make TARGET``; the target must exist in the Makefile (make is
    not run: it would bootstrap ``.venv``);
  - ``Run(...)``: a ``.venv/bin/panm-jax`` command; all of them run, in README
    order, in one fresh temporary working directory (``configs/`` copied into
    it), so every command finds what the commands before it wrote there, and
    nothing is written into the repository. Training is shrunk by flags appended
    to the README's own (``--steps 2``, batch 4, width 8, one training bucket and
    one evaluation mode; a later flag or ``--set`` of the same field wins), and
    a few values are swapped for smaller ones (``replace``);
  - ``ParseOnly(reason)``: a benchmark runner that needs minutes to hours (or a
    GPU) and writes into ``benchmarks/results``: its arguments (the optional
    ``[...]`` ones included) are parsed by the runner's own parser, nothing runs;
  - ``Install()``: a command that creates the virtual environment, installs into
    it or opens Jupyter: not run (it would change the environment or start a
    server). A ``pip install -e '.[EXTRA]'`` must name an extra of pyproject.toml,
    and every extra of pyproject.toml must have its install line.

* each Python block runs (``exec``, in the same working directory), with the
  small sizes of ``PYTHON_BLOCKS`` where it trains, and the shapes its comments
  state are checked (for the kernel block also that the loss depends on the reads
  fed back, and that its training step lowered the loss);
* inline code outside the blocks: every ``.venv/bin/python ...`` and
  ``.venv/bin/panm-jax ...`` command is parsed as above, a bare ``python -m`` or
  ``python examples/...`` (which a fresh machine does not have) fails, every
  ``make TARGET`` names a Makefile target, and every repository path
  (``panm_jax/...``, ``docs/...``, ...) and relative link exists.

The commands and Python blocks run in one subprocess (one import of JAX), which
inherits the session's XLA optimisation level 0 (``tests/conftest.py``):
compilation is most of their time, and what they compute is not measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmarks.pages import build

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PANM_JAX = ".venv/bin/panm-jax"
PYTHON = ".venv/bin/python"


@dataclasses.dataclass(frozen=True)
class Make:
    """``make TARGET``: the target exists (not run)."""


@dataclasses.dataclass(frozen=True)
class Run:
    """A ``panm-jax`` command, run with ``append`` added and each token in ``replace`` swapped."""

    append: tuple[str, ...] = ()
    replace: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class ParseOnly:
    """A command whose arguments are parsed by its own parser; why it does not run."""

    reason: str


@dataclasses.dataclass(frozen=True)
class Install:
    """Creates the virtual environment, installs into it, or opens Jupyter: not run."""


# A training run in seconds: 2 steps of batch 4, width 8, a checkpoint and an evaluation
# at step 2 on 4 examples.
TINY = tuple(
    "--steps 2 --batch-size 4 --no-progress --set model_options.hidden=8 --set eval_every=2 "
    "--set checkpoint_every=2 --set log_every=1 --set eval_examples=4 --set eval_batch_size=4".split()
)
# Copy: one training shape (every batch padded to length 10) and one evaluation shape (the
# validation mode L+1 is the only test mode), so a run compiles one train and one eval step.
COPY = TINY + ("--set", "buckets=[10]", "--set", "eval_modes=L+1")
# The Chomsky-hierarchy tasks (train 1..40, test 41..500): evaluated on the training lengths only.
CHOMSKY = TINY + ("--set", "buckets=[40]", "--set", "eval_modes=1-40")
# A range evaluation over two lengths of one bucket, 2 examples each, instead of 41..500 x 64.
RANGE = (("41-500", "41-42"), ("64", "2"))

LONG = "trains or times for minutes to hours (and writes benchmarks/results)"
PIP = f"{PYTHON} -m pip install"
COMMANDS: dict[str, Make | Run | ParseOnly | Install] = {
    # Install.
    "python3 -m venv .venv": Install(),
    f"{PIP} -e .": Install(),
    f"{PIP} -e .[math]": Install(),
    f"{PIP} -e .[dev]": Install(),
    f"{PIP} -e .[docs]": Install(),
    f"{PIP} -U jax[cuda12]": Install(),
    # The first two commands.
    "make demo": Make(),
    "make test": Make(),
    # The command line.
    f"{PANM_JAX} train --task copy --model panm --workdir runs/copy-panm": Run(COPY),
    f"{PANM_JAX} train --config configs/demo.toml --set model_options.hidden=128 --workdir runs/demo-128": Run(COPY),
    f"{PANM_JAX} train --task copy --model dnc --seeds 0,1,2 --workdir runs/copy-dnc": Run(COPY),
    f"{PANM_JAX} train --task copy --model panm --compute-dtype bfloat16 --workdir runs/copy-bf16": Run(COPY),
    f"{PANM_JAX} eval --workdir runs/copy-panm --modes L,2L+1,8L+1 --with-traces": Run(),
    f"{PANM_JAX} plot runs/copy-panm runs/demo-128 --out copy.png": Run(),
    f"{PANM_JAX} train --task reverse_string --model stack_rnn --workdir runs/rev-stack": Run(CHOMSKY),
    f"{PANM_JAX} eval --workdir runs/rev-stack --lengths 41-500 --examples-per-length 64": Run(replace=RANGE),
    f"{PANM_JAX} tasks": Run(),
    f"{PANM_JAX} tasks show copy --length 5": Run(),
    f"{PANM_JAX} models": Run(),
    f"{PANM_JAX} models show panm": Run(),
    # Notebooks.
    f"{PIP} jupyterlab": Install(),
    f"{PYTHON} -m jupyter lab notebooks/": Install(),
    # Benchmarks: the accuracy suite, then the speed suite.
    f"{PYTHON} -m benchmarks.accuracy.reproduce --table algorithmic --models panm,lstm [--quick] [--seeds 0,1,2,3,4]": (
        ParseOnly(LONG)
    ),
    f"{PYTHON} -m benchmarks.accuracy.reproduce --task copy --models panm,lstm,ntm,dnc,stack_lstm [--quick] "
    "[--seeds 0,1,2]": ParseOnly(LONG),
    f"{PYTHON} -m benchmarks.accuracy.ablation --tasks copy,reverse --seeds 0,1,2 --variant default "
    "--variant panm.OPTION=VALUE": ParseOnly(LONG + "; the paper's protocol wants a GPU"),
    f"{PYTHON} -m benchmarks.accuracy.chomsky [--tasks parity_check,reverse_string] [--models lstm,stack_rnn] "
    "[--name NAME]": ParseOnly(LONG),
    f"{PYTHON} -m benchmarks.accuracy.seq2seq [--cutoffs 22,24,25] [--math add_or_sub,place_value] [--name NAME]": (
        ParseOnly(LONG)
    ),
    f"{PYTHON} -m benchmarks.speed [--only panm,ntm,dnc,stack] [--quick]": ParseOnly(LONG),
    f"{PYTHON} -m benchmarks.speed.kernels [--suite ntm,dnc,stack] [--quick]": ParseOnly(LONG),
    f"{PYTHON} -m benchmarks.speed.scaling [--quick]": ParseOnly(LONG),
    f'{PYTHON} -m benchmarks.speed.profile --case "NTM ctrl 100, 128x20, Copy n=20, B=128"': ParseOnly(LONG),
}

# After the commands above ran, in the working directory: what the README says they write
# (the last, runs/copy-python, by its second Python block).
WRITTEN = (
    "runs/copy-panm/results.json",
    "runs/copy-panm/metrics.jsonl",
    "runs/copy-panm/eval.json",
    "runs/copy-panm/eval_traces.png",
    "runs/demo-128/results.json",
    *(f"runs/copy-dnc/s{s}/results.json" for s in range(3)),
    "runs/copy-bf16/results.json",
    "copy.png",
    "runs/rev-stack/range.json",
    "runs/copy-python/results.json",
)


@dataclasses.dataclass(frozen=True)
class PythonBlock:
    """How to run one README Python block: ``marker`` finds it, each ``(old, new)`` of
    ``replace`` must occur in it (and is swapped), ``check`` runs after it in its namespace."""

    marker: str
    replace: tuple[tuple[str, str], ...] = ()
    check: str = ""


# The second block's whole run, shrunk as the commands are: 2 steps of batch 4, width 8, one
# training shape and one evaluation mode.
TINY_RUN = (
    '["num_steps=2", "batch_size=4", "model_options.hidden=8", "eval_every=2", "checkpoint_every=2", '
    '"log_every=1", "eval_examples=4", "eval_batch_size=4", "buckets=[10]", "eval_modes=L+1"]'
)

PYTHON_BLOCKS = (
    PythonBlock(
        "from panm_jax.kernels import ntm",
        check="""
assert T == 17, T  # "T = 17 NTM steps"
assert xs.shape == (B, T, BITS + 1) and targets.shape == (B, T, BITS), (xs.shape, targets.shape)
assert scored.shape == (T,) and mask.shape == (B, T), (scored.shape, mask.shape)
memory, reads = ntm.step(ntm.init_state(N, W, R, H), ntm.controls_from_interface(jnp.zeros(P), W, R, H))
assert reads.shape == memory.reads.shape == (R, W), reads.shape  # "reads [R, W]"
logits = jax.vmap(rollout, in_axes=(None, 0, 0))(params, xs, mask)
assert logits.shape == (B, T, BITS), logits.shape  # "[B, T, BITS]"
assert bool(jnp.isfinite(loss)), loss
# The loop is closed: the loss depends on the controller's weights that take the previous reads.
grads = jax.grad(loss_fn)(params)
assert float(jnp.abs(grads["ctrl"]["w"][BITS + 1 :]).sum()) > 0, "no gradient through the reads fed back"
# The optax step trained: the loss at the new parameters is below the loss before the step.
assert float(loss_fn(params)) < float(loss), (float(loss_fn(params)), float(loss))
""",
    ),
    PythonBlock(
        "from panm_jax import build_model",
        replace=(
            ("output_size=task.output_size)", "output_size=task.output_size, hidden=8)"),
            ("task.train_batch(np.random.default_rng(0), 128)", "task.train_batch(np.random.default_rng(0), 4)"),
            ('["num_steps=300"]', TINY_RUN),
        ),
        check="assert {'loss', 'grad_norm', 'token_accuracy'} <= set(metrics), sorted(metrics)\n"
        "assert config.num_steps == 2 and results['step'] == 2, (config.num_steps, results['step'])\n"
        "assert [row['mode'] for row in results['modes']] == ['L+1'], results['modes']\n",
    ),
)

# Runs in a subprocess: plan.json -> every command through panm_jax.cli.main, then every
# Python block; writes one record per item (rc 0, an exit code, or a traceback) to out.json.
DRIVER = textwrap.dedent(
    """
    import json, sys, time, traceback
    import matplotlib
    matplotlib.use("Agg")
    from panm_jax.cli import main

    plan = json.loads(open(sys.argv[1]).read())
    records = []
    for item in plan["commands"]:
        t = time.perf_counter()
        print(f"\\n$ {item['name']}", flush=True)
        try:
            rc = main(item["argv"])
        except SystemExit as err:
            rc = err.code if isinstance(err.code, int) else 1
        except BaseException:
            rc = traceback.format_exc()
        records.append({"name": item["name"], "rc": rc, "seconds": time.perf_counter() - t})
    for item in plan["python"]:
        t = time.perf_counter()
        print(f"\\n>>> README Python block {item['name']}", flush=True)
        namespace = {"__name__": "__readme__"}
        try:
            exec(compile(item["code"], item["name"], "exec"), namespace)
            exec(compile(item["check"], item["name"] + " (check)", "exec"), namespace)
            rc = 0
        except BaseException:
            rc = traceback.format_exc()
        records.append({"name": item["name"], "rc": rc, "seconds": time.perf_counter() - t})
    with open(sys.argv[2], "w") as f:
        json.dump(records, f)
    """
)


# --- reading the README -----------------------------------------------------------------------------------------


def _text() -> str:
    return README.read_text(encoding="utf-8")


def fenced_blocks(language: str, text: str | None = None) -> list[str]:
    """The bodies of the README's fenced blocks of ``language``."""
    return re.findall(rf"^```{language}\n(.*?)^```", text if text is not None else _text(), re.S | re.M)


def shell_commands() -> list[tuple[str, list[str]]]:
    """``(normalised command, tokens)`` for every command of the bash blocks, in README order."""
    commands = []
    for block in fenced_blocks("bash"):
        for line in block.splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            tokens = list(lexer)
            parts, current = [], []
            for token in tokens:
                if token == ";":
                    parts.append(current)
                    current = []
                else:
                    current.append(token)
            parts.append(current)
            commands += [(_key(p), p) for p in parts if p]
    return commands


def inline_code() -> list[str]:
    """Every inline code span outside the fenced blocks, line breaks inside a span made spaces."""
    prose = re.sub(r"^```.*?^```", "", _text(), flags=re.S | re.M)
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]


def _strip_env(tokens: list[str]) -> list[str]:
    """Drop leading ``NAME=value`` environment settings."""
    while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", tokens[0]):
        tokens = tokens[1:]
    return tokens


def _unbracket(tokens: list[str]) -> list[str]:
    """A synopsis's optional ``[--flag VALUE]`` parts as plain arguments; ``[...]`` dropped."""
    return [t.removeprefix("[").removesuffix("]") for t in tokens if t != "[...]"]


def _key(tokens: list[str]) -> str:
    """The command as the README writes it (an argument with spaces in double quotes), comments dropped."""
    return " ".join(f'"{t}"' if re.search(r"\s", t) else t for t in tokens)


# --- parsing without running -------------------------------------------------------------------------------------


class _Parsed(Exception):
    pass


def parse_only(tokens: list[str], monkeypatch) -> argparse.Namespace:
    """Parse a ``.venv/bin/python -m MODULE ...``, ``.venv/bin/python FILE.py ...`` or
    ``.venv/bin/panm-jax ...`` command with the program's own parser; nothing runs."""
    tokens = _unbracket(_strip_env(tokens))
    if tokens[0] == PANM_JAX:
        from panm_jax.cli import build_parser

        return build_parser().parse_args(tokens[1:])
    assert tokens[0] == PYTHON, f"expected {PYTHON} or {PANM_JAX}: {shlex.join(tokens)}"
    if tokens[1] == "-m":
        module, argv = importlib.import_module(tokens[2]), tokens[3:]
        if hasattr(module, "__path__"):  # a package: ``python -m`` runs its __main__
            module = importlib.import_module(f"{tokens[2]}.__main__")
    else:
        spec = importlib.util.spec_from_file_location("_readme_script", ROOT / tokens[1])
        assert spec is not None and spec.loader is not None, tokens[1]
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        argv = tokens[2:]
    original = argparse.ArgumentParser.parse_args

    def parse_and_stop(self, args=None, namespace=None):
        raise _Parsed(original(self, args, namespace))

    with monkeypatch.context() as m:
        m.setattr(argparse.ArgumentParser, "parse_args", parse_and_stop)
        with pytest.raises(_Parsed) as parsed:
            module.main(argv)
    return parsed.value.args[0]


def makefile_targets() -> set[str]:
    return set(re.findall(r"^([\w.-]+):", (ROOT / "Makefile").read_text(), re.M))


# --- the tests ---------------------------------------------------------------------------------------------------


def test_the_readme_has_commands_and_code():
    assert len(shell_commands()) >= 20
    assert len(fenced_blocks("python")) == len(PYTHON_BLOCKS)


def test_every_command_is_classified():
    """A command added to the README, or changed, fails here until COMMANDS says how it is checked."""
    found = [key for key, _ in shell_commands()]
    unlisted = [c for c in found if c not in COMMANDS]
    gone = [c for c in COMMANDS if c not in found]
    assert not unlisted, "README commands missing from COMMANDS in tests/test_readme.py:\n" + "\n".join(unlisted)
    assert not gone, "COMMANDS lists commands the README no longer has:\n" + "\n".join(gone)


def test_commands_call_the_venv():
    """A fresh machine has no ``panm-jax`` on PATH, and its ``python`` lacks the package."""
    for key, tokens in shell_commands():
        assert _strip_env(tokens)[0] in ("make", PANM_JAX, PYTHON) or key == "python3 -m venv .venv", key
    bare = [s for s in inline_code() if re.match(r"(\w+=\S+ )*python3? (-m |\S+\.py)", s)]
    assert not bare, f"commands that need {PYTHON} instead of a bare python: {bare}"


def test_make_targets_exist():
    targets = makefile_targets()
    makes = [tokens for _, tokens in shell_commands() if tokens[0] == "make"]
    makes += [s.split() for s in inline_code() if s.startswith("make ")]
    assert makes
    for tokens in makes:
        names = [t for t in tokens[1:] if "=" not in t]  # VAR=value sets a variable
        assert names and all(n in targets for n in names), f"{shlex.join(tokens)}: targets {sorted(targets)}"


def test_install_lines_name_every_extra():
    """Each ``pip install -e '.[EXTRA]'`` names an extra of pyproject.toml, and each extra has its line."""
    import tomllib

    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    installs = [tokens for key, tokens in shell_commands() if isinstance(COMMANDS.get(key), Install)]
    named = {m.group(1) for tokens in installs for m in [re.fullmatch(r"\.\[(\w+)\]", tokens[-1])] if m}
    assert named == extras, f"install lines for {sorted(named)}, pyproject.toml's extras {sorted(extras)}"
    assert [PYTHON, "-m", "pip", "install", "-e", "."] in installs, "no line installing the package itself"


def test_parse_only_commands_parse(monkeypatch):
    failed = {}
    for key, tokens in shell_commands():
        if isinstance(COMMANDS.get(key), ParseOnly):
            try:
                parse_only(tokens, monkeypatch)
            except (Exception, SystemExit) as err:  # argparse exits on a bad argument
                failed[key] = f"{type(err).__name__}: {err}"
    assert not failed, "README commands that do not parse:\n" + "\n".join(f"{k}\n    {v}" for k, v in failed.items())


def test_inline_commands_parse(monkeypatch):
    """Inline ``.venv/bin/python ...`` and ``.venv/bin/panm-jax ...`` commands parse (the README has none today:
    its commands are in the blocks above; one added to the prose is checked here)."""
    spans = [s for s in inline_code() if re.match(rf"(\w+=\S+ )*({re.escape(PYTHON)}|{re.escape(PANM_JAX)}) ", s)]
    for span in spans:
        tokens = shlex.split(span.removesuffix("..."))  # "RUN_FOLDER..." is a placeholder for several
        parse_only(tokens, monkeypatch)


def test_paths_and_links_exist():
    prefixes = ("panm_jax/", "tests/", "docs/", "benchmarks/", "configs/", "examples/", "notebooks/", ".ci/")
    paths = [s for s in inline_code() if s.startswith(prefixes) and re.fullmatch(r"[\w./-]+", s)]
    paths += [p for p in re.findall(r"\]\(([^)\s]+)\)", _text()) if not re.match(r"\w+:", p)]
    assert len(paths) >= 10
    rendered = {f"docs/results/{name}" for name in build.render()[0]}  # the results pages: built by make docs
    missing = [p for p in paths if not (ROOT / p.split("#")[0]).exists() and p.split("#")[0] not in rendered]
    assert not missing, f"paths the README names that do not exist: {missing}"


def contents_tree() -> list[str]:
    """The paths of the README's contents tree (the fenced block without a language that starts with
    ``panm_jax/``), each name joined to the folder above it, which its indentation gives."""
    blocks, language, body = [], None, []
    for line in _text().splitlines():
        if line.startswith("```"):
            if language is None:
                language, body = line[3:].strip(), []
            else:
                blocks.append((language, body))
                language = None
        elif language is not None:
            body.append(line)
    (tree,) = [lines for language, lines in blocks if language == "" and lines and lines[0].startswith("panm_jax/")]
    paths: list[str] = []
    folders: list[tuple[int, str]] = []  # (indent, path) of the folders enclosing the current line
    for line in tree:
        indent, name = len(line) - len(line.lstrip()), line.split()[0]
        while folders and folders[-1][0] >= indent:
            folders.pop()
        path = (folders[-1][1] if folders else "") + name
        paths.append(path)
        if name.endswith("/"):
            folders.append((indent, path))
    return paths


def test_contents_tree_is_the_repository():
    """Every path of the contents tree exists; every top-level folder and every sub-package of panm_jax and
    benchmarks is in it."""
    paths = contents_tree()
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"the contents tree names paths that do not exist: {missing}"
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    folders = {f.split("/")[0] + "/" for f in tracked if "/" in f}
    packages = {
        str(Path(f).parent) + "/" for f in tracked if re.fullmatch(r"(panm_jax|benchmarks)/\w+/__init__\.py", f)
    }
    unlisted = sorted((folders | packages) - set(paths))
    assert not unlisted, f"folders missing from the contents tree: {unlisted}"


def test_console_script_is_installed():
    """``.venv/bin/panm-jax`` is the package's entry point (the commands below call it in-process)."""
    script = Path(sys.executable).parent / "panm-jax"
    if not script.exists():
        pytest.skip(f"no panm-jax beside {sys.executable} (not running from the project's virtual environment)")
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("panm-jax "), out.stderr


def _test_argv(tokens: list[str], how: Run) -> list[str]:
    assert tokens[0] == PANM_JAX
    swaps = dict(how.replace)
    for old in swaps:
        assert old in tokens, f"{shlex.join(tokens)}: no {old!r} to replace"
    return [swaps.get(t, t) for t in tokens[1:]] + list(how.append)


def _python_plan() -> list[dict[str, str]]:
    plan = []
    for index, block in enumerate(fenced_blocks("python")):
        spec = PYTHON_BLOCKS[index]
        assert spec.marker in block, f"README Python block {index + 1}: expected {spec.marker!r} in it"
        for old, new in spec.replace:
            assert old in block, f"README Python block {index + 1}: no {old!r} to replace"
            block = block.replace(old, new)
        plan.append({"name": f"README.md python block {index + 1}", "code": block, "check": spec.check})
    return plan


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory):
    """Run every ``Run`` command and every Python block in one subprocess, in a temporary directory."""
    work = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "configs", work / "configs")
    commands = [
        {"name": key, "argv": _test_argv(tokens, how)}
        for key, tokens in shell_commands()
        if isinstance(how := COMMANDS.get(key), Run)
    ]
    plan = {"commands": commands, "python": _python_plan()}
    (work / "plan.json").write_text(json.dumps(plan))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, "plan.json", "out.json"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = proc.stdout[-6000:] + proc.stderr[-6000:]
    assert proc.returncode == 0 and (work / "out.json").exists(), log
    records = {r["name"]: r for r in json.loads((work / "out.json").read_text())}
    return work, records, log


def test_shell_commands_run(readme_run):
    work, records, log = readme_run
    failed = {name: r["rc"] for name, r in records.items() if r["rc"] != 0 and not name.startswith("README.md")}
    assert not failed, f"README commands that failed: {failed}\n{log}"
    missing = [p for p in WRITTEN if not (work / p).exists()]
    assert not missing, f"the README's commands did not write {missing}\n{log}"
    # The tiny overrides took effect (a later --set wins over the README's own).
    config = json.loads((work / "runs/demo-128/config.json").read_text())
    assert config["model_options"]["hidden"] == 8 and config["num_steps"] == 2
    assert json.loads((work / "runs/copy-bf16/config.json").read_text())["compute_dtype"] == "bfloat16"
    # metrics.jsonl holds what the README says: training lines and validation lines.
    lines = [json.loads(x) for x in (work / "runs/copy-panm/metrics.jsonl").read_text().splitlines()]
    assert any({"step", "time", "steps_per_s", "loss", "grad_norm"} <= set(x) for x in lines), lines
    assert any(set(x) == {"step", "validation"} for x in lines), lines


def test_python_blocks_run(readme_run):
    _, records, log = readme_run
    blocks = {name: r["rc"] for name, r in records.items() if name.startswith("README.md")}
    assert len(blocks) == len(PYTHON_BLOCKS)
    failed = {name: rc for name, rc in blocks.items() if rc != 0}
    assert not failed, f"README Python blocks that failed: {failed}\n{log}"
