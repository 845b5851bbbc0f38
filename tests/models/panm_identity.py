"""The fingerprints behind ``test_panm_identity``: that every registered model and every recorded PANM
variant computes exactly what it computed when ``panm_identity.json`` was written, the same parameters at
seed 0 and the same logits on a fixed batch, bit for bit.

What is compared, per entry of the fixture (a model name and its options): the SHA-256 (first 16 hex
digits) of the list of every leaf of ``nnx.state(model)``, each path with the digest of its bytes, and of
the logits at evaluation (``train=False``) and in training (``train=True``), each with a fixed key, on a fixed batch of
``BATCH`` examples, ``T_IN`` input steps (one example padded) and ``T_OUT`` outputs. The PANM entries are
every ``model_options`` recorded under ``benchmarks/results`` (the reproductions' ``settings`` and the
ablations' variants), and each option of ``PANMConfig`` set alone to a value other than its default
(``single_options``): sizes (``SMALL``) first, a variant's own options over them, and the widths
(``WIDTHS``) last, so that every entry is small.

Bit identity holds only for one build of XLA on one backend with the same flags, so the test is skipped
(saying why) when the JAX version, the backend or ``XLA_FLAGS`` differ from those the fixture records.
XLA:CPU compiles for the host's vector instructions, so the logits' last bits differ between a CPU with
AVX2 alone, one with AVX-512 and one with AVX-512's half-precision instructions too (``cpu_kind``): the fixture holds the fingerprints of the CPU it was
written on (``cpu``) and, under ``other_cpus``, those of other kinds, each recorded from the same code;
on a CPU of no recorded kind the test is skipped, saying so.

Regenerate (only when a change of numbers is intended and said so), then add every other CPU kind
from the same commit on a machine of that kind::

    PYTHONPATH=. python -m tests.models.panm_identity
    PYTHONPATH=. python -m tests.models.panm_identity --add-cpu

Where the numbers of some models change on purpose, ``--refresh rnn,stack_rnn`` recomputes only their
entries (and adds entries new to ``entries()``) on this CPU kind and drops the other kinds' fingerprints
of them; an entry with no fingerprint for a CPU kind is skipped there, saying so, until
``--refresh`` or ``--add-cpu`` runs on a machine of that kind.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from panm_jax.models import build_model, list_models, model_options

FIXTURE = Path(__file__).with_name("panm_identity.json")
RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
BATCH, T_IN, D_IN, K, T_OUT = 3, 6, 5, 3, 4
# Small sizes per model (its options at their defaults otherwise).
SMALL: dict[str, dict] = {
    "panm": dict(hidden=8, mlp_hidden=8, address_bits=5),
    "panm_transformer": dict(
        hidden=8, mlp_hidden=8, address_bits=5, encoder_layers=1, encoder_heads=2, decoder_layers=1, decoder_heads=2
    ),  # fmt: skip
    "lstm": dict(hidden=8),
    "lstm_attention": dict(hidden=8, max_input_length=16),
    "pointer_network": dict(hidden=8),
    "ntm": dict(hidden=8, num_slots=8, word_size=4, max_steps=16),
    "dnc": dict(hidden=8, num_slots=8, word_size=4, num_reads=2, max_steps=16),
    "stack_lstm": dict(hidden=8, width=4, max_steps=16),
    "queue_lstm": dict(hidden=8, width=4, max_steps=16),
    "deque_lstm": dict(hidden=8, width=4, max_steps=16),
    "stack_rnn": dict(hidden=8, width=4, stack_size=8, max_steps=16),
    "tape_rnn": dict(hidden=8, width=4, tape_size=8, value_layers=(8, 8), max_steps=16),
    "transformer": dict(d_model=8, num_heads=2, ffn_hidden=8),
    "transformer_rpe": dict(d_model=8, num_heads=2, ffn_hidden=8),
    "universal_transformer": dict(d_model=8, num_heads=2, ffn_hidden=8, steps=2),
    "universal_transformer_rpe": dict(d_model=8, num_heads=2, ffn_hidden=8, steps=2),
    "srnn": dict(hidden=8, stack_depth=7, stack_width=3),
    "panm_srnn": dict(hidden=8, mlp_hidden=8, address_bits=5, srnn_hidden=6, stack_depth=7, stack_width=3),
    "rnn": dict(hidden=8),
    "single_lstm": dict(hidden=8),
    "transformer_encoder": dict(hidden=8, num_layers=1, num_heads=2),
}
# A value other than the default for each PANM option (sizes aside); a string option takes each of its
# other values.
OTHER_VALUES: dict[str, list] = {
    "pointer_heads": [3],
    "mode2_heads": [0, 2],
    "encoder": ["bigru", "transformer", "transformer_rpe"],
    "score": ["scaled_dot"],
    "inverse_temperature": [2.0],
    "learn_temperature": [False],
    "random_base_at_eval": [True],
    "distractors": [3],
    "distractor_sampling": ["neighbours"],
    "snap_pointers": ["eval", "always"],
    "remat": [True],
    "controller_start": ["mean", "encoder_final"],
    "eq3_addresses": ["authors_view"],
    "controller_attention": [True],
    "mode2_dropout": [0.5],
    "attention_projections": [True],
    "controller_reads_mode2": [False],
    "init": ["pytorch"],
}
# The widths of every PANM entry, over a recorded variant's own (hidden = 128 is slow to compile).
WIDTHS = dict(hidden=8, mlp_hidden=8)
# Options a Transformer encoder needs at the small width (hidden = 8).
TRANSFORMER_SMALL = dict(encoder_layers=1, encoder_heads=2)


def cpu_kind() -> str:
    """The vector instructions XLA:CPU compiles for here: ``"avx512_fp16"`` (AVX-512 with half-precision
    arithmetic, Intel's Sapphire Rapids and later: 39 of the 68 entries' logits differ in their last bits from
    an earlier AVX-512 CPU's, the parameters not), ``"avx512f"``, ``"avx2"``, or the machine's name."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    flags = {f for line in text.splitlines() if line.startswith("flags") for f in line.split(":", 1)[1].split()}
    for kind in ("avx512_fp16", "avx512f", "avx2"):
        if kind in flags:
            return kind
    import platform

    return platform.machine()


def entry_id(entry: dict) -> str:
    """``model:options`` as JSON, the name of an entry (and of its test case)."""
    return f"{entry['model']}:{json.dumps(entry['options'], sort_keys=True)}"


def environment() -> dict:
    return {"jax": jax.__version__, "backend": jax.default_backend(), "xla_flags": os.environ.get("XLA_FLAGS", "")}


def recorded_panm_variants() -> list[dict]:
    """Every distinct set of PANM options recorded under ``benchmarks/results`` (sorted, as JSON)."""
    from panm_jax.train.config import parse_overrides

    seen = set()
    for path in sorted(RESULTS.glob("*/reproduce_*.json")):
        options = (json.loads(path.read_text()).get("settings") or {}).get("model_options") or {}
        if "panm" in options:
            seen.add(json.dumps(options["panm"], sort_keys=True))
    for path in sorted(RESULTS.glob("*/ablation_*.json")):
        for row in json.loads(path.read_text())["rows"]:
            variant = row["variant"]
            if variant == "default" or " " in variant:  # "default", "... - published", "published (...)"
                continue
            items = [p for p in variant.split(",") if p.startswith("panm.")]
            seen.add(json.dumps({k.removeprefix("panm."): v for k, v in parse_overrides(items)}, sort_keys=True))
    return [json.loads(s) for s in sorted(seen) if s != "{}"]


def single_options() -> list[dict]:
    """Each PANM option alone at a value other than its default."""
    defaults = {name: p.default for name, p in model_options("panm").items()}
    out = []
    for name, values in OTHER_VALUES.items():
        for value in values:
            assert value != defaults[name], name
            out.append({name: value})
    return out


def entries() -> list[dict]:
    """The fixture's entries: ``{"model": name, "options": {...}}`` (sizes included)."""
    out = [{"model": name, "options": dict(SMALL[name])} for name in list_models()]
    out.append({"model": "panm_transformer", "options": {**SMALL["panm_transformer"], "encoder": "transformer_rpe"}})
    out.append({"model": "panm_transformer", "options": {**SMALL["panm_transformer"], "teacher_forcing": True}})
    out.append({"model": "lstm", "options": {**SMALL["lstm"], "layers": 2}})
    out += [
        {"model": name, "options": {**SMALL[name], "activation": "tanh"}} for name in ("rnn", "stack_rnn", "tape_rnn")
    ]
    out.append({"model": "stack_rnn", "options": {**SMALL["stack_rnn"], "push": "linear"}})
    out.append({"model": "tape_rnn", "options": {**SMALL["tape_rnn"], "write": "linear"}})
    for variant in recorded_panm_variants() + single_options():
        small = dict(SMALL["panm"])
        if variant.get("encoder", "lstm").startswith("transformer"):
            small.update(TRANSFORMER_SMALL)
        entry = {"model": "panm", "options": {**small, **variant, **WIDTHS}}
        if entry not in out:
            out.append(entry)
    return out


def _digest(array) -> str:
    array = np.asarray(jax.random.key_data(array) if jnp.issubdtype(array.dtype, jax.dtypes.prng_key) else array)
    header = f"{array.dtype}{array.shape}".encode()
    return hashlib.sha256(header + np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def _batch():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(BATCH, T_IN, D_IN)), jnp.float32)
    mask = jnp.asarray(np.arange(T_IN)[None] < np.array([T_IN, 4, T_IN])[:, None])
    targets = jnp.asarray(rng.integers(0, K, size=(BATCH, T_OUT)), jnp.int32)
    return x, mask, targets


def fingerprint(entry: dict) -> dict:
    """The digests of one entry: every state leaf by path, and the evaluation and training logits."""
    options = {k: tuple(v) if isinstance(v, list) else v for k, v in entry["options"].items()}
    model = build_model(entry["model"], input_size=D_IN, output_size=K, seed=0, **options)
    leaves = jax.tree_util.tree_leaves_with_path(nnx.state(model))
    state = {jax.tree_util.keystr(path): _digest(leaf) for path, leaf in leaves}  # paths too: checkpoints
    x, mask, targets = _batch()
    extra = {"targets": targets} if options.get("teacher_forcing") else {}
    logits = {
        "eval": _digest(model(x, mask, T_OUT, key=jax.random.key(1), **extra)),
        "train": _digest(model(x, mask, T_OUT, train=True, key=jax.random.key(2), **extra)),
    }
    listing = json.dumps(state, sort_keys=True).encode()
    return {"state": hashlib.sha256(listing).hexdigest()[:16], "leaves": len(state), **logits}


def main() -> None:
    args = sys.argv[1:]
    if "--add-cpu" in args:  # this CPU kind's fingerprints of the fixture's entries, beside the others
        payload = json.loads(FIXTURE.read_text())
        if payload["environment"] != environment() or cpu_kind() == payload["cpu"]:
            raise SystemExit(f"--add-cpu: expected the fixture's environment on another CPU kind, got {cpu_kind()}")
        payload.setdefault("other_cpus", {})[cpu_kind()] = {entry_id(e): fingerprint(e) for e in payload["entries"]}
    elif "--refresh" in args:  # the named models' entries, recomputed on this CPU kind alone
        payload = json.loads(FIXTURE.read_text())
        if payload["environment"] != environment():
            raise SystemExit(f"--refresh: expected the fixture's environment {payload['environment']}")
        models = set(args[args.index("--refresh") + 1].split(","))
        known = {entry_id(e) for e in payload["entries"]}
        payload["entries"] += [{**e, "fingerprint": None} for e in entries() if entry_id(e) not in known]
        kinds = {payload["cpu"]: None, **payload.get("other_cpus", {})}
        for entry in payload["entries"]:
            name = entry_id(entry)
            if entry["model"] not in models and name in known:
                continue
            here = fingerprint(entry)
            recorded = entry["fingerprint"] if cpu_kind() == payload["cpu"] else kinds.get(cpu_kind(), {}).get(name)
            if here == recorded:  # unchanged here: the other kinds' fingerprints stand
                continue
            for kind, table in kinds.items():
                value = here if kind == cpu_kind() else None
                if table is None:
                    entry["fingerprint"] = value
                elif value is None:
                    table.pop(name, None)
                else:
                    table[name] = value
    else:
        all_entries = [{**e, "fingerprint": fingerprint(e)} for e in entries()]
        sizes = {"batch": BATCH, "input_steps": T_IN, "input_size": D_IN, "classes": K, "outputs": T_OUT}
        payload = {"environment": environment(), "cpu": cpu_kind(), "sizes": sizes, "entries": all_entries}
    FIXTURE.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    print(
        f"{FIXTURE}: {len(payload['entries'])} entries, CPU kinds {[payload['cpu'], *payload.get('other_cpus', {})]}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    import tests.conftest  # noqa: F401  (the test session's XLA flags, so that the digests are the tests')

    main()
