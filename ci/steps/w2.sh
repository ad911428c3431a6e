#!/usr/bin/env bash
# W2 step of the GPU run (called by ci/gpu_run.sh on the GPU machine, from the repository root):
# the row-wise pair tests (tests/test_gpu_pairs.py), then the W2 benchmark
# (benchmarks/bench_w2_gpu.py: every DNA and protein set, GCUPS end to end and kernel only,
# exactness against the CPU engine on >= 10,000 sampled pairs per set), one JSON per set.
#
# Environment (all optional but OUT):
#   OUT            results folder; JSON goes to $W2_OUT (default $OUT/w2), logs to $OUT/w2-*.log
#   SWDASK_COMMIT  commit measured, written into the JSON (.git may not travel to the machine)
#   W2_SETS        workloads to run (default: all eight, e.g. "W2-dna-reads W2-dna-1000")
#   W2_DATA        where the pair files are written (default /tmp/w2data; kept if present)
#   W2_DNA_SCRIPT  make_dna_pairs.py (default .devcarry/w2/ copy, else ../shared/bench/)
#   W2_DB          protein source (default .devcarry/w2/DB.fasta.gz, else mmseqs2's example DB)
#   W2_REFERENCE   folder of CPU results computed ahead (bench_w2_gpu.py reference), used only
#                  where their SHA-256 matches the data; otherwise the CPU engine runs here
#   W2_SKIP_TESTS  1: benchmark only;  W2_SKIP_BENCH  1: tests only
#   W2_ARGS        more arguments of `bench_w2_gpu.py run` (e.g. --alignment)
# Exit status: non-zero if a test fails, a set has mismatches, or the benchmark fails.
set -uo pipefail
: "${OUT:?set OUT to the results folder}"
W2_OUT=${W2_OUT:-$OUT/w2}
W2_DATA=${W2_DATA:-/tmp/w2data}
W2_SETS=${W2_SETS:-W2-dna-reads W2-dna-150 W2-dna-1000 W2-dna-10000 W2-dna-single-100k W2-protein-150 W2-protein-1000 W2-protein-10000}
if [ -z "${W2_DNA_SCRIPT:-}" ]; then
  W2_DNA_SCRIPT=.devcarry/w2/make_dna_pairs.py
  [ -f "$W2_DNA_SCRIPT" ] || W2_DNA_SCRIPT=../shared/bench/make_dna_pairs.py
fi
if [ -z "${W2_DB:-}" ]; then
  W2_DB=.devcarry/w2/DB.fasta.gz
  [ -f "$W2_DB" ] || W2_DB=/usr/share/doc/mmseqs2/example-data/DB.fasta.gz
fi
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$W2_OUT" "$W2_DATA"
status=0
BENCH=benchmarks/bench_w2_gpu.py
# data (in the background while the tests run); missing sets only
missing=()
for s in $W2_SETS; do
  f=$(PYTHONPATH="benchmarks:$PYTHONPATH" python3 -c "import bench_w2_gpu as b; print(b.file_of('$s'))")
  [ -s "$W2_DATA/$f.qry" ] || missing+=("$s")
done
if [ ${#missing[@]} -gt 0 ]; then
  python3 $BENCH make-data "$W2_DATA" --sets "${missing[@]}" --dna-script "$W2_DNA_SCRIPT" \
    --db "$W2_DB" > "$OUT/w2-data.log" 2>&1 &
  data_pid=$!
fi
python3 $BENCH precompile tests W2 > "$OUT/w2-precompile.log" 2>&1 || status=1
if [ "${W2_SKIP_TESTS:-0}" != 1 ]; then
  # --noconftest: this file needs none of conftest's references (parasail is not on the GPU image)
  python3 -m pytest -q --noconftest -p no:cacheprovider tests/test_gpu_pairs.py \
    > "$OUT/w2-tests.log" 2>&1 || status=1
  tail -3 "$OUT/w2-tests.log"
fi
[ -n "${data_pid:-}" ] && { wait "$data_pid" || status=1; }
if [ "${W2_SKIP_BENCH:-0}" != 1 ]; then
  ref=()
  [ -n "${W2_REFERENCE:-}" ] && ref=(--reference "$W2_REFERENCE")
  python3 $BENCH run --data "$W2_DATA" --out "$W2_OUT" --commit "${SWDASK_COMMIT:-unknown}" ${W2_ARGS:-} \
    --sets $W2_SETS "${ref[@]}" 2>&1 | tee "$OUT/w2-bench.log" || status=1
  python3 - "$W2_OUT" <<'PY' || status=1
import json, pathlib, sys
bad = [p.name for p in pathlib.Path(sys.argv[1]).glob("*.json")
       if json.loads(p.read_text()).get("mismatches", 0) != 0]
sys.exit(f"mismatches in {bad}" if bad else 0)
PY
fi
exit $status
