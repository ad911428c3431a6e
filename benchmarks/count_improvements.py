"""How often the forward kernel's "improved" branch would be taken: a count on the CPU, not
a timing (a lead for issue 13's kernel work).

In the inter-task forward kernel (swdask/gpu/inter_task.cu), each thread keeps, per lane,
its best score so far. When a column beats it, the thread searches its R registers for the
first row holding the new best. A warp runs that branch at a step when any of its 32 threads
(8 target pairs x 4 threads of R = 32 rows, 2 lanes each) improved. In a query's first pass
the threshold starts at 0. In later passes it starts from the best of the earlier passes.

This script takes queries of about 144, 342 and 1,000 residues from mmseqs2's DB.fasta. It
builds warps of 16 real targets of about equal length, computes the full score matrices
(BLOSUM62, gaps 11 + (k-1)) and counts the warp steps at which the branch is taken.

    python3 benchmarks/count_improvements.py
"""
import gzip

import numba
import numpy as np
from Bio.Align import substitution_matrices

ALPHABET = "ARNDCQEGHILKMFPSTWYVBZX*"
BLOSUM62 = substitution_matrices.load("BLOSUM62")
SUBSTITUTION = np.array([[BLOSUM62[a][b] for b in ALPHABET] for a in ALPHABET], dtype=np.int32)
CODES = {letter: code for code, letter in enumerate(ALPHABET)}


def encode(sequence: str) -> np.ndarray:
    return np.array([CODES.get(c, CODES["X"]) for c in sequence.upper()], dtype=np.int32)


@numba.njit(cache=True)
def _matrix(query, target, substitution, gap_open, gap_extend):
    m, n = query.shape[0], target.shape[0]
    H = np.zeros((m + 1, n + 1), np.int32)
    E = np.full(m + 1, -10**6, np.int32)
    for j in range(1, n + 1):
        F = -10**6
        for i in range(1, m + 1):
            E[i] = max(E[i] - gap_extend, H[i, j - 1] - gap_open)
            F = max(F - gap_extend, H[i - 1, j] - gap_open)
            H[i, j] = max(0, H[i - 1, j - 1] + substitution[query[i - 1], target[j - 1]],
                          E[i], F)
    return H[1:, 1:]


def matrix(query: str, target: str) -> np.ndarray:
    """The local alignment's H matrix (query rows x target columns; BLOSUM62, gaps
    11 + (k-1)). Written here: parasail's table function (``sw_table``), which would give
    it, crashed on the 1,000-residue query and counted differently from run to run on the
    2-core machine; this one equals it where it ran (one pair checked, every cell)."""
    return _matrix(encode(query), encode(target), SUBSTITUTION, 11, 1)


def read(path):
    seqs, cur = [], []
    for line in gzip.open(path, "rt"):
        if line.startswith(">"):
            if cur: seqs.append("".join(cur))
            cur = []
        else:
            cur.append(line.strip())
    if cur: seqs.append("".join(cur))
    return seqs

seqs = read("/usr/share/doc/mmseqs2/example-data/DB.fasta.gz")
rng = np.random.default_rng(1)
R, G = 32, 4
for m in (144, 342, 1000):
    query = next(s for s in seqs if abs(len(s) - m) < 5)
    # one warp: 8 pairs of targets of about equal length (as the layout sorts them)
    taken_first, taken_later, steps_first, steps_later = 0, 0, 0, 0
    for trial in range(6):
        length = int(rng.choice([250, 400, 600]))
        pool = [s for s in seqs if abs(len(s) - length) < 30]
        picks = rng.choice(len(pool), 16, replace=False)
        Hs = [matrix(query, pool[k]) for k in picks]
        n = max(h.shape[1] for h in Hs)
        passes = -(-len(query) // (R * G))
        best_lane = [0] * 16
        for p in range(passes):
            events = np.zeros(n + G, bool)
            for lane, H in enumerate(Hs):
                thr = best_lane[lane]  # best of the earlier passes (0 on the first pass)
                for t in range(G):
                    rows = H[p * R * G + t * R: p * R * G + (t + 1) * R]
                    if rows.shape[0] == 0:
                        continue
                    col_best = rows.max(axis=0)
                    running = thr - 1 if p else -1  # records cells reaching the best so far
                    for j in range(col_best.shape[0]):
                        if col_best[j] > running:
                            running = col_best[j]
                            events[j + t] = True  # warp step s = j + t
                best_lane[lane] = max(best_lane[lane], int(H[p*R*G:(p+1)*R*G].max(initial=0)))
            if p == 0:
                taken_first += events.sum(); steps_first += n + G - 1
            else:
                taken_later += events.sum(); steps_later += n + G - 1
    print(f"query {len(query)}: branch taken in {taken_first / steps_first:.1%} of warp "
          f"steps in first passes" + (f", {taken_later / max(steps_later, 1):.1%} in later passes"
                                       if steps_later else ""), flush=True)
