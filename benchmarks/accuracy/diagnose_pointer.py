"""Where a trained PANM's pointer goes wrong on long inputs of the six algorithmic tasks.

Time on the 2-core CPU of ``benchmarks/results/cpu-2cores/``: about 15 s per run folder of Copy
at the default 256 examples (measured).

    python -m benchmarks.accuracy.diagnose_pointer runs/reproduce/copy/panm-s0-quick23m [more run folders]

For each run folder (a ``benchmarks.accuracy.reproduce`` or ``panm-jax train`` run of PANM
on an algorithmic task) it restores the checkpoint selected on validation, decodes a
fixed test set at each length mode with traces, and measures, for the pointer
head that follows the task's rule best:

* ``pointer``: how often the head's largest attention weight sits on the slot
  that holds the right token. Slot ``j`` holds input row ``j`` (slot 0 is the
  start delimiter, ``x_i`` is slot ``i``). Content-free tasks, Mode-1 pointers:
  Copy's output ``t`` reads slot ``t + 1``, Reverse's slot ``n - t``, Mix's slot
  ``ceil(n / 2)`` at even ``t`` and slot 1 at odd ``t`` (``t`` from 0); Mix's two
  kinds of step are reported apart (``steps``: ``middle`` and ``first``), each
  with the head that follows it best. Content-based tasks, Mode-2 (content)
  pointers, the slots read from the inputs: Priority Sort's output ``t`` reads
  the token of the ``t``-th smallest priority, ID Sort's output ``i`` the token
  that shares token ``i``'s id (itself when self-paired), Dynamic Recall's one
  output the neighbour of the query's first occurrence (after it for odd
  ``n``, before it for even ``n``). ``--pointer mode1`` or ``mode2`` measures
  the other kind instead;
* ``token if pointer right`` and ``token if pointer wrong``: the token accuracy on
  the steps where it does and where it does not;
* ``first miss``: the first output step at which the head misses on most
  examples. At evaluation the base address is 0, and the Pointer Units never see
  the data (Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural Memory,
  TMLR), §1, principle II), so every example of one length follows the
  same Mode-1 pointer path and the misses sit at the same steps (a run with
  ``random_base_at_eval`` draws a base per example, from a fixed key, so each
  example has a path of its own);
* the path itself (the slot of the largest weight at each step) for the first
  example at the longest mode, in the notes, beside the slots it should read
  where those depend on the example.

Writes ``benchmarks/results/<device>/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import numpy as np
from flax import nnx

from benchmarks import common
from panm_jax import enable_compile_cache
from panm_jax.tasks.algorithmic import EXTRA_CHANNEL, ID_WIDTH, NUM_SYMBOLS
from panm_jax.train.steps import merge_model

MODES = ("2L+1", "4L+1", "8L+1")


CONTENT_FREE = ("copy", "reverse", "mix")
CONTENT_BASED = ("priority_sort", "id_sort", "dynamic_recall")


def target_slots(task: str, lengths: np.ndarray, steps: int, inputs: np.ndarray | None = None) -> np.ndarray:
    """``[B, T]`` the memory slot whose token output step ``t`` must emit (slot 0 is the start delimiter).

    ``lengths``: the input rows of each example; ``inputs`` ``[B, T_in, D_in]``: needed by the content-based
    tasks, whose slots depend on the priorities, ids or query. Steps past an example's outputs get slot 0.
    """
    t = np.arange(steps)[None, :]
    B = len(lengths)
    if task in CONTENT_FREE:
        n = lengths[:, None] - 2  # tokens between the two delimiters
        if task == "copy":
            return np.broadcast_to(t + 1, (B, steps))
        if task == "reverse":
            return n - t
        return np.where(t % 2 == 0, (n + 1) // 2, 1)  # mix: x_ceil(n/2) at 1-indexed odd t, x_1 otherwise
    if task not in CONTENT_BASED:
        raise SystemExit(f"--task: expected one of {', '.join(CONTENT_FREE + CONTENT_BASED)}, got {task!r}")
    if inputs is None:
        raise ValueError(f"target_slots: task {task!r} needs the inputs")
    want = np.zeros((B, steps), np.int64)
    for b in range(B):
        if task == "dynamic_recall":
            n = int(lengths[b]) - 3  # the delimiters and the query row
            x = inputs[b, 1 : n + 1, :NUM_SYMBOLS].argmax(-1)
            query = int(inputs[b, n + 2, :NUM_SYMBOLS].argmax())
            first = int(np.flatnonzero(x == query)[0])  # 0-indexed position of the first occurrence
            want[b, 0] = 1 + (first + 1 if n % 2 == 1 else first - 1)
            continue
        n = int(lengths[b]) - 2
        if task == "priority_sort":
            order = np.argsort(inputs[b, 1 : n + 1, EXTRA_CHANNEL], kind="stable")
            want[b, :n] = 1 + order[:steps]
        else:  # id_sort: the other position with the same id vector, or the position itself
            ids = inputs[b, 1 : n + 1, EXTRA_CHANNEL : EXTRA_CHANNEL + ID_WIDTH]
            same = (ids[:, None, :] == ids[None, :, :]).all(-1) & ~np.eye(n, dtype=bool)
            partner = np.where(same.any(1), same.argmax(1), np.arange(n))
            want[b, :n] = 1 + partner[:steps]
    return want


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
        "token if pointer right %": 100 * token_ok[scored & hit].mean() if (scored & hit).any() else None,
        "token if pointer wrong %": 100 * token_ok[scored & ~hit].mean() if (scored & ~hit).any() else None,
        "first miss": missed[0] if missed else "none",
        "max weight": float(weights[..., head, :].max(-1)[scored].mean()),
        "weight on right slot": float(
            np.take_along_axis(weights[..., head, :], want[..., None], -1)[..., 0][scored].mean()
        ),
    }


def pointer_kind(task: str, pointer: str) -> str:
    """``mode1`` or ``mode2``: what ``--pointer`` names, or for ``auto`` the kind the task's rule uses."""
    if pointer not in ("auto", "mode1", "mode2"):
        raise SystemExit(f"--pointer: expected auto, mode1 or mode2, got {pointer!r}")
    if pointer != "auto":
        return pointer
    return "mode1" if task in CONTENT_FREE else "mode2"


def diagnose(workdir: Path, modes, examples: int, pointer: str = "auto"):
    from panm_jax.train.checkpoint import Checkpointer
    from panm_jax.train.config import TrainConfig
    from panm_jax.train.loop import Run

    config_path = workdir / "config.json"
    if not config_path.exists():
        raise SystemExit(f"run folder: expected {config_path} (a training run's folder), got none")
    config = TrainConfig.from_dict(json.loads(config_path.read_text()))
    if config.model != "panm":
        raise SystemExit(f"run folder: expected a PANM run, got model {config.model!r} in {workdir}")
    kind = pointer_kind(config.task, pointer)
    if config.task not in CONTENT_FREE + CONTENT_BASED:
        raise SystemExit(f"run folder: expected a run of an algorithmic task, got task {config.task!r} in {workdir}")
    run = Run(config)
    ckpt = Checkpointer(workdir, keep=config.keep_checkpoints)
    restored = ckpt.restore_best(jax.device_get(run.state))
    ckpt.close()
    if restored is None:
        raise SystemExit(f"run folder: no selected checkpoint under {workdir / 'best'}")
    state, meta = restored
    model = merge_model(run.graphdef, state.params)
    # The key draws the base addresses of a run with ``random_base_at_eval`` (fixed: a rerun sees the same
    # bases); a run with base address 0 at evaluation does not use it.
    forward = nnx.jit(lambda m, x, mask, steps, key: m(x, mask, steps, key=key, return_traces=True), static_argnums=3)
    rows, paths, wanted = [], {}, {}
    for mode in modes:
        batch = next(iter(run.task.eval_batches(mode, examples, examples, seed=3)))
        steps = batch.targets.shape[1]
        logits, traces = forward(model, batch.inputs, batch.input_mask, steps, jax.random.key(3))
        weights = np.asarray(traces.pointer_weights if kind == "mode1" else traces.mode2_weights)  # [B, T, H, L]
        scored = np.asarray(batch.target_mask)
        token_ok = np.asarray(logits).argmax(-1) == batch.targets
        want = target_slots(config.task, np.asarray(batch.input_mask).sum(1), steps, np.asarray(batch.inputs))
        for group, which in step_groups(config.task, steps).items():
            summary = pointer_summary(weights, token_ok, scored & which[None, :], want)
            rows.append(
                {
                    "run": workdir.name,
                    "step": meta["step"],
                    "mode": mode,
                    "length": steps,
                    "pointer": kind,
                    "steps": group,
                    **summary,
                }
            )
            head = summary["head"]
            shown = int(scored[0].sum())
            paths[(mode, group)] = [int(s) for s in weights[0, :, head].argmax(-1)[:shown]]
            if config.task in CONTENT_BASED:  # the right slots depend on the example: show them beside the path
                wanted[(mode, group)] = [int(s) for s in want[0, :shown]]
    return rows, paths, wanted


def main(argv=None) -> int:
    enable_compile_cache()  # a rerun reads the programs it compiled (panm_jax/train/compile_cache.py)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run folders (each with config.json and best/)")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--examples", type=int, default=256)
    p.add_argument("--name", default="diagnose_pointer_copy", help="the record's file name, without extension")
    p.add_argument(
        "--pointer",
        default="auto",
        choices=("auto", "mode1", "mode2"),
        help="mode1 (the Pointer Units' heads), mode2 (the content heads) or auto: the kind the task's rule uses "
        "(mode1 on Copy, Reverse, Mix; mode2 on Priority Sort, ID Sort, Dynamic Recall)",
    )
    args = p.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    rows, notes = [], []
    for run in args.runs:
        got, paths, wanted = diagnose(Path(run), modes, args.examples, args.pointer)
        rows += got
        last = modes[-1]
        for row in got:
            if row["mode"] == last:
                group = "" if row["steps"] == "all" else f" (the head of the {row['steps']} steps)"
                key = (last, row["steps"])
                want = f"; the slots it should read: {' '.join(map(str, wanted[key]))}" if key in wanted else ""
                notes.append(
                    f"- `{Path(run).name}`, {row['pointer']} head {row['head']}{group}, mode {last}: slot of the "
                    f"largest weight at each step: {' '.join(map(str, paths[key]))}{want}"
                )
    cols = [
        "run",
        "step",
        "mode",
        "length",
        "pointer",
        "steps",
        "head",
        "token %",
        "pointer %",
        "token if pointer right %",
        "token if pointer wrong %",
        "first miss",
        "max weight",
        "weight on right slot",
    ]
    command = common.portable_command(argv, "benchmarks.accuracy.diagnose_pointer")
    text = (
        "'pointer': the kind of head measured (mode1: the Pointer Units' Mode-1 heads; mode2: the content "
        "heads of Mode 2); 'pointer %': how often that head's largest weight sits on the slot holding the "
        "right token (Copy: t+1; Reverse: n-t; Mix: ceil(n/2) or 1; Priority Sort: the t-th smallest "
        "priority's; ID Sort: the id partner's; Dynamic Recall: the query's neighbour); 'first miss': the "
        "first output step (from 0) at which it misses on most examples; 'max weight': the mean of that "
        "head's largest weight; 'weight on right slot': the mean of its weight on the right slot (ID Sort: a "
        "token and its partner share an id, so a content head may split its weight between the two). "
        "Evaluation uses base address 0, so all examples of one length share one Mode-1 pointer path "
        "(runs with random_base_at_eval draw a base per example from a fixed key: each "
        "example has its own path). 'steps': the output steps counted (Mix: 'middle' for x_ceil(n/2), "
        "'first' for x_1). Paths (slot 0 is the start delimiter, slot i holds x_i):\n\n" + "\n".join(notes)
    )
    common.write_results(
        args.name, "PANM: where the pointer goes wrong", rows, cols, common.environment(), text, command
    )
    print(common.markdown_table(rows, cols))
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
