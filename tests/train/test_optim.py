"""The paper protocol's optimiser is PyTorch's RMSprop, step for step (float64 transcription)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from panm_jax.errors import UserError
from panm_jax.train.config import ConfigError, OptimizerConfig
from panm_jax.train.optim import make_optimizer, paper_optimizer
from tests.conftest import x64


def torch_rmsprop(grads, lr=1e-4, alpha=0.95, momentum=0.9, eps=1e-8, clip=10.0):
    """PyTorch's RMSprop (centered=False) after clamping every gradient value, written from its formula:
    v = alpha v + (1 - alpha) g^2;  b = momentum b + g / (sqrt(v) + eps);  theta -= lr b."""
    theta = np.zeros_like(grads[0])
    v, b = np.zeros_like(theta), np.zeros_like(theta)
    out = []
    for g in grads:
        g = np.clip(g, -clip, clip)
        v = alpha * v + (1 - alpha) * g * g
        b = momentum * b + g / (np.sqrt(v) + eps)
        theta = theta - lr * b
        out.append(theta.copy())
    return out


def _run(opt, grads):
    theta = jnp.zeros(grads[0].shape, jnp.float64)
    state = opt.init(theta)
    out = []
    for g in grads:
        updates, state = opt.update(jnp.asarray(g), state, theta)
        theta = optax.apply_updates(theta, updates)
        out.append(np.asarray(theta))
    return out


def test_the_paper_optimiser_is_pytorch_rmsprop_over_300_steps():
    rng = np.random.default_rng(0)
    # Gradient scales from 1e-7 (where eps inside or outside the root differs most) to 30 (clipped at 10).
    scales = 10.0 ** rng.uniform(-7, 1.5, size=(1, 64))
    grads = [scales * rng.normal(size=(1, 64)) for _ in range(300)]
    with x64():
        ours = _run(paper_optimizer(), grads)
        optax_default = _run(make_optimizer(OptimizerConfig(eps_in_sqrt=True), 1), grads)
    want = torch_rmsprop(grads)
    for t in (0, 1, 9, 99, 299):
        np.testing.assert_allclose(ours[t], want[t], rtol=1e-12, atol=1e-18, err_msg=f"step {t + 1}")
    # optax's default form (eps inside the root) is far from it for the small gradients: what the option changes.
    small = scales[0] < 1e-5
    ratio = np.abs(optax_default[-1][0, small]) / np.abs(want[-1][0, small])
    assert np.median(ratio) < 0.5


def test_eps_must_be_positive():
    with pytest.raises(ConfigError, match=r"optimizer\.eps"):
        OptimizerConfig(eps=0.0)


@pytest.mark.parametrize(
    "config, num_steps, message",
    [
        (OptimizerConfig(warmup_steps=100), 50, r"optimizer.warmup_steps: expected at most num_steps \(50\), got 100"),
        (OptimizerConfig(), 0, r"num_steps: expected a positive integer, got 0"),
        (OptimizerConfig(), 2.5, r"num_steps: expected .*integer, got 2.5"),
        ({"name": "adam"}, 10, r"config: expected an OptimizerConfig, got dict"),
    ],
)
def test_make_optimizer_refuses_what_the_config_path_refuses(config, num_steps, message):
    with pytest.raises(UserError, match=message):
        make_optimizer(config, num_steps)
