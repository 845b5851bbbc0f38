"""Run the PANM authors' ``run_algo_task.py`` so that its training can stop and resume exactly.

Run by a Python with torch (never the library's), from a checkout of
thaihungle/PANM, as ``python authors_resumable.py EVERY run_algo_task.py ARGS...``.
It is used by ``benchmarks.accuracy.authors_panm --save-every EVERY``. A 50,000-step
training of their script takes hours on a CPU, longer than one sitting, and the
script can neither save its state nor resume.

The script's source is read and compiled with two insertions, and everything else
is left as it is:

* right after its seeding (``random.seed(args.seed)``), when training and
  ``<last checkpoint>.resume`` exists, the state saved there is restored:
  * the model's and the optimiser's state dicts;
  * torch's, NumPy's and Python's random states;
  * the best validation error so far;
  * the loss and error lists of the current logging window;
  * the step to go on from.
* at the top of each training step ``iter > 0`` with ``iter % EVERY == 0``, that
  state is written, atomically (a temporary file, then ``os.replace``), with the
  training's seconds so far; at the end the runner prints
  ``TRAINING SECONDS S``, the sum over the runs that made up the training.

Each anchor must occur exactly once in the source, or the runner stops with an
error naming it, so another version of the script is never patched blindly.
The best checkpoint (``-best.pt``) is the script's own file. It is written only
when validation improves, so it is already on disk, as of any saved state, when
training resumes. With one thread (``OMP_NUM_THREADS=1``) the resumed run is the
unbroken one: ``benchmarks.accuracy.authors_panm --check-resume`` compares the two
(weights bit for bit, and the log lines after the resume point).
"""

from __future__ import annotations

import os
import random
import sys
import time

SEEDED = "\nrandom.seed(args.seed)\n"
LOOP = "for iter in tqdm(range(num_iter)):\n"


def patch(source: str) -> str:
    """The script's source with the two insertions (see the module docstring)."""
    for name, anchor in (("the seeding", SEEDED), ("the training loop", LOOP)):
        found = source.count(anchor)
        if found != 1:
            raise SystemExit(
                f"run_algo_task.py: expected {name} ({anchor.strip()!r}) exactly once, found it {found} times"
            )
    source = source.replace(SEEDED, SEEDED + "_resume_from = _resume_load(globals())\n")
    return source.replace(LOOP, "for iter in tqdm(range(_resume_from, num_iter)):\n\t_resume_save(globals(), iter)\n")


def _path(g: dict) -> str:
    return g["save_dirlast"] + ".resume"


def _resume_load(g: dict) -> int:
    """Restore the saved training state into the script's globals; the step to start from (0 if none)."""
    import numpy as np
    import torch

    if g["args"].mode != "train" or not os.path.exists(_path(g)):
        return 0
    state = torch.load(_path(g), map_location="cpu", weights_only=False)
    g["model"].load_state_dict(state["model"])
    g["optimizer"].load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"])
    np.random.set_state(state["numpy_rng"])
    random.setstate(state["python_rng"])
    g["best_loss"] = state["best_loss"]
    global _BEFORE
    _BEFORE = state["seconds"]
    for name in ("losses", "errors", "rel_errors", "loss_pls"):
        g[name][:] = state[name]
    print(f"RESUME FROM STEP {state['step']}: {_path(g)}", flush=True)
    return state["step"]


def _resume_save(g: dict, step: int) -> None:
    """Write the state as of the start of training step ``step`` (when ``step`` is a positive multiple of EVERY)."""
    import numpy as np
    import torch

    if g["args"].mode != "train" or step == 0 or step % EVERY or step == g["_resume_from"]:
        return
    state = {
        "step": step,
        "model": g["model"].state_dict(),
        "optimizer": g["optimizer"].state_dict(),
        "torch_rng": torch.get_rng_state(),
        "numpy_rng": np.random.get_state(),
        "python_rng": random.getstate(),
        "best_loss": g["best_loss"],
        "seconds": _seconds(),
        **{name: list(g[name]) for name in ("losses", "errors", "rel_errors", "loss_pls")},
    }
    tmp = _path(g) + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, _path(g))
    print(f"RESUME STATE SAVED AT STEP {step}", flush=True)


def _seconds() -> float:
    """Training seconds so far: those of the runs before this one (from the saved state) and this run's."""
    return _BEFORE + time.time() - _START


EVERY = 0
_START = time.time()
_BEFORE = 0.0  # the seconds of the runs before this one, from the saved state

if __name__ == "__main__":
    if len(sys.argv) < 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        raise SystemExit("usage: authors_resumable.py EVERY run_algo_task.py ARGS... (EVERY a positive integer)")
    EVERY = int(sys.argv[1])
    script = sys.argv[2]
    with open(script) as f:
        code = compile(patch(f.read()), script, "exec")
    sys.argv = sys.argv[2:]
    # The script's folder in place of this file's, so the script imports its own modules, none of benchmarks/accuracy/.
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    namespace = {"__name__": "__main__", "__file__": script, "_resume_load": _resume_load, "_resume_save": _resume_save}
    exec(code, namespace)
    if namespace["args"].mode == "train":
        print(f"TRAINING SECONDS {_seconds():.0f}", flush=True)
