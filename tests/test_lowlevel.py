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
