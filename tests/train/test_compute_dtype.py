"""Mixed precision (``TrainConfig.compute_dtype``, ``panm_jax/train/steps.py``).

For every registered model, built small, on Copy:

* the bfloat16 forward pass computes in bfloat16: every ``lax.scan`` carries its
  floating state (controller states, memories, pointers) in bfloat16, most matrix
  products take bfloat16 operands, and the logits come back as float32, close to
  the float32 forward's;
* a train step leaves the parameters and the optimiser state in float32, and its
  loss and update agree with float32's to bfloat16's resolution;
* the setting is checked, reaches the training loop and is recorded in the run.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend import core as jex_core

from panm_jax.models import build_model, list_models
from panm_jax.tasks import get_task
from panm_jax.train.config import ConfigError, TrainConfig
from panm_jax.train.optim import make_optimizer
from panm_jax.train.steps import _forward, cast_floating, init_train_state, make_train_step
from tests.train.tiny import tiny_config

SMALL = {
    "ntm": dict(hidden=8, num_slots=7, word_size=3),
    "dnc": dict(hidden=8, num_slots=7, word_size=3, num_reads=2),
    "stack_rnn": dict(hidden=8, width=3, stack_size=9),
    "tape_rnn": dict(hidden=8, width=3, tape_size=9),
    "panm": dict(hidden=8, mlp_hidden=8, address_bits=5),
    "panm_transformer": dict(hidden=8, mlp_hidden=8, address_bits=5, decoder_heads=2),
    "transformer": dict(d_model=8, num_heads=2, ffn_hidden=8),
    "transformer_rpe": dict(d_model=8, num_heads=2, ffn_hidden=8),
    "universal_transformer": dict(d_model=8, num_heads=2),
    "universal_transformer_rpe": dict(d_model=8, num_heads=2),
    "transformer_encoder": dict(hidden=8, num_heads=2, num_layers=1),
}
TASK = get_task("copy", max_train_length=4)


def _setup(name: str):
    model = build_model(
        name, input_size=TASK.input_size, output_size=TASK.output_size, **SMALL.get(name, dict(hidden=8))
    )
    optimizer = make_optimizer(TrainConfig().optimizer, 100)
    graphdef, state = init_train_state(model, optimizer)
    batch = TASK.train_batch(np.random.default_rng(0), 3)
    return graphdef, state, batch, optimizer


def _avals(jaxpr, primitive: str) -> list:
    """The floating avals of every ``scan``'s carry, or of every ``dot_general``'s operands, in ``jaxpr`` and
    the jaxprs inside it."""
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == primitive == "scan":
            first = eqn.params["num_consts"]
            out += [v.aval for v in eqn.invars[first : first + eqn.params["num_carry"]]]
        elif eqn.primitive.name == primitive:
            out += [v.aval for v in eqn.invars]
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(sub, jex_core.ClosedJaxpr):
                    out += _avals(sub.jaxpr, primitive)
                elif isinstance(sub, jex_core.Jaxpr):
                    out += _avals(sub, primitive)
    return [a for a in out if jnp.issubdtype(a.dtype, jnp.floating)]


@pytest.mark.parametrize("name", sorted(list_models()))
def test_bfloat16_forward_computes_in_bfloat16(name):
    graphdef, state, batch, _ = _setup(name)

    def forward(params, dtype):
        return _forward(graphdef, params, batch, aligned=False, train=False, key=None, compute_dtype=dtype)

    jaxpr = jax.make_jaxpr(lambda p: forward(p, "bfloat16"))(state.params).jaxpr
    # Every recurrent state in bfloat16 (the Transformers have none), and matrix products in bfloat16
    # (kernels may widen some of theirs to float32 inside a step, e.g. the NTM's addressing).
    carries = {str(a.dtype) for a in _avals(jaxpr, "scan")}
    assert carries <= {"bfloat16"}, (name, carries)
    products = [str(a.dtype) for a in _avals(jaxpr, "dot_general")]
    assert products.count("bfloat16") > products.count("float32"), (name, products)


@pytest.mark.parametrize("name", ["panm", "panm_transformer", "dnc", "ntm", "stack_lstm", "transformer_rpe"])
def test_bfloat16_logits_are_float32_and_close_to_float32s(name):
    graphdef, state, batch, _ = _setup(name)

    def forward(params, dtype):
        return _forward(graphdef, params, batch, aligned=False, train=False, key=None, compute_dtype=dtype)

    low = jax.jit(forward, static_argnums=1)(state.params, "bfloat16")
    high = jax.jit(forward, static_argnums=1)(state.params, "float32")
    assert low.dtype == jnp.float32 and low.shape == high.shape
    err = float(jnp.max(jnp.abs(low - high)))
    scale = float(jnp.max(jnp.abs(high)))
    assert err <= 0.05 * max(scale, 1.0), (name, err, scale)


@pytest.mark.parametrize("name", ["panm", "dnc"])
def test_bfloat16_train_step_keeps_float32_parameters(name):
    graphdef, state, batch, optimizer = _setup(name)
    steps = {
        dt: jax.jit(make_train_step(graphdef, optimizer, TASK, compute_dtype=dt)) for dt in ("float32", "bfloat16")
    }
    (new32, m32), (new16, m16) = (steps[dt](state, batch) for dt in ("float32", "bfloat16"))
    for leaf in jax.tree_util.tree_leaves((new16.params, new16.opt_state)):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert leaf.dtype == jnp.float32
    assert np.isfinite(float(m16["loss"])) and np.isfinite(float(m16["grad_norm"]))
    assert abs(float(m16["loss"]) - float(m32["loss"])) <= 0.02 * abs(float(m32["loss"]))
    delta = [
        np.ravel(np.asarray(a, np.float64) - np.asarray(b, np.float64))
        for new in (new32, new16)
        for a, b in zip(jax.tree_util.tree_leaves(new.params), jax.tree_util.tree_leaves(state.params))
    ]
    half = len(delta) // 2
    d32, d16 = np.concatenate(delta[:half]), np.concatenate(delta[half:])
    cosine = d32 @ d16 / (np.linalg.norm(d32) * np.linalg.norm(d16))
    assert cosine > 0.9, (name, cosine)


def test_cast_floating_leaves_integers_alone():
    tree = {"w": jnp.ones((2,), jnp.float32), "i": jnp.arange(3), "b": jnp.array([True])}
    out = cast_floating(tree, jnp.bfloat16)
    assert out["w"].dtype == jnp.bfloat16 and out["i"].dtype == tree["i"].dtype and out["b"].dtype == jnp.bool_


@pytest.mark.parametrize("bad", ["float16", "float64", "bf16", ""])
def test_config_refuses_other_dtypes(bad):
    with pytest.raises(ConfigError, match=r"^compute_dtype: expected one of"):
        TrainConfig(compute_dtype=bad)


def test_make_train_step_refuses_other_dtypes():
    graphdef, _, _, optimizer = _setup("lstm")
    with pytest.raises(ValueError, match=r"^compute_dtype: expected one of float32, bfloat16, got 'float16'"):
        make_train_step(graphdef, optimizer, TASK, compute_dtype="float16")


def test_bfloat16_run_trains_and_records_its_setting(tmp_path):
    from panm_jax.train.loop import train_and_evaluate

    config = tiny_config(compute_dtype="bfloat16", num_steps=4, eval_every=4, checkpoint_every=4)
    train_and_evaluate(config, tmp_path, progress=False)
    stored = TrainConfig.from_dict(json.loads((tmp_path / "config.json").read_text()))
    assert stored.compute_dtype == "bfloat16"
    assert (tmp_path / "results.json").exists()


def test_compute_dtype_is_a_flag_of_panm_jax_train(capsys):
    from panm_jax.cli import build_parser
    from panm_jax.cli.train import _config_from_args

    args = build_parser().parse_args(["train", "--compute-dtype", "bfloat16"])
    assert _config_from_args(args).compute_dtype == "bfloat16"
    assert _config_from_args(build_parser().parse_args(["train"])).compute_dtype == "float32"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--compute-dtype", "float16"])
    assert "invalid choice: 'float16'" in capsys.readouterr().err
