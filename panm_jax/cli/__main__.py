"""``python -m panm_jax.cli``: the ``panm-jax`` command."""

import sys

from panm_jax.cli import main

sys.exit(main())
