#!/usr/bin/env bash
# The one script that runs on the GPU machine: GPU tests, then the GPU benchmarks (W1, W2).
# Everything it produces goes to $OUT (the device tool brings that folder back; copy its files
# into benchmarks/results/<workload>/ afterwards: the folders are listed in
# benchmarks/results/README.md).
#
#   COMMIT=$(git rev-parse HEAD) bash ci/gpu_run.sh          # from the repository root
#
# Steps run in the order of STEPS below; SKIP_<STEP>=1 skips one (e.g. SKIP_W1=1), ONLY="a b"
# runs just those. A failing step is reported and the next one still runs; the exit status
# is that of the first failure. To add a benchmark, write a step_<name> function and append
# <name> to STEPS.
#   setup   install the carried wheels into /tmp/site, compile the Python packages the jobs
#           import to .pyc (the image has none for some and forbids writing them), build
#           sp500k.fa (W1's database)
#   startup benchmarks/bench_startup_gpu.py: W1's whole job on a fresh machine's empty caches
#           and warm, with the kernels shipped compiled and with NVRTC (STARTUP_KERNELS), and
#           on newly started Dask workers, plain and with swdask.preload (STARTUP_WORKERS;
#           empty: none) -> startup-gpu-*.json, startup.log
#   tests   every test marked gpu under tests/ (GPU_TESTS narrows it), on the kernels shipped
#           compiled -> gpu-tests.{log,xml}; with DASK_SWDASK__GPU__PREBUILT=false, first
#           every kernel variant compiled by NVRTC, 16 at once (bench_w2_gpu.py precompile
#           tests -> precompile.log)
#   w1      benchmarks/bench_w1_gpu.py -> W1-<device>-<date>.json, w1.log
#   search  benchmarks/bench_search_job.py --gpu: the whole `swdask search` job on W1 and on
#           1,000 queries (after w1, whose JSON gives kernel_tcups) -> search-<device>-<date>.json
#   w1long  benchmarks/bench_w1_long_rows_gpu.py: W1 queries with/without the long-row
#           routing (kernel only, a few queries) -> W1-long-rows-*.json, w1long.log
#   w2      ci/steps/w2.sh (W2, benchmarks/bench_w2_gpu.py: every pair set, one JSON each)
#           -> $OUT/w2/, w2-*.log
#   profile only with PROFILE=1: Nsight Compute on one W1 forward launch
#           (benchmarks/bench_w1_ncu_gpu.py) -> ncu-w1.txt
#   abkernels only when named in ONLY: the W1 kernel-only timings (bench_w1_gpu.py, no CPU
#           check) and the 1,000-query scan's GPU time (bench_search_stacks_gpu.py), for each
#           swdask tree in AB_TREES (folders holding swdask/, e.g. `git archive <commit>
#           swdask | tar -x -C .devcarry/ab/<name>`), alternating, AB_ROUNDS rounds ->
#           ab-kernels.log. The scripts are this checkout's and use swdask.lowlevel, whose
#           instruments (forward_launches, stack_limits, timed_stages) came with issue 43:
#           trees of older commits lack them. The whole search job, tree against tree:
#           benchmarks/bench_search_job_ab_gpu.sh (needs only the command line).
#   daskcudf  ci/steps/daskcudf.sh (needs cuDF staged; benchmarks/bench_w1_dask_cudf_gpu.py):
#           W1 through ddf.sw.align on dask_cudf against kernel-only, on 1, 2, 4... GPUs, and
#           a run with device memory capped -> W1-dask-cudf-*.json, daskcudf.log
#   scaling  benchmarks/bench_scaling_gpu.py (needs cuDF staged; issue 14): on 1, 2, 4...
#           GPUs (SCALING_GPUS, default every power of two up to the machine's), one
#           LocalCUDACluster each, W1 through ddf.sw.align and the 1,000-query ddf.sw.search
#           on sp500k and on sp500k x4, hits compared with one GPU's -> scaling-*.json,
#           performance-*.html (the largest N's searches), scaling.log
#   recipe  (needs cuDF staged) the README's GPU recipe as a script on the 1,000 queries
#           (benchmarks/bench_search_recipe_gpu.py), with Dask's defaults and each of
#           RECIPE_VARIANTS -> recipe.log, recipe-<n>.json (n: 0 for the defaults, then
#           each variant in order)
#   notebook  examples/etl.ipynb executed with cuDF (ci/run_notebook.py) -> etl.ipynb
#   protein  (issue 48) benchmarks/bench_all_vs_all.py --backend gpu: the first 2,000 records
#           of DB.fasta against themselves, `--all-vs-all` beside the plain search, same hits
#           (all-vs-all-gpu-*.json, protein.log); then `--statistics composition` on the GPU
#           against the CPU's on 50 queries of QUERY.fasta (the same blast6 file, byte for
#           byte). Needs $CARRY/DB.fasta.gz and $CARRY/QUERY.fasta.gz
#   pssm    (issue 48) benchmarks/bench_pssm.py --backend gpu: W1's 20 queries as PSI-BLAST
#           PSSMs against sp500k beside the same queries with BLOSUM62 (the kernel, its results
#           against the CPU's on sampled rows, the whole `swdask search --pssm` command)
#           -> pssm-W1-*.json, pssm.log (needs $CARRY/pssm: prepare_carry.sh makes it)
#   w5b     benchmarks/bench_w5b_top_gpu.py (issue 46, the GPU Gems chapter's case): a 1 Mbp
#           query planted from HS11286 against the four kleborate-examples assemblies and
#           their reverse complements (44.6 Mbp), the whole `swdask align-long --top 200`
#           command -> long-w5b-*.json, w5b.log (needs $CARRY/kleborate: prepare_carry.sh
#           copies the package's four .fna.xz there)
#   reads   benchmarks/bench_reads_job.py (issue 47): gasic-examples' 100,000 FASTQ reads
#           against its four genomes, `swdask search --top 1 -o hits.bam` with one strand and
#           both, the whole command and its scan -> reads-job-gpu-*.json, reads.log (needs
#           $CARRY/gasic: prepare_carry.sh copies the package's files there; BAM needs the
#           carried pysam wheel)
#   venvcudf  ci/steps/venv_cudf.sh (needs cuDF staged with ci/cudf-extra-wheels.txt): a
#           fresh virtual environment installs .[cudf] from the staged and carried wheels
#           and runs the cuDF tests -> venv-cudf.log
#
# swdask's settings are Dask configuration: pass them in the environment the Dask way, e.g.
# DASK_SWDASK__GPU__BUCKETS="4:3000,8" (the SWDASK_GPU_* names of earlier releases still
# work); SWDASK_COMMIT, SWDASK_MMSEQS_DB and SWDASK_BACKEND are the scripts' own variables.
#
# cuDF is not in the image: stage it first (python3 ../shared/device/rapids_stage.py pack,
# then its part calls and `bash .stage/bin/install.sh`, on the same warm machine), and
# begin the call with `source /tmp/rapids/env.sh;`.
#
# Inputs the machine lacks travel in ignored folders named in the call's `carry`; rebuild
# them here with `bash ci/prepare_carry.sh` (~37 MiB in all; a call carries at most 64 MiB):
#   .whl/      wheels (biopython, parasail, dask, distributed and their small deps)
#   .devcarry/ make_protein_db.py, DB.fasta.gz, cudasw_queries.fasta (from ../shared and the
#              mmseqs2-examples package); w2/make_dna_pairs.py; w2/ref/ (W2's CPU references)
#
# Device-call recipe (run tool, kind nvidia-h200, carry [".whl", ".devcarry"]); the command
# line (run in the repository root there; .git may not travel, so pass the commit):
#   COMMIT=<sha> SWDASK_COMMIT=<sha> OUT=$OUT bash ci/gpu_run.sh
# A command may run 10 minutes at most (run with timeout_s=600). Measured on an H200, cold
# machine: setup 15 s (sp500k built on 16 cores), tests 75 s (23 s with CuPy's kernel cache
# warm; measured when precompile covered only the pair kernels the tests force, not every
# variant as now), w1long 18 s; from earlier runs (not re-timed as one call): w1 ~2 min (kernels
# ~35 s, end to end ~40 s, the CPU check 17 s, read/encode/compile ~12 s), w2 ~2-3 min
# (109 s warm with its tests, which this script skips). About 6-7 minutes in
# all; each step has its own timeout (TESTS_TIMEOUT, W1_TIMEOUT, W1LONG_TIMEOUT, W2_TIMEOUT).
# If a single call runs out of time, split it over two calls on the same warm machine
# (/tmp, hence the wheels in /tmp/site, sp500k.fa and the W2 data, persists while it is held;
# a held machine goes back after ~30 s idle, so send the second call at once):
#   1) COMMIT=<sha> SWDASK_COMMIT=<sha> OUT=$OUT ONLY="setup tests w1" bash ci/gpu_run.sh
#   2) COMMIT=<sha> SWDASK_COMMIT=<sha> OUT=$OUT ONLY="setup w1long w2" bash ci/gpu_run.sh
# (setup is cheap the second time: the wheels reinstall in seconds and sp500k.fa is kept).
# Issue 4's figures came from kind nvidia-h200-x2 (the daskcudf step runs 1 and 2 GPUs), cuDF
# staged first, then two calls on the warm machine (measured there: daskcudf 3 min, tests
# 126 s, notebook 29 s; the run's files are more than 8, so tar them into $OUT):
#   source /tmp/rapids/env.sh; COMMIT=<sha> OUT=/tmp/g ONLY="setup daskcudf" bash ci/gpu_run.sh
#   source /tmp/rapids/env.sh; COMMIT=<sha> OUT=/tmp/g ONLY="tests notebook" \
#     TESTS_TIMEOUT=420 bash ci/gpu_run.sh
# Issue 14's figures came from kind nvidia-h200-x4: cuDF staged (7 part calls and the install,
# about 90 s held in all), then one call (478 s: setup 18 s, the kernels precompiled 23 s,
# the scaling step 435 s for 1, 2 and 4 GPUs; on 8 GPUs give it a call of its own):
#   source /tmp/rapids/env.sh; OUT=$OUT COMMIT=<sha> ONLY="setup" bash ci/gpu_run.sh;
#   PYTHONPATH=$PWD:/tmp/rapids:/tmp/site python3 benchmarks/bench_w2_gpu.py precompile tests \
#     --processes 48; OUT=$OUT COMMIT=<sha> ONLY="scaling" SCALING_TIMEOUT=530 bash ci/gpu_run.sh
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
COMMIT=${COMMIT:-unknown}
BENCH_DIR=${BENCH_DIR:-/tmp/swdask-bench}
CARRY=${CARRY:-.devcarry}
mkdir -p "$OUT" "$BENCH_DIR"
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba-cache}
# the image's own path, for the venvcudf step (as a user's environment would see it)
PYTHONPATH=${PYTHONPATH:-}
export IMAGE_PYTHONPATH=${IMAGE_PYTHONPATH-${PYTHONPATH#/tmp/rapids}}
IMAGE_PYTHONPATH=${IMAGE_PYTHONPATH#:}
# cuDF and its pinned numpy/pandas (staged into /tmp/rapids, `source /tmp/rapids/env.sh`)
# come before the carried wheels, which pin the same Dask
if [ -d /tmp/rapids ]; then
  export PYTHONPATH=$PWD:/tmp/rapids:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

STEPS=(setup startup tests w1 search abkernels w1long w2 w5b reads protein pssm profile daskcudf scaling recipe notebook venvcudf)

step_setup() {
  if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl || return 1
  fi
  # The image sets PYTHONDONTWRITEBYTECODE=1 and ships some packages without .pyc (numpy: 132
  # modules a search imports, cuda-python, fsspec, jinja2, ...), so every process compiled
  # them from source: 0.15-0.35 s of each W1 job (docs/notes/gpu-search-job.md, "Python
  # compiled on every start"). Compile them once, as pip does on a real install, with the
  # carried wheels and this checkout.
  python3 - <<'PY' | xargs -r python3 -m compileall -q -j 0 > /dev/null 2>&1
import importlib.util
for name in ("numpy", "cupy", "cupy_backends", "cuda", "fsspec", "jinja2", "markupsafe",
             "psutil", "pandas", "pyarrow", "numba", "llvmlite", "dask", "distributed", "yaml",
             "Bio", "certifi", "charset_normalizer", "packaging", "toolz", "cloudpickle",
             "swdask"):
    spec = importlib.util.find_spec(name)
    if spec is not None and spec.submodule_search_locations:
        print(list(spec.submodule_search_locations)[0])
PY
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

step_startup() {
  [ -s "$BENCH_DIR/sp500k.fa" ] || { echo "no sp500k.fa: run the setup step"; return 1; }
  timeout "${STARTUP_TIMEOUT:-480}" python3 benchmarks/bench_startup_gpu.py \
    --db "$BENCH_DIR/sp500k.fa" --queries "$CARRY/cudasw_queries.fasta" \
    --kernels "${STARTUP_KERNELS:-prebuilt,nvrtc}" --workers "${STARTUP_WORKERS-plain,preload}" \
    --out "$OUT" --commit "$COMMIT" \
    2>&1 | tee "$OUT/startup.log"
}

step_tests() {
  # where the kernels are compiled by NVRTC, compile every variant
  # (swdask.gpu._kernels.all_variants) many at once first; CuPy keeps them on disk, so the
  # tests and the benchmarks after them find them compiled
  if [ "${DASK_SWDASK__GPU__PREBUILT:-true}" = false ]; then
    timeout 240 python3 benchmarks/bench_w2_gpu.py precompile tests > "$OUT/precompile.log" \
      2>&1 || echo "precompile failed (see precompile.log); the tests compile as they go"
  fi
  SWDASK_MMSEQS_DB=${SWDASK_MMSEQS_DB:-$CARRY/DB.fasta.gz} timeout "${TESTS_TIMEOUT:-200}" \
    python3 -m pytest -q -m gpu -p no:cacheprovider ${GPU_TESTS:-tests/} \
      --junitxml="$OUT/gpu-tests.xml" 2>&1 | tee "$OUT/gpu-tests.log"
}

step_w5b() {
  [ -d "$CARRY/kleborate" ] || { echo "no $CARRY/kleborate: run ci/prepare_carry.sh"; return 1; }
  timeout "${W5B_TIMEOUT:-540}" python3 benchmarks/bench_w5b_top_gpu.py \
    --data "$CARRY/kleborate" --out "$OUT" --commit "$COMMIT" ${W5B_ARGS:-} \
    2>&1 | tee "$OUT/w5b.log"
}

step_pssm() {
  # issue 48: W1's queries as PSSMs beside BLOSUM62 (kernel, exactness on a sample, the
  # whole `swdask search --pssm` job); needs sp500k.fa (setup) and $CARRY/pssm/
  [ -s "$BENCH_DIR/sp500k.fa" ] || { echo "no sp500k.fa: run the setup step"; return 1; }
  [ -s "$CARRY/pssm/w00.pssm" ] || { echo "no $CARRY/pssm: run ci/prepare_carry.sh"; return 1; }
  timeout "${PSSM_TIMEOUT:-400}" python3 benchmarks/bench_pssm.py --backend gpu \
    --db "$BENCH_DIR/sp500k.fa" --queries "$CARRY/cudasw_queries.fasta" \
    --pssms "$CARRY/pssm" --out "$OUT" --commit "$COMMIT" ${PSSM_ARGS:-} 2>&1 | tee "$OUT/pssm.log"
}

step_protein() {
  [ -f "$CARRY/DB.fasta.gz" ] && [ -f "$CARRY/QUERY.fasta.gz" ] || {
    echo "no $CARRY/DB.fasta.gz or QUERY.fasta.gz: run ci/prepare_carry.sh"; return 1; }
  timeout "${PROTEIN_TIMEOUT:-300}" python3 benchmarks/bench_all_vs_all.py \
    --db "$CARRY/DB.fasta.gz" --records "${PROTEIN_RECORDS:-2000}" --backend gpu \
    --out "$OUT" --commit "$COMMIT" 2>&1 | tee "$OUT/protein.log"
  local work
  work=$(mktemp -d)
  python3 - "$CARRY/QUERY.fasta.gz" "$work/q.fa" <<'PY'
import gzip, sys
records = gzip.open(sys.argv[1], "rt").read().split(">")[1:51]
open(sys.argv[2], "w").write("".join(">" + r for r in records))
PY
  zcat "$CARRY/DB.fasta.gz" > "$work/db.fa"
  for backend in cpu gpu; do
    python3 -m swdask search "$work/q.fa" "$work/db.fa" --top 10 --format blast6 \
      --gap-open 12 --gap-extend 1 --statistics composition --backend "$backend" \
      --no-progress -v -o "$work/$backend.m8" 2>&1 | tee -a "$OUT/protein.log"
  done
  if cmp "$work/cpu.m8" "$work/gpu.m8"; then
    echo "composition statistics: the GPU's blast6 equals the CPU's" | tee -a "$OUT/protein.log"
  else
    echo "composition statistics: the GPU's blast6 differs from the CPU's" | tee -a "$OUT/protein.log"
    return 1
  fi
}

step_reads() {
  [ -d "$CARRY/gasic" ] || { echo "no $CARRY/gasic: run ci/prepare_carry.sh"; return 1; }
  timeout "${READS_TIMEOUT:-400}" python3 benchmarks/bench_reads_job.py --data "$CARRY/gasic" \
    --backend gpu --out "$OUT" --commit "$COMMIT" ${READS_ARGS:-} 2>&1 | tee "$OUT/reads.log"
}

step_w1() {
  [ -s "$BENCH_DIR/sp500k.fa" ] || { echo "no sp500k.fa: run the setup step"; return 1; }
  timeout "${W1_TIMEOUT:-300}" python3 benchmarks/bench_w1_gpu.py --db "$BENCH_DIR/sp500k.fa" \
    --queries "$CARRY/cudasw_queries.fasta" --out "$OUT" --commit "$COMMIT" \
    ${W1_ARGS:-} 2>&1 | tee "$OUT/w1.log"
}

step_search() {
  # issue 10: the whole `swdask search` job (W1 and 1,000 queries vs sp500k), its phases, the
  # read and engine-alone figures, the checks; kernel_tcups from this call's W1 JSON (run
  # the w1 step first, in the same call)
  [ -s "$BENCH_DIR/sp500k.fa" ] || { echo "no sp500k.fa: run the setup step"; return 1; }
  local w1json
  w1json=$(ls -t "$OUT"/W1-nvidia-*.json 2>/dev/null | grep -v -e long -e dask -e tail | head -1)
  timeout "${SEARCH_TIMEOUT:-400}" python3 benchmarks/bench_search_job.py --gpu \
    --db "$BENCH_DIR/sp500k.fa" --gpu-queries "$CARRY/cudasw_queries.fasta" \
    --sample-from "$CARRY/DB.fasta.gz" --w1-json "${w1json:-}" --out "$OUT" \
    --commit "$COMMIT" ${SEARCH_ARGS:-} 2>&1 | tee "$OUT/search.log"
}

step_abkernels() {
  [ -n "${AB_TREES:-}" ] || return 0
  [ -s "$BENCH_DIR/sp500k.fa" ] || { echo "no sp500k.fa: run the setup step"; return 1; }
  local round tree
  for round in $(seq 1 "${AB_ROUNDS:-2}"); do
    for tree in ${AB_TREES:-}; do
      echo "== round $round $tree: W1 kernel-only"
      PYTHONPATH=$tree:$PYTHONPATH timeout 300 python3 benchmarks/bench_w1_gpu.py \
        --db "$BENCH_DIR/sp500k.fa" --queries "$CARRY/cudasw_queries.fasta" --reps 2 \
        --no-check --e2e-modes "" --out "/tmp/ab-w1/$(basename "$tree")-$round" \
        --commit "$(basename "$tree")" 2>&1 | grep -e "^kernel" -e "^warm-up"
      echo "== round $round $tree: the 1,000-query scan"
      PYTHONPATH=$tree:$PYTHONPATH timeout 300 python3 benchmarks/bench_search_stacks_gpu.py \
        --db "$BENCH_DIR/sp500k.fa" --sample-from "$CARRY/DB.fasta.gz" \
        --limits "${AB_LIMITS:-32768x256}" 2>&1 | tail -n 4
    done
  done 2>&1 | tee "$OUT/ab-kernels.log"
}

step_w1long() {
  [ -s "$BENCH_DIR/sp500k.fa" ] || { echo "no sp500k.fa: run the setup step"; return 1; }
  timeout "${W1LONG_TIMEOUT:-200}" python3 benchmarks/bench_w1_long_rows_gpu.py \
    --db "$BENCH_DIR/sp500k.fa" --queries "$CARRY/cudasw_queries.fasta" --out "$OUT" \
    --commit "$COMMIT" ${W1LONG_ARGS:-} 2>&1 | tee "$OUT/w1long.log"
}

step_w2() {
  # the pair tests are marked gpu, so the tests step ran them already (W2_SKIP_TESTS=0 to
  # run them again inside the W2 step)
  OUT="$OUT" SWDASK_COMMIT="${SWDASK_COMMIT:-$COMMIT}" W2_SKIP_TESTS="${W2_SKIP_TESTS:-1}" \
    W2_DB="${W2_DB:-$CARRY/DB.fasta.gz}" \
    W2_DNA_SCRIPT="${W2_DNA_SCRIPT:-$CARRY/w2/make_dna_pairs.py}" \
    W2_REFERENCE="${W2_REFERENCE:-$CARRY/w2/ref}" timeout "${W2_TIMEOUT:-420}" bash ci/steps/w2.sh
}

step_profile() {  # only with PROFILE=1: Nsight Compute on one W1 forward launch
  [ "${PROFILE:-0}" = 1 ] || { echo "(PROFILE=1 to run)"; return 0; }
  local ncu
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ -n "$ncu" ] || { echo "no ncu"; return 1; }
  timeout "${PROFILE_TIMEOUT:-150}" "$ncu" --clock-control none -k regex:sw_inter_forward \
    --launch-skip 1 -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis \
    python3 benchmarks/bench_w1_ncu_gpu.py --db "$BENCH_DIR/sp500k.fa" \
    --queries "$CARRY/cudasw_queries.fasta" --length "${PROFILE_LENGTH:-1000}" \
    --mode "${PROFILE_MODE:-end}" 2>&1 | tee "$OUT/ncu-w1.txt"
}

step_venvcudf() {  # issue 12: .[cudf] installed in a fresh virtual environment
  timeout "${VENVCUDF_TIMEOUT:-420}" bash ci/steps/venv_cudf.sh 2>&1 | tee "$OUT/venv-cudf.log"
}

step_daskcudf() {  # issue 4: W1 through dask_cudf vs kernel-only, 1..N GPUs, capped memory
  [ -s "$BENCH_DIR/sp500k.fa" ] || { echo "no sp500k.fa: run the setup step"; return 1; }
  OUT="$OUT" COMMIT="$COMMIT" BENCH_DIR="$BENCH_DIR" CARRY="$CARRY" \
    timeout "${DASKCUDF_TIMEOUT:-420}" bash ci/steps/daskcudf.sh 2>&1 | tee "$OUT/daskcudf.log"
}

step_scaling() {  # issue 14: W1 and the 1,000-query search on 1, 2, 4... GPUs of this machine
  [ -s "$BENCH_DIR/sp500k.fa" ] || { echo "no sp500k.fa: run the setup step"; return 1; }
  local gpus=${SCALING_GPUS:-} n
  if [ -z "$gpus" ]; then
    gpus=1; n=2
    while [ "$n" -le "$(nvidia-smi -L | wc -l)" ]; do gpus="$gpus,$n"; n=$((n * 2)); done
  fi
  timeout "${SCALING_TIMEOUT:-570}" python3 benchmarks/bench_scaling_gpu.py \
    --db "$BENCH_DIR/sp500k.fa" --w1-queries "$CARRY/cudasw_queries.fasta" \
    --sample-from "$CARRY/DB.fasta.gz" --gpus "$gpus" --out "$OUT" --commit "$COMMIT" \
    --report ${SCALING_ARGS:-} 2>&1 | tee "$OUT/scaling.log"
}

step_recipe() {
  # issue 44: the README's GPU recipe as a script (benchmarks/bench_search_recipe_gpu.py) on
  # the 1,000 queries against sp500k, on every GPU of the machine, once with Dask's defaults
  # and once with each setting of RECIPE_VARIANTS (Dask settings in the environment, e.g.
  # DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False) -> recipe.log
  [ -s "$BENCH_DIR/sp500k.fa" ] || { echo "no sp500k.fa: run the setup step"; return 1; }
  python3 - "$CARRY/DB.fasta.gz" "$BENCH_DIR/q1000.fasta" <<'PY' || return 1
import sys
sys.path.insert(0, "benchmarks")
from _common import sample_proteins
queries = sample_proteins(sys.argv[1], 1000, 10)
with open(sys.argv[2], "w") as out:
    out.writelines(f">{i}\n{s}\n" for i, s in zip(queries["id"], queries["sequence"]))
PY
  local variant number=0
  for variant in "" ${RECIPE_VARIANTS:-}; do
    echo "== recipe $number: ${variant:-defaults}"
    env $variant timeout "${RECIPE_TIMEOUT:-200}" python3 benchmarks/bench_search_recipe_gpu.py \
      "$BENCH_DIR/q1000.fasta" "$BENCH_DIR/sp500k.fa" --hits "$OUT/recipe-hits.tsv" \
      --json "$OUT/recipe-$number.json" ${RECIPE_ARGS:-}
    number=$((number + 1))
  done 2>&1 | tee "$OUT/recipe.log"
}

step_notebook() {
  # examples/etl.ipynb executed with cuDF partitions on a LocalCUDACluster (ci/run_notebook.py)
  # -> $OUT/etl.ipynb (outputs included: copy it over examples/etl.ipynb to commit them),
  # etl-hits.parquet, etl-score_distribution.png, notebook.log. The kernel inherits
  # PYTHONPATH: this checkout, /tmp/site (nbclient, ipykernel: the setup step) and /tmp/rapids
  # (cuDF, dask-cuda: `source /tmp/rapids/env.sh` before this script). NOTEBOOK_BACKEND=pandas
  # runs it on the CPU instead.
  local backend=${NOTEBOOK_BACKEND:-cudf} workdir="$BENCH_DIR/etl"
  if [ "$backend" = cudf ] && ! python3 -c "import cudf, dask_cudf, dask_cuda" 2>/dev/null; then
    echo "no cuDF/dask-cuda here: stage them (../shared/device/rapids_stage.py) and" \
      "source /tmp/rapids/env.sh before this script" | tee "$OUT/notebook.log"
    return 1
  fi
  rm -rf "$workdir"
  SWDASK_BACKEND=$backend timeout "${NOTEBOOK_TIMEOUT:-300}" python3 ci/run_notebook.py \
    examples/etl.ipynb --out "$OUT/etl.ipynb" --workdir "$workdir" \
    --cell-timeout "${NOTEBOOK_CELL_TIMEOUT:-240}" 2>&1 | tee "$OUT/notebook.log"
  local rc=$?
  for product in hits.parquet score_distribution.png; do
    [ -f "$workdir/$product" ] && cp "$workdir/$product" "$OUT/etl-$product"
  done
  return $rc
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
