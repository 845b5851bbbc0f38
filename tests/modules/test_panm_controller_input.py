"""PANM's Controller input: Eq. 7 reads Mode 1 and Mode 2; the authors' code feeds Mode 2 to the output only."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.models.panm import PANMConfig
from panm_jax.models.registry import build_model


def test_the_controller_reads_mode2_unless_the_option_says_otherwise():
    x = jnp.asarray(np.random.default_rng(0).normal(size=(2, 5, 4)), jnp.float32)
    mask = jnp.ones((2, 5), bool)
    small = dict(hidden=8, mlp_hidden=8, address_bits=5)
    d, ha, hc = 8, 2, 1  # D, H^a, H^c (the defaults' heads)
    paper = build_model("panm", input_size=4, output_size=3, seed=0, **small)
    authors = build_model("panm", input_size=4, output_size=3, seed=0, controller_reads_mode2=False, **small)
    # Eq. 7: GRU_c([*p^a_t, *p^c_t]); the option: GRU_c([*p^a_t]). The step concatenates exactly what
    # the GRU's input projection takes (a wider input would not multiply), and g^o reads both either way.
    assert paper.decoder.controller.in_features == (ha + hc) * d
    assert authors.decoder.controller.in_features == ha * d
    assert paper.decoder.output_net.hidden_layer.in_features == authors.decoder.output_net.hidden_layer.in_features
    logits = authors(x, mask, 3)
    assert logits.shape == (2, 3, 3) and np.isfinite(np.asarray(logits)).all()
    # Both were built from seed 0, so every parameter but the GRU's input kernel is the same. Zero the
    # paper model's rows for *p^c_t and give the option's model the rest: the two must then agree.
    kernel = paper.decoder.controller.input_proj.kernel
    kernel[...] = kernel[...].at[ha * d :].set(0.0)
    authors.decoder.controller.input_proj.kernel[...] = kernel[...][: ha * d]
    np.testing.assert_allclose(authors(x, mask, 3), paper(x, mask, 3), rtol=1e-5, atol=1e-6)


def test_the_option_is_checked():
    with pytest.raises(ValueError, match=r"controller_reads_mode2: expected true or false"):
        PANMConfig.from_options(controller_reads_mode2="no")
