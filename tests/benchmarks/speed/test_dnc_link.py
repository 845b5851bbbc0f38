"""benchmarks/speed/dnc_link.py at a toy size: every form runs, and the library's VJP, autodiff and the CPU kernel agree
(no timing)."""

from __future__ import annotations

import jax
import numpy as np

from benchmarks.speed import dnc_link
from panm_jax.kernels import _dnc_link_cpu, dnc


def test_every_form_is_timed_and_passes_are_relative_to_the_read_write_pass():
    rows, ops = dnc_link.measure(batch=2, slots=5, steps=3, repeats=1, with_profile=False, top=3)
    forms = [r["form"].split(" (")[0] for r in rows]
    assert forms == [
        "read pass",
        "read+write pass",
        "link update alone",
        "forward",
        "forward+VJP",
        "forward+VJP",
        "forward",  # the CPU kernel's two rows (it builds wherever the tests run: tests/kernels/test_dnc_link_cpu.py)
        "forward+VJP",
    ]
    assert rows[-1]["form"] == "forward+VJP (CPU kernel)"
    assert ops == []
    assert rows[1]["passes"] == 1.0 and all(r["ms_per_call"] > 0 for r in rows)
    assert all("GB_s" in r for r in rows[:3]) and not any("GB_s" in r for r in rows[3:])


def test_the_timed_library_and_autodiff_losses_have_the_same_value_and_gradient():
    write, read, probe = dnc_link._inputs(batch=2, slots=5, steps=4)
    lib = jax.value_and_grad(dnc_link._loss_fn(dnc.link_and_directions, 2, 5), argnums=(0, 1))(write, read, probe)
    auto = jax.value_and_grad(dnc_link._loss_fn(dnc_link._autodiff_link, 2, 5), argnums=(0, 1))(write, read, probe)
    cpu = jax.value_and_grad(dnc_link._loss_fn(_dnc_link_cpu.link_and_directions, 2, 5), argnums=(0, 1))(
        write, read, probe
    )
    for other in (auto, cpu):
        for a, b in zip(jax.tree_util.tree_leaves(lib), jax.tree_util.tree_leaves(other), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=1e-6)
