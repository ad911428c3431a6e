#!/usr/bin/env bash
# The one script that runs on the GPU machine: GPU tests, then the GPU benchmarks, in a single
# call. Everything it produces goes to $OUT (the device tool brings that folder back; copy
# its files into benchmarks/results/ afterwards).
#
#   COMMIT=$(git rev-parse HEAD) bash ci/gpu_run.sh          # from the repository root
#
# GPU_TESTS narrows the test step (default: every test marked gpu under tests/).
# Steps run in the order of STEPS below; SKIP_<STEP>=1 skips one (e.g. SKIP_W1=1), ONLY="a b"
# runs just those. A failing step is reported and the next one still runs; the exit status
# is that of the first failure. To add a benchmark, write a step_<name> function and append
# <name> to STEPS (issue 5 adds the W2 ones).
#
# Inputs the machine lacks travel in ignored folders named in the call's `carry`:
#   .whl/      wheels (biopython, parasail, dask, distributed and their small deps)
#   .devcarry/ make_protein_db.py, DB.fasta.gz, cudasw_queries.fasta (from ../shared and the
#              mmseqs2-examples package)
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
COMMIT=${COMMIT:-unknown}
BENCH_DIR=${BENCH_DIR:-/tmp/swdask-bench}
CARRY=${CARRY:-.devcarry}
mkdir -p "$OUT" "$BENCH_DIR"
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba-cache}
export PYTHONPATH=$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}

STEPS=(setup tests w1 profile)

step_setup() {
  if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl || return 1
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm \
    --format=csv || true
  python3 -c "import cupy, swdask; print('cupy', cupy.__version__, 'device',
cupy.cuda.runtime.getDeviceProperties(0)['name'])" || return 1
  if [ ! -s "$BENCH_DIR/sp500k.fa" ] && [ -f "$CARRY/make_protein_db.py" ]; then
    python3 "$CARRY/make_protein_db.py" "$CARRY/DB.fasta.gz" 500000 1 "$BENCH_DIR/sp500k.fa.tmp" \
      && mv "$BENCH_DIR/sp500k.fa.tmp" "$BENCH_DIR/sp500k.fa" || return 1
  fi
  ls -la "$BENCH_DIR"
}

step_tests() {
  SWDASK_MMSEQS_DB=${SWDASK_MMSEQS_DB:-$CARRY/DB.fasta.gz} timeout "${TESTS_TIMEOUT:-200}" \
    python3 -m pytest -q -m gpu -p no:cacheprovider ${GPU_TESTS:-tests/} \
      --junitxml="$OUT/gpu-tests.xml" 2>&1 | tee "$OUT/gpu-tests.log"
}

step_w1() {
  [ -s "$BENCH_DIR/sp500k.fa" ] || { echo "no sp500k.fa: run the setup step"; return 1; }
  timeout "${W1_TIMEOUT:-300}" python3 benchmarks/bench_w1_gpu.py --db "$BENCH_DIR/sp500k.fa" \
    --queries "$CARRY/cudasw_queries.fasta" --out "$OUT" --commit "$COMMIT" \
    ${W1_ARGS:-} 2>&1 | tee "$OUT/w1.log"
}

step_profile() {  # only with PROFILE=1: Nsight Compute on one W1 forward launch
  [ "${PROFILE:-0}" = 1 ] || { echo "(PROFILE=1 to run)"; return 0; }
  local ncu
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ -n "$ncu" ] || { echo "no ncu"; return 1; }
  timeout "${PROFILE_TIMEOUT:-150}" "$ncu" --clock-control none -k regex:sw_inter_forward \
    --launch-skip 1 -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis \
    python3 benchmarks/profile_w1_gpu.py --db "$BENCH_DIR/sp500k.fa" \
    --queries "$CARRY/cudasw_queries.fasta" --length "${PROFILE_LENGTH:-1000}" \
    --mode "${PROFILE_MODE:-end}" 2>&1 | tee "$OUT/ncu-w1.txt"
}

status=0
for step in "${STEPS[@]}"; do
  upper=$(echo "$step" | tr '[:lower:]' '[:upper:]')
  skip_var="SKIP_${upper}"
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $step "* ]]; then continue; fi
  if [ "${!skip_var:-0}" = 1 ]; then echo "== $step: skipped"; continue; fi
  echo "== $step ($(date +%T))"
  start=$SECONDS
  "step_$step"
  rc=$?
  echo "== $step: exit $rc after $((SECONDS - start)) s"
  if [ $rc -ne 0 ] && [ $status -eq 0 ]; then status=$rc; fi
done
exit $status
