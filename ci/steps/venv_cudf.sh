#!/bin/bash
# Issue 12: a fresh virtual environment installs swdask with its [cudf] extra from carried
# wheels (the device reaches no package registry) and runs the cuDF tests from it.
#
# Needs, on the same warm machine: the wheels staged in /tmp/stage by
#   python3 ../shared/device/rapids_stage.py pack --extra ci/cudf-extra-wheels.txt
# (its part calls and install.sh), and .whl/ (ci/prepare_carry.sh) carried. Run by
# ci/gpu_run.sh's venvcudf step, with IMAGE_PYTHONPATH the image's own PYTHONPATH (its CUDA
# stack: CuPy, cuda-python, the NVIDIA libraries), which a user's environment would see too.
#
# What it does, each result in venv-cudf.log:
#  1. `python3 -m venv --system-site-packages`, the image's site-packages added after the
#     venv's own (site.addsitedir from a .pth file: the image's Python is itself a venv);
#  2. pip's resolver asked, offline, to install ".[cudf]" from the staged and carried wheels
#     (--dry-run): says which requirements the wheel set cannot satisfy;
#  3. the staged set (cuDF and the pins it declares) and the carried wheels installed as a
#     lock file is (--no-deps), then this checkout in editable mode with the [cudf] extra;
#  4. `pip check`, `swdask info`, and the cuDF tests run by the venv's interpreter.
set -u -o pipefail
V=${VENV:-/tmp/venv-cudf}
REPO=$(pwd)
[ -d /tmp/stage ] || { echo "no /tmp/stage: stage the cuDF wheels first"; exit 1; }
export PYTHONPATH=${IMAGE_PYTHONPATH:-}
rm -rf "$V"
echo "== image: $(command -v python3), PYTHONPATH=${PYTHONPATH:-}"
python3 - <<'PY'
import importlib.metadata as md
for name in ("numba", "numba-cuda", "llvmlite", "cupy-cuda13x", "cuda-python", "cuda-bindings",
             "cuda-core", "cuda-pathfinder", "nvidia-nvjitlink", "pyarrow", "numpy"):
    try:
        dist = md.distribution(name)
        print(f"  {name} {dist.version} at {dist.locate_file('')}")
    except md.PackageNotFoundError:
        print(f"  {name}: not installed")
PY
python3 -m venv --system-site-packages "$V" || exit 1
PY="$V/bin/python"
# The image's packages (its interpreter's site-packages, and its PYTHONPATH) are seen by the
# venv after its own, as --system-site-packages places the system's: site.addsitedir from a
# .pth file, which also runs the .pth files there (numba-cuda's redirection of numba.cuda),
# so that what the venv installs (cuDF's numba pins) comes first.
python3 -c "import site, os
paths = [p for p in os.environ.get('PYTHONPATH', '').split(':') if p] + site.getsitepackages()
print('import site; ' + '; '.join(f'site.addsitedir({p!r})' for p in dict.fromkeys(paths)))" \
  > "$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/image-packages.pth"
unset PYTHONPATH
echo "== resolver, offline, on .[cudf] (dry run)"
"$PY" -m pip install --dry-run --no-index --find-links /tmp/stage --find-links .whl \
  -e ".[cudf]" 2>&1 | tail -15
echo "== install: staged + carried wheels (--no-deps), then -e .[cudf]"
wheels=(/tmp/stage/*.whl)
for w in .whl/*.whl; do  # the carried ones the staged set does not hold already
  [ -e "/tmp/stage/$(basename "$w")" ] || wheels+=("$w")
done
"$PY" -m pip install -q --no-index --no-deps --no-cache-dir "${wheels[@]}" || exit 1
"$PY" -m pip install -q --no-index --no-deps --no-build-isolation -e ".[cudf]" || exit 1
echo "== pip check"
"$PY" -m pip check 2>&1 | head -20
echo "== import"
"$PY" -c "import cudf, dask_cudf, dask_cuda, numba, swdask; print('cudf', cudf.__version__,
'numba', numba.__version__, 'swdask from', swdask.__file__)" || exit 1
"$PY" -m swdask info
echo "== cuDF tests (the venv's interpreter)"
cd "$REPO" && SWDASK_MMSEQS_DB=${SWDASK_MMSEQS_DB:-.devcarry/DB.fasta.gz} \
  timeout "${VENV_TESTS_TIMEOUT:-240}" "$PY" -m pytest -q -p no:cacheprovider \
  ${VENV_TESTS:-tests/test_cudf.py tests/test_dask_cudf.py}
