"""Suzgun et al.'s own code, run unchanged, for the Dyck benchmark (``benchmarks.accuracy.dyck --code suzgun``).

Suzgun, Belinkov, Shieber & Gehrmann 2019, *Memory-Augmented Recurrent Neural Networks Can Learn
Generalized Dyck Languages* (arXiv:1911.03329), publish their code (github.com/suzgunmirac/marnns):
``main.py`` generates the data with ``tasks/dyck_generator.py``, trains a model and scores it. This
script runs under *their* Python (PyTorch and NumPy; nothing from this library is imported) and
drives their files as published, none of them edited:

1. ``main.py``'s own flags set the language (``--num_par``), the model (``--model_name
   stack_rnn_softmax``, their SRNN with its default sizes: 8 hidden units, a stack of 104 cells of
   width 5), ``--training_size``, ``--test_size``, ``--n_epoch`` and ``--save_path``; the learning
   rate (0.01), ``p`` = 0.5 and ``q`` = 0.25 are their defaults.
2. Set from outside, because no flag can: the training window ``2..L`` (their ``--training_window``
   is declared ``type=int`` without ``nargs``, so no command line gives it the list ``main()``
   indexes; the value is put on the parsed arguments, their default being ``[2, 50]``) and the seed
   (their module seeds ``random``, ``numpy`` and ``torch`` with 1729 when imported; they are
   seeded again with ``--seed`` before ``main()`` runs, so the seed fixes both their data and their
   initialisation).
3. ``main.main()`` runs whole: it draws ``--training-size`` distinct strings of lengths ``2..L`` and
   ``--test-size`` distinct strings of lengths ``L+2..2L`` (``generate_list`` rejects repeats),
   trains ``--epochs`` passes over the training strings in the order drawn (one string per Adam
   step, mean squared error of the sigmoid outputs), saves the weights after each epoch (the last
   epoch's are kept: their code selects no checkpoint), and scores the final model on its training
   and test strings with its ``test_model``. Those two scores are taken from ``test_model``'s
   return values (the function is wrapped, not changed).
4. The saved weights are loaded into a fresh model built by their ``choose_model``, and their
   ``test_model`` scores it on the strings of ``--bins`` (a JSON object ``{mode: [string, ...]}``
   in their alphabet ``()[]{}``), the targets made by their ``output_generator``: the same strings
   this library's runner scores its own models on.

    PYTHON benchmarks/accuracy/dyck_peer.py --repo DIR --num-par 2 --max-train-length 10 \\
        --training-size 1618 --test-size 1000 --epochs 5 --seed 0 --bins bins.json --workdir OUT

Writes ``OUT/results.json``: the commit-free settings, seconds spent, their training and test
accuracy and the sequence accuracy (%) per bin; their printed log goes to ``OUT/log.txt``.
"""

from __future__ import annotations

import os
import sys

# Run as a script, this file's folder heads sys.path, where a module of this project (benchmarks/accuracy/
# queue.py) would shadow the standard library's under their Python: drop it before anything else is imported.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

MODEL_NAME = "stack_rnn_softmax"  # their SRNN (Stack-RNN with the softmax decision gate)


def main_flags(args) -> list[str]:
    """Their ``main.py``'s command line for ``args`` (only flags ``main.py`` declares)."""
    return [
        "main.py",
        "--num_par",
        str(args.num_par),
        "--model_name",
        MODEL_NAME,
        "--training_size",
        str(args.training_size),
        "--test_size",
        str(args.test_size),
        "--n_epoch",
        str(args.epochs),
        "--save_path",
        os.path.join(os.path.abspath(args.workdir), "weights.pth"),
    ]


def run(args) -> dict:
    import random

    import numpy as np
    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, os.path.abspath(args.repo))
    sys.argv = main_flags(args)
    import main as theirs  # their main.py: seeds with 1729 on import

    parse = theirs.get_args

    def get_args():
        parsed = parse()
        parsed.training_window = [2, args.max_train_length]  # no flag can set it (module docstring)
        return parsed

    scores: list[tuple[float, int]] = []
    score = theirs.test_model

    def test_model(*a, **k):
        result = score(*a, **k)
        scores.append(result)
        return result

    theirs.get_args, theirs.test_model = get_args, test_model
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    theirs.main()
    trained = time.perf_counter() - start
    (train_accuracy, _), (test_accuracy, _) = scores[:2]

    flags = theirs.get_args()
    dyck = theirs.DyckLanguage(flags.num_par, flags.p_val, flags.q_val)
    model = theirs.choose_model(
        flags.model_name, flags.n_hidden, len(dyck.return_vocab()), flags.n_layers, flags.memory_size, flags.memory_dim
    )
    model.load_state_dict(torch.load(flags.save_path))
    bins = json.loads(open(args.bins).read()) if args.bins else {}
    start = time.perf_counter()
    out_bins = {}
    for mode, strings in bins.items():
        targets = [dyck.output_generator(s) for s in strings]
        accuracy, correct = score(model, dyck, strings, targets, 1.0)
        out_bins[mode] = {
            "sequence_accuracy": accuracy,
            "correct": correct,
            "examples": len(strings),
            "lengths": [min(map(len, strings)), max(map(len, strings))],
        }
    return {
        "model_name": MODEL_NAME,
        "argv": flags_record(flags),
        "seed": args.seed,
        "train_seconds": trained,
        "eval_seconds": time.perf_counter() - start,
        "train_sequence_accuracy": train_accuracy,
        "their_test_sequence_accuracy": test_accuracy,
        "their_test_window": [flags.training_window[1] + 2, 2 * flags.training_window[1]],
        "bins": out_bins,
        "torch": torch.__version__,
    }


def flags_record(flags) -> dict:
    """The settings their ``main()`` ran with (its parsed arguments, the training window included)."""
    return {k: v for k, v in sorted(vars(flags).items()) if k not in ("save_path", "load_path")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", required=True, help="a checkout of github.com/suzgunmirac/marnns")
    p.add_argument("--num-par", type=int, required=True, help="n of D_n (their --num_par)")
    p.add_argument("--max-train-length", type=int, required=True, help="L: training strings of lengths 2..L")
    p.add_argument("--training-size", type=int, required=True, help="distinct training strings")
    p.add_argument("--test-size", type=int, default=1000, help="their own test strings (lengths L+2..2L)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bins", default=None, help="JSON {mode: [string, ...]} to score the trained model on")
    p.add_argument("--workdir", required=True)
    args = p.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    with open(os.path.join(args.workdir, "log.txt"), "w") as log, contextlib.redirect_stdout(log):
        result = run(args)
    with open(os.path.join(args.workdir, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items() if k != "argv"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
