#!/usr/bin/env bash
# Issue 4's measurement (called by ci/gpu_run.sh's `daskcudf` step): W1 through ddf.sw.align
# on dask_cudf against kernel-only in the same run, on 1..N GPUs, and the capped-memory run.
# Needs cuDF, dask_cudf and dask_cuda (staged with ../shared/device/rapids_stage.py; source
# /tmp/rapids/env.sh before gpu_run.sh). Environment: OUT, COMMIT, BENCH_DIR (sp500k.fa),
# CARRY (cudasw_queries.fasta), DASK_GPUS (default: every GPU count up to the machine's, as
# 1,2,4,...), DASK_PARTITIONS, CAPPED_LIMIT (default 64MiB; empty skips), DASKCUDF_ARGS.
set -u -o pipefail
gpus=$(nvidia-smi -L | wc -l)
if [ -z "${DASK_GPUS:-}" ]; then
  DASK_GPUS=1; n=2
  while [ "$n" -le "$gpus" ]; do DASK_GPUS="$DASK_GPUS,$n"; n=$((n * 2)); done
fi
python3 -c "import cudf, dask_cudf, dask_cuda" || { echo "cuDF/dask_cudf/dask_cuda missing: stage them first"; exit 1; }
python3 benchmarks/bench_w1_dask_cudf_gpu.py --db "$BENCH_DIR/sp500k.fa" \
  --queries "$CARRY/cudasw_queries.fasta" --out "$OUT" --commit "$COMMIT" \
  --gpus "$DASK_GPUS" ${DASK_PARTITIONS:+--partitions $DASK_PARTITIONS} \
  --capped-limit "${CAPPED_LIMIT-64MiB}" ${DASKCUDF_ARGS:-}
