"""W1's kernel with start cells (positions "full") on one GPU, the reverse kernel's shape
varied (``swdask.gpu._kernels.REVERSE_SHAPE`` patched, G threads x R rows), alternating in
``rounds`` rounds: seconds in all and per query, and every row's results checked equal to the
first shape's ("MISMATCH" lines otherwise). Measured with it: benchmarks/NOTES-gpu.md,
"Start cells in passes of 256 rows".

    python benchmarks/ab_reverse_shapes_gpu.py sp500k.fa cudasw_queries.fasta "8,16;32,8" 2
"""
import sys
import time

import cupy

import swdask

sys.path.insert(0, "benchmarks")
from _common import read_fasta, read_sequences
from swdask.lowlevel import encode, prepare_query, prepare_targets, search
from swdask.gpu import _kernels

db, queries = sys.argv[1], sys.argv[2]
shapes = [tuple(int(v) for v in s.split(",")) for s in sys.argv[3].split(";")]
rounds = int(sys.argv[4])
scoring = swdask.make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
names, seqs = read_sequences(queries)
encoded = encode(read_fasta(db)["sequence"], scoring)
targets = prepare_targets(cupy.asarray(encoded.residues), cupy.asarray(encoded.offsets),
                          encoded.valid, alphabet_size=scoring.matrix.shape[0])
cells = sum(len(s) for s in seqs) * int(encoded.offsets[-1])
codes = [prepare_query(s, scoring).codes for s in seqs]
reference = {}
for shape in shapes:  # compile
    _kernels.REVERSE_SHAPE = shape
    search(targets, codes[-1], scoring, "full")
for r in range(rounds):
    for shape in shapes:
        _kernels.REVERSE_SHAPE = shape
        per = []
        for k, c in enumerate(codes):
            cupy.cuda.Device().synchronize(); t = time.perf_counter()
            found = search(targets, c, scoring, "full"); cupy.cuda.Device().synchronize()
            per.append(time.perf_counter() - t)
            got = {key: cupy.asnumpy(v) for key, v in found.items()}
            if k in reference:
                bad = sum(int((got[key] != reference[k][key]).sum()) for key in got)
                if bad:
                    print(f"MISMATCH shape {shape} query {k}: {bad}")
            else:
                reference[k] = got
        total = sum(per)
        print(f"round {r} shape {shape}: {total:.3f} s {cells / total / 1e12:.3f} TCUPS "
              f"per query {' '.join(f'{x*1e3:.0f}' for x in per)}", flush=True)
