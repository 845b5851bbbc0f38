"""Where a trained PANM's Mode-1 pointer goes wrong on long Copy, Reverse and Mix inputs.

    python -m benchmarks.diagnose_pointer runs/reproduce/copy/panm-s0-quick23m [more run folders]

For each run folder (a ``benchmarks.reproduce`` or ``panm-jax train`` run of PANM
on Copy, Reverse or Mix) it restores the checkpoint selected on validation, decodes a
fixed test set at each length mode with traces, and measures, for the Mode-1 head
that follows the task's rule best:

* ``pointer``: how often the head's largest attention weight sits on the slot
  that holds the right token (Copy: output ``t`` reads slot ``t + 1``, after the
  start delimiter; Reverse: slot ``n - t``; Mix: slot ``ceil(n / 2)`` at even
  ``t``, slot 1 at odd ``t``, counting ``t`` from 0). Mix's two kinds of step
  are reported apart (``steps``: ``middle`` and ``first``), each with the head
  that follows it best;
* ``token if pointer right`` and ``token if pointer wrong``: the token accuracy on
  the steps where it does and where it does not;
* ``first miss``: the first output step at which the head misses on most
  examples. At evaluation the base address is 0, and the Pointer Units never see
  the data (Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory,
  TMLR), §1, principle II), so every example of one length follows the
  same pointer path and the misses sit at the same steps (a run with
  ``random_base_at_eval`` draws a base per example, from a fixed key, so each
  example has a path of its own);
* the path itself (the slot of the largest weight at each step) for the first
  example at the longest mode, in the notes.

Writes ``benchmarks/results/<device>/<name>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax
import numpy as np
from flax import nnx

from benchmarks import common

MODES = ("2L+1", "4L+1", "8L+1")


def target_slots(task: str, lengths: np.ndarray, steps: int) -> np.ndarray:
    """``[B, T]`` the memory slot whose token output step ``t`` must emit (slot 0 is the start delimiter)."""
    t = np.arange(steps)[None, :]
    n = lengths[:, None] - 2  # tokens between the two delimiters
    if task == "copy":
        return np.broadcast_to(t + 1, (len(lengths), steps))
    if task == "reverse":
        return n - t
    if task == "mix":  # y_t = x_ceil(n/2) at 1-indexed odd t (0-indexed even), x_1 otherwise
        return np.where(t % 2 == 0, (n + 1) // 2, 1)
    raise SystemExit(f"--task: expected copy, reverse or mix (tasks whose pointer path is known), got {task!r}")


def step_groups(task: str, steps: int) -> dict[str, np.ndarray]:
    """``{name: [T] bool}``: the output steps reported together (Mix's middle and first steps apart)."""
    t = np.arange(steps)
    if task == "mix":
        return {"middle": t % 2 == 0, "first": t % 2 == 1}
    return {"all": np.ones(steps, bool)}


def pointer_summary(weights: np.ndarray, token_ok: np.ndarray, scored: np.ndarray, want: np.ndarray) -> dict:
    """The figures of one mode from ``weights [B, T, H, L]``, ``token_ok``, ``scored`` and ``want`` (all ``[B, T]``).

    The head is the one whose largest weight sits on ``want`` most often.
    """
    hits = weights.argmax(-1) == want[:, :, None]  # [B, T, H]
    head = int(np.argmax([(hits[..., h] & scored).sum() for h in range(hits.shape[-1])]))
    hit = hits[..., head]
    missed = [t for t in range(hit.shape[1]) if scored[:, t].any() and hit[:, t][scored[:, t]].mean() < 0.5]
    return {
        "head": head,
        "token %": 100 * token_ok[scored].mean(),
        "pointer %": 100 * hit[scored].mean(),
        "token if pointer right %": 100 * token_ok[scored & hit].mean() if (scored & hit).any() else float("nan"),
        "token if pointer wrong %": 100 * token_ok[scored & ~hit].mean() if (scored & ~hit).any() else float("nan"),
        "first miss": missed[0] if missed else "none",
        "max weight": float(weights[..., head, :].max(-1)[scored].mean()),
    }


def diagnose(workdir: Path, modes, examples: int):
    from panm_jax.train.checkpoint import Checkpointer
    from panm_jax.train.config import TrainConfig
    from panm_jax.train.loop import Run

    config_path = workdir / "config.json"
    if not config_path.exists():
        raise SystemExit(f"run folder: expected {config_path} (a training run's folder), got none")
    config = TrainConfig.from_dict(json.loads(config_path.read_text()))
    if config.model != "panm":
        raise SystemExit(f"run folder: expected a PANM run, got model {config.model!r} in {workdir}")
    run = Run(config)
    ckpt = Checkpointer(workdir, keep=config.keep_checkpoints)
    restored = ckpt.restore_best(jax.device_get(run.state))
    ckpt.close()
    if restored is None:
        raise SystemExit(f"run folder: no selected checkpoint under {workdir / 'best'}")
    state, meta = restored
    model = nnx.merge(run.graphdef, state.params)
    # The key draws the base addresses of a run with ``random_base_at_eval`` (fixed: a rerun sees the same
    # bases); a run with base address 0 at evaluation does not use it.
    forward = nnx.jit(lambda m, x, mask, steps, key: m(x, mask, steps, key=key, return_traces=True), static_argnums=3)
    rows, paths = [], {}
    for mode in modes:
        batch = next(iter(run.task.eval_batches(mode, examples, examples, seed=3)))
        steps = batch.targets.shape[1]
        logits, traces = forward(model, batch.inputs, batch.input_mask, steps, jax.random.key(3))
        weights = np.asarray(traces.pointer_weights)  # [B, T, H, L]
        scored = np.asarray(batch.target_mask)
        token_ok = np.asarray(logits).argmax(-1) == batch.targets
        want = target_slots(config.task, np.asarray(batch.input_mask).sum(1), steps)
        for group, which in step_groups(config.task, steps).items():
            summary = pointer_summary(weights, token_ok, scored & which[None, :], want)
            rows.append(
                {"run": workdir.name, "step": meta["step"], "mode": mode, "length": steps, "steps": group, **summary}
            )
            head = summary["head"]
            paths[(mode, group)] = [int(s) for s in weights[0, :, head].argmax(-1)[: int(scored[0].sum())]]
    return rows, paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run folders (each with config.json and best/)")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--examples", type=int, default=256)
    p.add_argument("--name", default="diagnose_pointer_copy", help="the record's file name, without extension")
    args = p.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    rows, notes = [], []
    for run in args.runs:
        got, paths = diagnose(Path(run), modes, args.examples)
        rows += got
        last = modes[-1]
        for row in got:
            if row["mode"] == last:
                group = "" if row["steps"] == "all" else f" (the head of the {row['steps']} steps)"
                notes.append(
                    f"- `{Path(run).name}`, head {row['head']}{group}, mode {last}: slot of the largest weight at "
                    f"each step: {' '.join(map(str, paths[(last, row['steps'])]))}"
                )
    cols = [
        "run",
        "step",
        "mode",
        "length",
        "steps",
        "head",
        "token %",
        "pointer %",
        "token if pointer right %",
        "token if pointer wrong %",
        "first miss",
        "max weight",
    ]
    command = "python -m benchmarks.diagnose_pointer " + " ".join(argv if argv is not None else sys.argv[1:])
    text = (
        "'pointer %': how often the Mode-1 head's largest weight sits on the slot holding the right token; "
        "'first miss': the first output step (from 0) at which it misses on most examples; 'max weight': "
        "the mean of that head's largest weight. Evaluation uses base address 0, so all examples of one "
        "length share one pointer path (runs with random_base_at_eval draw a base per example from a fixed "
        "key: each example has its own path). 'steps': the output steps counted (Mix: 'middle' for x_ceil(n/2), "
        "'first' for x_1). Paths (slot 0 is the start delimiter; Copy's output t reads slot t+1):\n\n"
        + "\n".join(notes)
    )
    common.write_results(
        args.name, "PANM: where the Mode-1 pointer goes wrong", rows, cols, common.environment(), text, command
    )
    print(common.markdown_table(rows, cols))
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
