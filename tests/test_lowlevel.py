"""The documented low-level API (``swdask.lowlevel``): each stage on its own gives what the
dataframe API gives. GPU stages run under the host emulation of the CUDA kernels (g++)."""
from __future__ import annotations

import numpy as np
import pytest

import swdask
from swdask import lowlevel
from swdask.gpu import _runtime

needs_gxx = pytest.mark.skipif(_runtime.host_compiler() is None,
                               reason="the host emulation needs g++")
SCORING = swdask.make_scoring("BLOSUM62")
QUERY = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVV"
TARGETS = [QUERY[5:40], None, "", "MKVLAAGIVALLLAAGCSSSK", QUERY[::-1], QUERY[20:] + "WWW"]


def test_stages_equal_the_dataframe_api():
    prepared = lowlevel.prepare_query(QUERY, SCORING)
    encoded = lowlevel.encode(TARGETS, SCORING)
    found = lowlevel.align_many(prepared, encoded, "full", backend="cpu")
    frame = swdask.align(QUERY, TARGETS)
    assert found.to_pandas().equals(frame)
    assert lowlevel.get_backend("cpu").name == "cpu"
    assert lowlevel.result_columns("end") == ("score", "query_end", "target_end")


@needs_gxx
def test_gpu_kernels_alone_equal_the_cpu(setting):
    setting("gpu.runtime", "emulation")
    prepared = lowlevel.prepare_query(QUERY, SCORING)
    encoded = lowlevel.encode(TARGETS, SCORING)
    want = lowlevel.align_many(prepared, encoded, "full", backend="cpu")
    targets = lowlevel.prepare_targets(encoded.residues, encoded.offsets, encoded.valid,
                                       alphabet_size=SCORING.matrix.shape[0])
    cells = lowlevel.search(targets, prepared.codes, SCORING, "full")
    has_hit = want.has_hit
    assert np.array_equal(np.where(encoded.valid, cells["score"], 0), want.score)
    assert np.array_equal(cells["query_end"][has_hit] + 1, want.query_end[has_hit])
    assert np.array_equal(cells["target_start"][has_hit], want.target_start[has_hit])
    # row-wise pairs: the query against each target, on the device batch
    queries = lowlevel.encode([QUERY] * len(TARGETS), SCORING)
    batch = lowlevel.pairs_to_device(queries, encoded)
    rows = np.flatnonzero(encoded.valid & (encoded.lengths > 0))
    pairs = lowlevel.run_pairs(batch, rows, SCORING, "full")
    assert np.array_equal(pairs["score"][rows], want.score[rows])
    assert np.array_equal(pairs["target_end"][rows] + 1, want.target_end[rows])
    long_rows = lowlevel.align_long_rows(prepared.codes, encoded.residues, encoded.offsets,
                                         rows, SCORING, "full")
    assert np.array_equal(long_rows["score"], want.score[rows])
    assert len(lowlevel.forward_shape(len(QUERY))) == 2


def test_kernel_variants_name_every_source():
    variants = lowlevel.kernel_variants(90)
    assert {"inter_task.cu", "reverse.cu", "pairs_inter.cu", "intra_task.cu",
            "long_pair.cu"} <= set(variants)
    source, name = lowlevel.pairs_kernel("inter", (8, 8), 1, False)
    assert name in variants[source]


def test_stages_named_for_timing_exist():
    """Each of ``lowlevel.STAGES`` names a function of the package (a rename inside the engine
    must update the table, or the benchmarks that time those stages fail)."""
    import importlib

    for name, (module, attribute) in lowlevel.STAGES.items():
        owner = importlib.import_module(module)
        for part in attribute.split("."):
            owner = getattr(owner, part)
        assert callable(owner), name
    with pytest.raises(ValueError, match="unknown stages"):
        with lowlevel.timed_stages("no such stage"):
            pass


def test_stack_limits_apply_inside_the_block_only():
    from swdask.gpu import inter_task

    before = (inter_task.STACK_ROWS, inter_task.STACK_QUERIES, inter_task.STACK_BYTES)
    with lowlevel.stack_limits(queries=1) as limits:
        assert limits == (before[0], 1, before[2])
        with lowlevel.stack_limits(rows=100, result_bytes=1000) as inner:
            assert inner == (100, 1, 1000)
            assert inter_task.stacks([40, 40, 40], 0) == [range(0, 1), range(1, 2), range(2, 3)]
        assert inter_task.STACK_ROWS == before[0]
    assert (inter_task.STACK_ROWS, inter_task.STACK_QUERIES, inter_task.STACK_BYTES) == before


def test_stage_seconds_count_a_search_and_start_again():
    lowlevel.stage_seconds()
    encoded = lowlevel.encode(TARGETS, SCORING)
    queries = [lowlevel.prepare_query(q, SCORING) for q in (QUERY, QUERY[10:50])]
    hits = lowlevel.search_many(queries, encoded, 2, "end", backend="cpu")
    assert list(hits["query"]) == [0, 0, 1, 1]
    seconds = lowlevel.stage_seconds()
    assert "scan" in seconds and all(v >= 0 for v in seconds.values())
    assert lowlevel.stage_seconds() == {}


def test_run_command_runs_a_search_in_this_process(tmp_path):
    queries, db, out = tmp_path / "q.fasta", tmp_path / "db.fasta", tmp_path / "hits.tsv"
    queries.write_text(f">q\n{QUERY}\n")
    db.write_text("".join(f">t{k}\n{t}\n" for k, t in enumerate(TARGETS) if t))
    code = lowlevel.run_command(["search", queries, db, "-o", out, "--backend", "cpu",
                                 "--no-progress"])
    assert code == 0
    assert "t4" in out.read_text()


def test_traceback_bytes_grow_with_the_pair():
    small, large = lowlevel.traceback_bytes(np.array([10, 1000]), np.array([20, 2000]))
    assert 0 < small < large


@needs_gxx
def test_instruments_on_the_emulated_gpu(setting):
    setting("gpu.runtime", "emulation")
    encoded = lowlevel.encode(TARGETS, SCORING)
    prepared = lowlevel.prepare_query(QUERY, SCORING)
    targets = lowlevel.prepare_targets(encoded.residues, encoded.offsets, encoded.valid,
                                       alphabet_size=SCORING.matrix.shape[0])
    launches = lowlevel.forward_launches(targets, len(QUERY))
    assert launches and all(len(launch) == 4 for launch in launches)
    # deferred checks: one per search, read together
    checks = []
    deferred = lowlevel.search(targets, prepared.codes, SCORING, "end", checks=checks)
    assert len(checks) == 1 and lowlevel.failed_checks(checks) == [False]
    want = lowlevel.search(targets, prepared.codes, SCORING, "end")
    assert np.array_equal(deferred["score"], want["score"])
    # the search's stages timed on the host, the functions restored after
    from swdask.gpu import inter_task

    real = inter_task._run_forward
    queries = [prepared, lowlevel.prepare_query(QUERY[10:50], SCORING)]
    with lowlevel.timed_stages("forward", "scatter", "finish", "top rows") as found:
        assert inter_task._run_forward is not real
        lowlevel.search_many(queries, encoded, 2, "end", backend="gpu")
    assert inter_task._run_forward is real
    assert all(found[name] for name in ("forward", "scatter", "finish", "top rows")), found
    assert all(seconds >= 0 for records in found.values() for seconds in records)
    # row-wise pairs with alignments
    pairs = lowlevel.encode([QUERY] * len(TARGETS), SCORING)
    names = ("pairs upload", "pairs forward", "pairs finish", "trace group", "trace read-back")
    with lowlevel.timed_stages(*names) as found:
        aligned = lowlevel.align_pairs(pairs, encoded, SCORING, "alignment", backend="gpu")
    assert aligned.columns["cigar"].null_count < len(TARGETS)
    assert all(found[name] for name in names), found
