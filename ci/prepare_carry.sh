#!/usr/bin/env bash
# Rebuild, on the development machine, the ignored folders a GPU device call carries
# (ci/gpu_run.sh's header gives the call itself):
#
#   .whl/       wheels the GPU image lacks, for CPython 3.12 on x86-64 Linux, pinned below
#               (dependencies listed by hand: one version each, found with a resolving
#               `pip download` for that platform); installed there into /tmp/site by
#               gpu_run.sh's setup step (--no-deps).
#   .devcarry/  make_protein_db.py and cudasw_queries.fasta (../shared), DB.fasta.gz and
#               QUERY.fasta.gz (Debian package mmseqs2-examples), w2/make_dna_pairs.py (../shared/bench) and w2/ref/:
#               the CPU engine's results for W2's checked rows (bench_w2_gpu.py reference;
#               used on the GPU machine only where the SHA-256 of the regenerated data matches),
#               kleborate/: the four genomes of Debian's kleborate-examples (W5b).
#               pssm/: W1's queries as PSI-BLAST PSSMs (psiblast, where installed).
#               gasic/: gasic-examples' 100,000 reads and four genomes (the reads job).
#
#   bash ci/prepare_carry.sh              # from anywhere; writes into the repository root
#   SKIP_REF=1 bash ci/prepare_carry.sh   # keep .devcarry/w2/ref as it is (the slow part)
#   DEST=/tmp/x bash ci/prepare_carry.sh  # write .whl/ and .devcarry/ under /tmp/x instead
#
# Durations on this 2-core machine: wheels and copies a few seconds (measured); the W2 data
# a few minutes and the references tens of minutes (docs/notes/measuring.md: W2-protein-10000
# alone took 1,124 s, the 100k pair 111 s). Sizes: .whl ~25 MiB, .devcarry ~10 MiB with ref;
# a device call carries at most 64 MiB in all (checked at the end).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${DEST:-$ROOT}
SHARED=${SHARED:-$ROOT/../shared}
MMSEQS_DB=${MMSEQS_DB:-/usr/share/doc/mmseqs2/example-data/DB.fasta.gz}
KLEBORATE=${KLEBORATE:-/usr/share/doc/kleborate/examples/data}
GASIC=${GASIC:-/usr/share/doc/gasic/examples}
W2_DATA=${W2_DATA:-/tmp/w2data-carry}
PYTHON=${PYTHON:-python3}

# The GPU image has CuPy, NumPy, pandas, pyarrow, numba, pytest, matplotlib; these complete it.
WHEELS=(
  biopython==1.88
  parasail==1.3.4
  # BAM output (the bam extra): the reads job writes BAM as the issue's job does
  pysam==0.24.1
  dask==2026.8.0
  distributed==2026.8.0
  locket==1.0.0
  partd==1.4.2
  tblib==3.2.2
  tornado==6.6.1
  zict==3.0.0
  # building this project in ci/steps/venv_cudf.sh's fresh virtual environment
  setuptools==80.9.0
  # the Dask dashboard (swdask.cluster prints its link; the image has its other needs)
  bokeh==3.10.2
  xyzservices==2026.9.1
  # ci/run_notebook.py (nbclient + ipykernel), less what the image has (attrs, packaging,
  # psutil, pygments, python-dateutil, typing-extensions) and what the kernel only imports when
  # present: debugpy (the debugger; 5.4 MB) and jedi + parso (IPython's completer; 5 MB)
  nbclient==0.11.0
  nbformat==5.11.1
  fastjsonschema==2.22.3
  jsonschema==4.26.0
  jsonschema-specifications==2025.9.1
  referencing==0.37.0
  rpds-py==2026.9.1
  jupyter-client==8.10.0
  jupyter-core==5.9.1
  platformdirs==4.14.7
  traitlets==5.16.1
  pyzmq==27.3.0
  ipykernel==7.4.0
  comm==0.2.3
  ipython==9.18.1
  ipython-pygments-lexers==1.1.1
  matplotlib-inline==0.2.2
  nest-asyncio2==1.7.4
  prompt-toolkit==3.0.53
  wcwidth==0.9.4
  pexpect==4.9.0
  ptyprocess==0.7.0
  stack-data==0.6.3
  executing==2.3.0
  asttokens==3.0.2
  pure-eval==0.2.4
)

[ -f "$MMSEQS_DB" ] || { echo "missing $MMSEQS_DB (apt-get install mmseqs2-examples)"; exit 1; }
for f in bench/make_protein_db.py bench/make_dna_pairs.py data/cudasw_queries.fasta; do
  [ -f "$SHARED/$f" ] || { echo "missing $SHARED/$f"; exit 1; }
done

echo "== wheels -> $DEST/.whl"
rm -rf "$DEST/.whl.new"
mkdir -p "$DEST/.whl.new"
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --abi cp312 --abi abi3 --abi none \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux1_x86_64 --platform any \
  --dest "$DEST/.whl.new" "${WHEELS[@]}"
rm -rf "$DEST/.whl"
mv "$DEST/.whl.new" "$DEST/.whl"
ls "$DEST/.whl"

echo "== inputs -> $DEST/.devcarry"
keep_ref=""
if [ "${SKIP_REF:-0}" = 1 ] && [ -d "$DEST/.devcarry/w2/ref" ]; then
  keep_ref=$(mktemp -d)
  cp -a "$DEST/.devcarry/w2/ref" "$keep_ref/ref"
fi
rm -rf "$DEST/.devcarry"
mkdir -p "$DEST/.devcarry/w2"
install -m 0555 "$SHARED/bench/make_protein_db.py" "$DEST/.devcarry/make_protein_db.py"
install -m 0444 "$SHARED/data/cudasw_queries.fasta" "$DEST/.devcarry/cudasw_queries.fasta"
install -m 0444 "$MMSEQS_DB" "$DEST/.devcarry/DB.fasta.gz"
# the protein step's queries (issue 48: composition statistics on the GPU against the CPU)
install -m 0444 "$(dirname "$MMSEQS_DB")/QUERY.fasta.gz" "$DEST/.devcarry/QUERY.fasta.gz"
install -m 0555 "$SHARED/bench/make_dna_pairs.py" "$DEST/.devcarry/w2/make_dna_pairs.py"
# W1's queries as PSI-BLAST PSSMs (gpu_run.sh's pssm step; psiblast is not on the GPU
# machine): psiblast -num_iterations 2 of each against DB.fasta, where ncbi-blast+ is installed
if command -v psiblast >/dev/null && [ ! -s "$DEST/.devcarry/pssm/w19.pssm" ]; then
  pssm_work=$(mktemp -d)
  mkdir -p "$DEST/.devcarry/pssm"
  zcat "$MMSEQS_DB" > "$pssm_work/db.fa"
  makeblastdb -in "$pssm_work/db.fa" -dbtype prot -out "$pssm_work/db" > /dev/null
  "$PYTHON" - "$SHARED/data/cudasw_queries.fasta" "$pssm_work" <<'PY'
import sys
records = open(sys.argv[1]).read().split(">")[1:]
for k, record in enumerate(records):
    open(f"{sys.argv[2]}/w{k:02d}.fa", "w").write(">" + record)
PY
  for query in "$pssm_work"/w*.fa; do
    name=$(basename "$query" .fa)
    psiblast -query "$query" -db "$pssm_work/db" -num_iterations 2 -out /dev/null \
      -out_ascii_pssm "$DEST/.devcarry/pssm/$name.pssm" 2>/dev/null || true
  done
  rm -rf "$pssm_work"
elif ! command -v psiblast >/dev/null; then
  echo "no psiblast (apt-get install ncbi-blast+): no pssm step there"
fi

# W5b's genomes (gpu_run.sh's w5b step), from Debian's kleborate-examples where installed
if compgen -G "$KLEBORATE/*.fna.xz" > /dev/null; then
  mkdir -p "$DEST/.devcarry/kleborate"
  install -m 0444 "$KLEBORATE"/*.fna.xz "$DEST/.devcarry/kleborate/"
else
  echo "no $KLEBORATE/*.fna.xz (apt-get install kleborate-examples): no w5b step there"
fi

# the reads job's FASTQ and genomes (gpu_run.sh's reads step), from Debian's gasic-examples
if [ -s "$GASIC/reads/SRR059298_subset.fastq.gz" ]; then
  mkdir -p "$DEST/.devcarry/gasic"
  install -m 0444 "$GASIC/reads/SRR059298_subset.fastq.gz" "$GASIC"/genomes/*.fasta.gz \
    "$DEST/.devcarry/gasic/"
else
  echo "no $GASIC/reads (apt-get install gasic-examples): no reads step there"
fi

if [ -n "$keep_ref" ]; then
  mv "$keep_ref/ref" "$DEST/.devcarry/w2/ref"
  rmdir "$keep_ref"
  echo "kept the existing w2/ref"
elif [ "${SKIP_REF:-0}" = 1 ]; then
  echo "SKIP_REF=1 and no w2/ref before: the GPU machine will compute the references itself"
else
  echo "== W2 data -> $W2_DATA, CPU references -> $DEST/.devcarry/w2/ref (slow)"
  cd "$ROOT"
  export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
  "$PYTHON" benchmarks/bench_w2_gpu.py make-data "$W2_DATA" \
    --dna-script "$DEST/.devcarry/w2/make_dna_pairs.py" --db "$DEST/.devcarry/DB.fasta.gz"
  "$PYTHON" benchmarks/bench_w2_gpu.py reference --data "$W2_DATA" \
    --out "$DEST/.devcarry/w2/ref"
fi

du -sh "$DEST/.whl" "$DEST/.devcarry"
total=$(du -sb "$DEST/.whl" "$DEST/.devcarry" | awk '{s += $1} END {print s}')
if [ "$total" -gt $((64 << 20)) ]; then
  echo "WARNING: $total bytes: more than a device call carries (64 MiB)"
  exit 1
fi
echo "carry: $total bytes (limit $((64 << 20)))"
