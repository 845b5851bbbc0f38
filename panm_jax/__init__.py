"""panm_jax: memory-augmented neural networks in JAX.

Layers (data flows one way): ``tasks -> models -> modules -> kernels``, and
``train`` drives models. See ``DESIGN.md`` in the project's shared folder and the
README for the tour.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
