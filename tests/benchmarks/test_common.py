"""The harness's page-fault accounting: faults counted per timed call, and the cost of one fault."""

from __future__ import annotations

import math
import sys

import jax.numpy as jnp
import pytest

from benchmarks import common

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts the OS's minor faults (Linux)")


@linux
def test_time_compiled_counts_the_faults_of_a_fresh_output_per_call():
    x = jnp.ones((32 * 1024 * 1024,), jnp.float32)  # 128 MiB: over any mmap threshold of glibc's
    t = common.time_compiled(lambda x: x * 2.0, x, warmup=1, repeats=3)
    # At least one fault per 2 MiB (huge pages), 32,768 with 4 KiB pages; an output kept mapped would need none.
    assert t["page_faults"] >= 64
    assert t["median_s"] > 0


@linux
def test_page_fault_cost_is_a_positive_time_per_fault():
    cost = common.page_fault_cost(repeats=3, mib=128)
    # Mapping and zeroing a 4 KiB page takes about a microsecond; a 2 MiB one a few dozen.
    assert math.isfinite(cost) and 0 < cost < 1e-3


def test_fault_counter_is_none_or_a_count():
    n = common.minor_faults()
    assert n is None or (isinstance(n, int) and n >= 0)


def test_time_compiled_keeps_the_first_warm_up_output_only_when_asked():
    counter = jnp.arange(3.0)
    t = common.time_compiled(lambda x: x + 1.0, counter, warmup=2, repeats=1, keep_first=True)
    assert t["first"].tolist() == [1.0, 2.0, 3.0]
    assert "first" not in common.time_compiled(lambda x: x + 1.0, counter, warmup=1, repeats=1)
