"""One query against many targets on a CUDA GPU equals the CPU engine on every row.

Marked ``gpu``: skipped where CuPy or a CUDA GPU is missing (ci/gpu_run.sh runs them on the
GPU machine). Every comparison is row by row over all five result columns (score, start and
end cells) against swdask's CPU engine, whose kernels test_reference.py checks against
Biopython and parasail.
"""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

from swdask import _engine
from swdask._sequences import prepare_query
from swdask._scoring import make_scoring
from swdask._sequences import EncodedSequences, encode

pytestmark = pytest.mark.gpu

COLUMNS = ("score", "query_start", "query_end", "target_start", "target_end")
DATA = Path(__file__).parent / "data"


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


if not _gpu_available():
    pytest.skip("needs CuPy and a CUDA GPU", allow_module_level=True)

import cupy  # noqa: E402


@pytest.fixture(autouse=True)
def _real_runtime(setting):
    """The CUDA runtime, whatever the environment says (not the host emulation)."""
    setting("gpu.runtime", "cuda")


def read_fasta(path) -> list[str]:
    opener = gzip.open if str(path).endswith(".gz") else open
    seqs, chunks = [], None
    with opener(path, "rt") as handle:
        for line in handle:
            if line.startswith(">"):
                if chunks is not None:
                    seqs.append("".join(chunks))
                chunks = []
            else:
                chunks.append(line.strip())
    if chunks is not None:
        seqs.append("".join(chunks))
    return seqs


def compare(query, targets, scoring, modes=("none", "end", "full"), encoded=None):
    """GPU and CPU engines agree on every row and column; returns the CPU result.

    ``encoded`` (optional) is what the GPU engine gets: host or device (CuPy) arrays."""
    prepared = prepare_query(query, scoring)
    gpu_input = encode(targets, scoring) if encoded is None else encoded
    cpu_input = gpu_input
    if isinstance(gpu_input.residues, cupy.ndarray):
        cpu_input = EncodedSequences(cupy.asnumpy(gpu_input.residues),
                                     cupy.asnumpy(gpu_input.offsets), np.asarray(gpu_input.valid))
    want = None
    for mode in modes:
        got = _engine.align_many(prepared, gpu_input, mode, backend="gpu").to_host()
        want = _engine.align_many(prepared, cpu_input, mode, backend="cpu")
        for name in COLUMNS:
            a, b = getattr(got, name), getattr(want, name)
            assert (a is None) == (b is None), (mode, name)
            if a is not None:
                bad = np.flatnonzero(a != b)
                assert bad.size == 0, (mode, name, bad[:5], a[bad[:5]], b[bad[:5]])
        assert np.array_equal(got.valid, want.valid)
    return want


def _rand(rng, alphabet, n):
    return "".join(rng.choice(alphabet, n))


def _mutate(rng, text, alphabet):
    out = []
    for ch in text:
        r = rng.random()
        if r < 0.1:
            out.append(str(rng.choice(alphabet)))
        elif r < 0.13:
            continue
        elif r < 0.16:
            out.append(ch + _rand(rng, alphabet, int(rng.integers(1, 4))))
        else:
            out.append(ch)
    return "".join(out)


PROTEIN = np.array(list("ACDEFGHIKLMNPQRSTVWY"))


def test_real_proteins():
    db = read_fasta(DATA / "proteins_db.fasta")
    queries = read_fasta(DATA / "proteins_query.fasta")
    scoring = make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    for query in queries:
        want = compare(query, db, scoring)
        assert (want.score > 60).sum() >= 6  # the homologs are there: a real test of ends


@pytest.mark.skipif(not Path(os.environ.get(
    "SWDASK_MMSEQS_DB", "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz")).exists(),
    reason="mmseqs2 example DB.fasta.gz not here")
def test_real_database_many_rows():
    db = read_fasta(os.environ.get("SWDASK_MMSEQS_DB",
                                   "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz"))
    queries = read_fasta(DATA / "proteins_query.fasta")
    scoring = make_scoring("BLOSUM62")
    encoded = encode(db, scoring)
    for query in queries[:3]:
        compare(query, db, scoring, modes=("end", "full"), encoded=encoded)


def test_random_with_homologs_and_ties():
    rng = np.random.default_rng(3)
    for gap_open, gap_extend, m in ((11, 1, 500), (5, 2, 1300), (3, 3, 61), (0, 0, 140)):
        if gap_extend > gap_open:
            continue
        scoring = make_scoring("BLOSUM62", gap_open=gap_open, gap_extend=gap_extend)
        query = _rand(rng, PROTEIN, m)
        targets = []
        for _ in range(600):
            r = rng.random()
            if r < 0.3:
                a = int(rng.integers(0, m))
                b = int(rng.integers(a, m + 1))
                targets.append(_rand(rng, PROTEIN, int(rng.integers(0, 40)))
                               + _mutate(rng, query[a:b], PROTEIN)
                               + _rand(rng, PROTEIN, int(rng.integers(0, 40))))
            elif r < 0.33:
                targets.append(query + query[: int(rng.integers(1, m))])  # tied repeats
            else:
                targets.append(_rand(rng, PROTEIN, int(rng.integers(1, 1500))))
        compare(query, targets, scoring)


def test_sixteen_bit_overflow_is_recomputed():
    # W-W scores 11: a long W-rich query against itself scores far above 32767
    rng = np.random.default_rng(5)
    scoring = make_scoring("BLOSUM62")
    query = "".join(rng.choice(np.array(list("WWWCCY")), 3600))
    targets = [query, query[:3000], _mutate(rng, query, PROTEIN), query[100:] + query,
               _rand(rng, PROTEIN, 3000), query[:2900]]
    want = compare(query, targets, scoring)
    assert want.score.max() > 32767 and (want.score > 32767).sum() >= 2
    assert (want.score < 32767 - 11).any()  # and rows that stay in 16 bits


def test_nulls_empty_single_and_long_rows():
    rng = np.random.default_rng(9)
    scoring = make_scoring("BLOSUM62")
    query = _rand(rng, PROTEIN, 700)
    long_row = _rand(rng, PROTEIN, 30000) + query[200:500] + _rand(rng, PROTEIN, 20000)
    targets = [None, "", "W", query[5], long_row, None, _rand(rng, PROTEIN, 5), "", query]
    compare(query, targets, scoring)
    compare("W", targets, scoring)  # a one-residue query


def test_dna_and_wide_scoring():
    rng = np.random.default_rng(13)
    dna = np.array(list("ACGT"))
    query = _rand(rng, dna, 900)
    targets = [_mutate(rng, query[a:a + 300], dna) for a in range(0, 600, 7)]
    targets += [_rand(rng, dna, int(rng.integers(1, 2000))) for _ in range(200)]
    compare(query, targets, make_scoring(None, match=3, mismatch=-3, gap_open=6, gap_extend=1))
    # costs beyond the 16-bit lanes' range: every row takes the 32-bit kernels
    compare(query, targets[:60], make_scoring(None, match=5000, mismatch=-4000, gap_open=9000,
                                              gap_extend=100))


def test_device_resident_input_chunks_and_shapes(monkeypatch, setting):
    rng = np.random.default_rng(17)
    scoring = make_scoring("BLOSUM62")
    query = _rand(rng, PROTEIN, 333)
    targets = [_rand(rng, PROTEIN, int(rng.integers(1, 900))) for _ in range(700)]
    targets += [_mutate(rng, query, PROTEIN) for _ in range(20)] + [None, ""]
    host = encode(targets, scoring)
    device = EncodedSequences(cupy.asarray(host.residues), cupy.asarray(host.offsets),
                              host.valid)
    compare(query, targets, scoring, modes=("full",), encoded=device)
    setting("gpu.chunk-bytes", str(200_000))  # many chunks
    compare(query, targets, scoring, modes=("end", "full"))
    for shape in ("8,12", "4,8", "8,32", "4,20", "4,36"):
        setting("gpu.shape", shape)
        compare(query, targets, scoring, modes=("end", "full"))


def test_public_api_on_gpu():
    import pandas as pd

    import swdask

    db = read_fasta(DATA / "proteins_db.fasta")[:120]
    series = pd.Series(db + [None], index=[f"r{k}" for k in range(len(db) + 1)])
    query = read_fasta(DATA / "proteins_query.fasta")[2]
    got = swdask.align(query, series, backend="gpu")
    want = swdask.align(query, series, backend="cpu")
    pd.testing.assert_frame_equal(got, want)


def test_long_rows_go_to_the_intra_task_kernel(monkeypatch, setting):
    """Rows of at least swdask.gpu.long-row-min letters take align_long_rows; merged by row."""
    from swdask import _settings
    from swdask.gpu import _pairs, inter_task

    setting("gpu.long-row-min", "2000")  # a threshold these targets straddle
    threshold = _settings.get_int("gpu.long-row-min")
    rng = np.random.default_rng(23)
    scoring = make_scoring("BLOSUM62")
    query = _rand(rng, PROTEIN, 420)
    targets = []
    for length in (threshold - 1, threshold, threshold + 1, 3 * threshold, 400):
        pad = _rand(rng, PROTEIN, length - 200)  # a homolog of 200 letters inside
        homolog = (_mutate(rng, query[50:250], PROTEIN) + "W" * 200)[:200]
        targets.append(pad[:100] + homolog + pad[100:])
        assert len(targets[-1]) == length
    targets += [query * 6, (query[:150] + "W") * 15, None, "", "W"]  # equal-score repeats
    targets += [_rand(rng, PROTEIN, int(rng.integers(1, 1500))) for _ in range(300)]
    targets += [_mutate(rng, query, PROTEIN) + _rand(rng, PROTEIN, int(rng.integers(0, 4000)))
                for _ in range(40)]
    lengths = np.array([len(t) if t else 0 for t in targets])
    assert (lengths >= threshold).sum() >= 20 and (lengths < threshold).sum() >= 300
    calls = []
    real = _pairs.align_long_rows

    def spy(*args, **kwargs):
        calls.append(int(len(args[3])))
        return real(*args, **kwargs)

    monkeypatch.setattr(_pairs, "align_long_rows", spy)
    compare(query, targets, scoring)
    assert calls == [int((lengths >= threshold).sum())] * 3  # one call per mode
    compare("W", targets, scoring)
    setting("gpu.chunk-bytes", str(150_000))  # long rows in several chunks
    compare(query, targets, scoring, modes=("full",))
    setting("gpu.long-row-min", "200")  # most rows on the intra-task kernel
    compare(query, targets, scoring)
    # DNA: the match/mismatch form of the intra-task kernel
    dna = np.array(list("ACGT"))
    dquery = _rand(rng, dna, 700)
    dtargets = [_rand(rng, dna, 900) + _mutate(rng, dquery, dna) + _rand(rng, dna, 2500)
                for _ in range(10)] + [_rand(rng, dna, int(rng.integers(1, 3000)))
                                       for _ in range(100)]
    compare(dquery, dtargets, make_scoring(None, match=2, mismatch=-3, gap_open=5,
                                           gap_extend=2))
    assert inter_task.long_row_threshold(inter_task.get_runtime()) == 200
    # more long rows than the cap (here 0 per multiprocessor): all of them stay in the
    # inter-task search
    setting("gpu.long-rows-per-sm", "0")
    calls.clear()
    compare(query, targets, scoring, modes=("full",))
    assert calls == []


def test_long_rows_beyond_the_intra_kernel_range_stay_exact(monkeypatch):
    """Scores the intra-task kernel's int32 range cannot hold keep the 32-bit inter-task path."""
    from swdask.gpu import _pairs

    rng = np.random.default_rng(29)
    dna = np.array(list("ACGT"))
    query = _rand(rng, dna, 80)
    big = 1 << 22  # 80 x 2**22 >= 2**28 (intra-task limit) but < 2**29 (inter-task 32-bit)
    scoring = make_scoring(None, match=big, mismatch=-big, gap_open=big, gap_extend=big // 2)
    targets = [_rand(rng, dna, 2500) + query + _rand(rng, dna, 100) for _ in range(3)]
    targets += [_rand(rng, dna, int(rng.integers(1, 300))) for _ in range(30)] + [query]

    def refuse(*args, **kwargs):
        raise AssertionError("align_long_rows called beyond its score range")

    monkeypatch.setattr(_pairs, "align_long_rows", refuse)
    want = compare(query, targets, scoring)
    assert want.score.max() >= _pairs.SCORE_LIMIT


@pytest.mark.parametrize("buckets", ["4:300,8", "4:120,8:400,8"])
def test_length_buckets_run_side_by_side_exactly(monkeypatch, buckets, setting):
    # each bucket is its own launch on its own stream, all at once (inter_task._run_forward)
    setting("gpu.buckets", buckets)
    db = read_fasta(DATA / "proteins_db.fasta")
    queries = read_fasta(DATA / "proteins_query.fasta")
    scoring = make_scoring("BLOSUM62")
    for query in (queries[0], queries[-1]):
        compare(query, db, scoring, modes=("end", "full"))


@pytest.mark.parametrize("in_parts", [False, True])
def test_stacked_queries_in_parts_equal_cpu(forward_parts, in_parts):
    """Many queries in stacks, each stack's launches run in parts side by side (inter_task.cu,
    "Parts": every launch of two passes or more, parts of a pass or more, each with its own
    rows above the passes, blocks of several parts on the GPU at once) or whole: every hit
    (scores, end and start cells, ranks) equals the CPU engine's."""
    import pandas as pd

    used = forward_parts(in_parts)
    rng = np.random.default_rng(5)
    db = read_fasta(DATA / "proteins_db.fasta")
    db += [_mutate(rng, db[k % len(db)], PROTEIN) for k in range(400)]
    column = pd.Series(db)
    queries = read_fasta(DATA / "proteins_query.fasta") + [s[5:300] for s in db[:40]]
    for positions in ("end", True):
        got = column.sw.search(queries, top=5, backend="gpu", positions=positions)
        want = column.sw.search(queries, top=5, backend="cpu", positions=positions)
        pd.testing.assert_frame_equal(got, want)
    assert (max(used) > 1) == in_parts


def test_top_rows_of_a_group_on_the_gpu_equal_the_host(monkeypatch):
    """The GPU picks a group of queries' top rows with one sort (inter_task.top_rows, split
    in halves past TOP_GROUP_SCORES) from the columns of its own finish: the same columns as
    the host's finish, and the same rows as the host's one query at a time, with their
    has_hit: score descending, then row, rows without a hit (score 0, null rows) after
    every hit, min(top, n) rows; scores past 16 bits too."""
    from swdask._results import finish, top_candidates
    from swdask.gpu import inter_task
    from swdask.gpu._runtime import get_runtime

    runtime = get_runtime()
    monkeypatch.setattr(inter_task, "TOP_GROUP_SCORES", 3 * 4000)  # groups of 3, then halves
    rng = np.random.default_rng(5)
    n = 4000
    scores = [(rng.integers(-1, 6, n) * rng.choice([1, 20000], n)).astype(np.int32)
              for _ in range(7)]
    valid = rng.random(n) > 0.2
    host = [finish({"score": score}, valid, "none") for score in scores]
    device = [inter_task.finish_cells(runtime, {"score": cupy.asarray(score)},
                                      cupy.asarray(valid), "none") for score in scores]
    for want, got in zip(host, device):
        assert np.array_equal(cupy.asnumpy(got.columns["score"]), want.columns["score"])
    for top in (1, 3, 10, 50):
        for alignments, (rows, is_hit) in zip(host, inter_task.top_rows(runtime, device, top)):
            want = top_candidates(alignments, top)
            hits = min(top, int(alignments.has_hit.sum()))
            assert len(rows) == len(want) == min(top, n)
            assert list(cupy.asnumpy(rows)[:hits]) == list(want[:hits])
            assert list(cupy.asnumpy(is_hit)) == list(alignments.has_hit[cupy.asnumpy(rows)])


@pytest.mark.skipif(cupy.cuda.runtime.getDeviceCount() < 2, reason="needs two GPUs")
def test_several_gpus_search_equals_one_gpu_and_cpu(tmp_path):
    """The search on every local GPU (what ``swdask search --backend gpu`` runs on several
    GPUs: GPU 0 in this process, one more process for each other, each parsing the whole
    file on its GPU and taking batches of the queries) gives the hits of one GPU and of the
    CPU engine, every column, every query searched once, each process on its own device."""
    import pandas as pd

    from swdask import _many_queries
    from swdask._fasta import read_fasta_frame
    from swdask._local_gpus import LocalGpus
    from swdask._options import Options
    from swdask._runners import SearchJob, run
    from swdask._timing import Phases

    rng = np.random.default_rng(11)
    db = read_fasta(DATA / "proteins_db.fasta")
    db += [_mutate(rng, db[k % len(db)], PROTEIN) for k in range(600)]
    path = tmp_path / "db.fasta"
    path.write_text("".join(f">t{k} record {k}\n{sequence}\n" for k, sequence in enumerate(db)))
    frame = read_fasta_frame(str(path))  # the one-GPU and CPU searches' database
    query_list = read_fasta(DATA / "proteins_query.fasta")
    queries = pd.DataFrame({"id": [f"q{k}" for k in range(len(query_list))],
                            "sequence": query_list})
    count = _engine.get_backend("gpu").device_count()
    options = Options.parse(matrix="BLOSUM62", gap_open=11, gap_extend=1, backend="gpu")
    said = []
    ids, prepared = _many_queries.prepare_queries(queries, options.scoring)
    job = SearchJob(database=str(path), queries=queries, ids=ids, prepared=prepared, top=7,
                    options=options, statistics="auto",
                    stats=_many_queries.hit_statistics("auto", options.scoring, prepared),
                    blocksize="auto", strip_gaps=False, progress=False, phases=Phases(),
                    report=said.append)
    runner = LocalGpus(count)
    runner.start()
    try:
        several = run(job, runner)
    finally:
        runner.stop()
    assert f"running on {count} GPUs" in said[0]
    said = [line for line in said if line.startswith("GPU ")]
    assert sorted(int(line.split()[1].rstrip(":")) for line in said) == list(range(count))
    assert sum(int(line.split()[2]) for line in said) == len(queries)
    part = [(frame["sequence"], frame[["id", "description"]])]
    one = _many_queries.search_columns(part, queries, 7, options)
    cpu = _many_queries.search_columns(part, queries, 7,
                                       Options.parse(matrix="BLOSUM62", gap_open=11,
                                                     gap_extend=1, backend="cpu"))
    pd.testing.assert_frame_equal(several, one)
    pd.testing.assert_frame_equal(one, cpu)
    assert len(one) == 7 * len(queries)


def test_taking_rows_of_a_device_column_equals_the_host():
    """The GPU backend's take of a column on the device (a search's top rows: the spans
    gathered by one kernel) gives the host's codes, offsets and validity: rows in any
    order, repeated, empty and null."""
    from swdask.gpu._encode import take_rows

    scoring = make_scoring()
    values = ["MKV", "", None, "ACDEFGHIKLMNPQRSTVWY" * 7, "W", "PPGG"]
    host = encode(values, scoring)
    device = EncodedSequences(cupy.asarray(host.residues), cupy.asarray(host.offsets),
                              host.valid)
    rows = np.array([3, 0, 0, 1, 2, 5, 4, 3], dtype=np.int64)
    for picked in (rows, cupy.asarray(rows), rows[:0]):
        want = host.take(cupy.asnumpy(picked) if hasattr(picked, "get") else picked)
        got = take_rows(device, picked)
        assert np.array_equal(cupy.asnumpy(got.residues), want.residues)
        assert np.array_equal(cupy.asnumpy(got.offsets), want.offsets)
        assert np.array_equal(np.asarray(got.valid), np.asarray(want.valid))
