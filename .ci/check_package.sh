#!/usr/bin/env bash
# Build the wheel and the sdist, install the wheel (with its dependencies) into a fresh
# virtual environment and use it from outside the source tree: a missing package-data
# file, module or entry point fails here, whatever the editable install of `make test` sees.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.venv/bin/python -m pip install --quiet build
.venv/bin/python -m build --outdir "$work/dist" . > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
ls "$work/dist"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip
"$work/venv/bin/python" -m pip install --quiet "$work"/dist/*.whl
cd "$work"  # not the source tree: only the installed wheel can be imported
PANM_JAX_CACHE_DIR="$work/cache" "$work/venv/bin/python" - <<'PY'
import pathlib

import panm_jax
from panm_jax.tasks import get_task, list_tasks

where = pathlib.Path(panm_jax.__file__).resolve()
assert "site-packages" in where.parts, f"imported {where}, not the installed wheel"
machines = sorted(p.name for p in (where.parent / "tasks" / "machines").glob("*.toml"))
assert machines, "the wheel lacks panm_jax/tasks/machines/*.toml"
for name in list_tasks():
    if name != "mathematics":  # needs the [math] extra, not installed here
        get_task(name)
from panm_jax.kernels import _dnc_link_cpu

assert (where.parent / "kernels" / "csrc" / "dnc_link.cc").is_file(), "the wheel lacks the DNC link's C++ source"
assert _dnc_link_cpu.available(), f"the installed wheel cannot build its DNC link kernel: {_dnc_link_cpu._register()}"
print(f"panm_jax {panm_jax.__version__} from {where.parent}: {len(list_tasks())} tasks, machines {machines}")
PY
"$work/venv/bin/panm-jax" --help > /dev/null
"$work/venv/bin/panm-jax" tasks > /dev/null
echo "wheel and sdist built; the wheel installs, imports and runs panm-jax"
