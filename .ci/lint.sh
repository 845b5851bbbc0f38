#!/usr/bin/env bash
# Lint and type checks, with the tools in .venv (installed there if missing; ruff and
# mypy are configured in pyproject.toml): ruff's lint and format checks on the whole
# repository, and mypy on panm_jax.kernels and panm_jax.tasks.
# Every check runs; the script fails if any of them did.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=.venv/bin
test -x "$bin/python" || { echo "lint.sh: no $bin/python; run 'make test' (or python3 -m venv .venv) first" >&2; exit 1; }
"$bin/python" -m ruff --version > /dev/null 2>&1 || "$bin/python" -m pip install --quiet "ruff>=0.5"
"$bin/python" -m mypy --version > /dev/null 2>&1 || "$bin/python" -m pip install --quiet "mypy>=1.11"
status=0
run() {
    echo "+ $*"
    "$@" || status=1
}
run "$bin/python" -m ruff check .
run "$bin/python" -m ruff format --check .
run "$bin/python" -m mypy panm_jax/kernels panm_jax/tasks
exit "$status"
