#!/usr/bin/env bash
# A/B of the one-GPU W1 job (`swdask search`, 20 queries vs sp500k) on one machine: the swdask
# trees given, alternating, each run a new process from /tmp (so that no other swdask is on
# the path: from the repository root, `python -m swdask` would import the checkout's); prints
# each run's wall clock and phases. Round 0 compiles what a tree needs; compare the others.
# Machines of one kind differ by up to 0.5 s on this job (the imports), so compare commits
# this way, on one machine, not across device calls.
#
#   mkdir -p .devcarry/ab/old && git archive <commit> swdask | tar -x -C .devcarry/ab/old
#   mkdir -p .devcarry/ab/new && git archive HEAD swdask | tar -x -C .devcarry/ab/new
#   (device call, carry [".whl", ".devcarry"], after ci/gpu_run.sh's setup step)
#   bash benchmarks/bench_search_job_ab_gpu.sh $PWD/.devcarry/ab/new $PWD/.devcarry/ab/old
# (Q=<fasta> searches other queries, ROUNDS=<n> sets the rounds after round 0)
REPO=$PWD; DB=/tmp/swdask-bench/sp500k.fa; Q=${Q:-$REPO/.devcarry/cudasw_queries.fasta}
export NUMBA_CACHE_DIR=/tmp/numba-cache
cd /tmp
for round in $(seq 0 ${ROUNDS:-5}); do
  for tree in "$@"; do
    start=$(date +%s%N)
    PYTHONPATH=$tree:/tmp/site python3 -m swdask search $Q $DB -o /tmp/ab.tsv --backend gpu \
      --verbose --no-progress 2> /tmp/ab.err
    end=$(date +%s%N)
    echo "round $round $(basename $tree): $(( (end - start) / 1000000 )) ms | $(python3 -c 'import sys; print(sys.argv[1])' "$(grep phases /tmp/ab.err | sed 's/inside the search.*//')")"
  done
done
