"""Train a model on an algorithmic task of Le et al. 2024 and evaluate it over the length modes.

Le et al. 2024: Plug, Play, and Generalize: Length Extrapolation with
Pointer-Augmented Neural Memory, TMLR (docs/references.md).

A short, self-contained training run (the full trainer, with checkpoints, configs
and the ``panm-jax train`` command, is ``panm_jax.train``). Training draws a
fresh length n ~ U{1..L} per batch (docs/tasks.md, algorithmic tasks), pads it to the buckets
(1, 2, 4, 8, L) so the step compiles a handful of times, and stops after
``--steps`` steps or ``--minutes`` minutes, whichever comes first. Every
``--eval-every`` steps it measures token accuracy on fixed evaluation sets at
the task's test lengths (L, L+1, 2L+1, 4L+1, 8L+1), with PANM's base address 0.

    python examples/train_copy.py --model panm --minutes 15
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np
import optax
from flax import nnx

from panm_jax.models import build_model
from panm_jax.tasks import get_task
from panm_jax.tasks.buckets import pad_to_bucket
from panm_jax.train.optim import paper_optimizer
from panm_jax.train.steps import init_train_state, make_eval_step, make_train_step


def evaluate(eval_step, params, task, eval_sets) -> dict[str, float]:
    out = {}
    for mode, batches in eval_sets.items():
        correct = total = 0.0
        for batch in batches:
            m = eval_step(params, batch)
            n = float(np.sum(batch.target_mask))
            correct += float(m["token_accuracy"]) * n
            total += n
        out[mode] = correct / total
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="copy")
    p.add_argument("--model", default="panm")
    p.add_argument("--hidden", type=int, default=None, help="model width (default: the model's own)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument(
        "--optimizer",
        choices=["adam", "paper"],
        default="adam",
        help="adam (lr --lr, clip by global norm 1) or paper (RMSprop 1e-4, momentum 0.9, clip 10)",
    )
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--minutes", type=float, default=15.0)
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--eval-examples", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the final results as JSON here")
    args = p.parse_args(argv)

    task = get_task(args.task)
    hparams = {} if args.hidden is None else {"hidden": args.hidden}
    model = build_model(args.model, input_size=task.input_size, output_size=task.output_size, seed=args.seed, **hparams)
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(nnx.state(model, nnx.Param)))
    if args.optimizer == "paper":
        optimizer = paper_optimizer()
    else:
        optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(args.lr))
    graphdef, state = init_train_state(model, optimizer, seed=args.seed)
    train_step = jax.jit(make_train_step(graphdef, optimizer, task))
    eval_step = jax.jit(make_eval_step(graphdef, task))
    top = task.train_lengths.hi
    buckets = tuple(b for b in (1, 2, 4, 8) if b < top) + (top,)
    eval_sets = {mode: list(task.eval_batches(mode, args.eval_examples, 128, seed=1)) for mode in task.test_modes}

    print(
        f"{args.model} on {args.task}: {n_params:,} parameters, buckets {buckets}, "
        f"device {jax.devices()[0].device_kind}",
        flush=True,
    )
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    history = []
    step = 0
    while step < args.steps and time.perf_counter() - t0 < 60 * args.minutes:
        batch = pad_to_bucket(task.train_batch(rng, args.batch_size), task, buckets)
        state, metrics = train_step(state, batch)
        step += 1
        if step % args.eval_every == 0:
            acc = evaluate(eval_step, state.params, task, eval_sets)
            elapsed = time.perf_counter() - t0
            history.append({"step": step, "seconds": round(elapsed, 1), "loss": float(metrics["loss"]), **acc})
            print(json.dumps(history[-1]), flush=True)
    acc = evaluate(eval_step, state.params, task, eval_sets)
    elapsed = time.perf_counter() - t0
    final = {"step": step, "seconds": round(elapsed, 1), **acc}
    print("final:", json.dumps(final), flush=True)
    print("| steps | minutes | " + " | ".join(acc) + " |")
    print("|---|---|" + "---|" * len(acc))
    print(f"| {step} | {elapsed / 60:.1f} | " + " | ".join(f"{100 * v:.1f}" for v in acc.values()) + " |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "params": n_params, "history": history, "final": final}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
