"""Float64 NumPy transcriptions of the papers' equations (see docs/references.md).

Literal loops over slots, heads and time, one comment per equation line. Nothing
here imports panm_jax: these files are written from the papers, not from our JAX
code, so that a test comparing the two can fail.
"""
