"""``strand="both"``: each row reports the better of the query and its reverse complement;
and ``mask="lowercase"``, soft-masked letters scored as N.

The reference is two runs of the same entry point, one with the query as given and one with
its reverse complement written out by Biopython (``Bio.Seq.reverse_complement``: IUPAC codes,
case kept): ``strand="both"`` must equal, row by row, the one scoring higher (the query as
given on a tie), its positions, CIGAR and aligned strings those of that run, with ``strand``
``"+"``/``"-"``; on the CPU, on the GPU backend (host emulation), on Dask partitions, in
``.sw.search`` (the scan's floors included) and in the command's blast6 and SAM output.
"""
from __future__ import annotations

import contextlib

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from Bio.Seq import reverse_complement

import swdask

from .test_traceback import DNA, GPU_KINDS, _gpu_runtime, walk

KW = DNA.options
MODES = [True, "end", False, "alignment"]


def random_dna(rng, length: int, letters: str = "ACGT") -> str:
    return "".join(rng.choice(list(letters), length))


@pytest.fixture(scope="module")
def planted():
    """Two queries (IUPAC codes and lower case among them) and 60 targets holding copies of
    them on either strand, mutated, besides random rows, a null and an empty row."""
    rng = np.random.default_rng(47)
    queries = [random_dna(rng, 70) + "RyKm" + random_dna(rng, 20, "acgt"),
               random_dna(rng, 120)]
    targets = []
    for k in range(60):
        query = queries[k % 2]
        piece = query[int(rng.integers(0, 20)):int(rng.integers(60, len(query)))]
        piece = "".join(c if rng.random() > 0.05 else "ACGT"[int(rng.integers(4))]
                        for c in piece)
        if k % 3 == 0:
            piece = reverse_complement(piece)
        elif k % 3 == 1:  # both strands in one row: the plus copy shorter
            piece = piece[:len(piece) // 2] + random_dna(rng, 15) + reverse_complement(piece)
        else:
            piece = random_dna(rng, len(piece))
        targets.append(random_dna(rng, int(rng.integers(0, 40))) + piece
                       + random_dna(rng, int(rng.integers(0, 40))))
    targets[5], targets[11] = None, ""
    index = pd.Index([f"row{k}" for k in range(len(targets))])
    return queries, pd.Series(targets, index=index, dtype=object)


def better_of(plus: pd.DataFrame, minus: pd.DataFrame) -> pd.DataFrame:
    """Row by row the run scoring higher (plus on a tie), with the strand column after the
    positions, as strand="both" lays it out."""
    take_minus = (minus["score"] > plus["score"]).fillna(False).to_numpy(dtype=bool)
    frame = plus.copy()
    frame[take_minus] = minus[take_minus]
    strand = pd.array(np.where(take_minus, "-", "+"), dtype=pd.StringDtype("pyarrow"))
    strand[~(frame["score"] > 0).fillna(False).to_numpy(dtype=bool)] = pd.NA
    columns = list(plus.columns)
    after = max(columns.index(c) for c in ("score", "query_end", "target_end", "query_start",
                                           "target_start") if c in columns)
    frame.insert(after + 1, "strand", strand)
    return frame


def check_minus_cigars(frame: pd.DataFrame, queries, targets) -> int:
    """Every minus-strand row's CIGAR re-scores to its score on the reverse complement of its
    query from ``query_start`` against its target from ``target_start``, spanning both
    segments; the number of such rows."""
    minus = frame.index[(frame["strand"] == "-").fillna(False).to_numpy(dtype=bool)]
    for label in minus:
        row = frame.loc[label]
        query = DNA.canonical(reverse_complement(
            queries.loc[label] if isinstance(queries, pd.Series) else queries))
        target = DNA.canonical(targets.loc[label])
        score, i, j, _top, _bottom = walk(row["cigar"], query[row["query_start"]:],
                                          target[row["target_start"]:], DNA)
        assert (score, i, j) == (row["score"], row["query_end"] - row["query_start"],
                                 row["target_end"] - row["target_start"]), label
    return len(minus)


@pytest.mark.parametrize("positions", MODES)
def test_align_both_strands_equal_the_better_of_two_runs(planted, positions):
    queries, targets = planted
    for query in queries:
        got = targets.sw.align(query, strand="both", positions=positions, **KW)
        plus = targets.sw.align(query, positions=positions, **KW)
        minus = targets.sw.align(reverse_complement(query), positions=positions, **KW)
        want = better_of(plus, minus)
        pd.testing.assert_frame_equal(got, want)
        strands = set(got["strand"].dropna())
        assert strands == {"+", "-"}  # the fixture holds both kinds of best
        if positions == "alignment":
            assert check_minus_cigars(got, query, targets) > 5


@pytest.mark.parametrize("positions", MODES)
def test_align_pairs_both_strands_equal_the_better_of_two_runs(planted, positions):
    queries, targets = planted
    frame = pd.DataFrame({"read": [queries[k % 2] for k in range(len(targets))],
                          "contig": targets}, index=targets.index)
    frame.loc["row7", "read"] = None
    got = frame.sw.align_pairs("read", "contig", strand="both", positions=positions, **KW)
    plus = swdask.align_pairs(frame["read"], frame["contig"], positions=positions, **KW)
    reverse = frame["read"].map(lambda s: s if not isinstance(s, str) else reverse_complement(s))
    minus = swdask.align_pairs(reverse, frame["contig"], positions=positions, **KW)
    pd.testing.assert_frame_equal(got[list(got.columns[2:])], better_of(plus, minus))
    assert pd.isna(got.loc["row7", "score"]) and pd.isna(got.loc["row7", "strand"])
    if positions == "alignment":
        assert check_minus_cigars(got, frame["read"], targets) > 5


@pytest.mark.parametrize("kind", GPU_KINDS)
@pytest.mark.parametrize("positions", MODES)
def test_gpu_both_strands_equal_the_cpu(planted, positions, kind):
    """The GPU backend (host emulation; a real GPU on the device) gives what the CPU gives,
    for one query against the rows (its alignments traced on the GPU from a column of the
    two strands), for pairs and for the search."""
    queries, targets = planted
    options = dict(strand="both", positions=positions, **KW)
    with _gpu_runtime(kind):
        check_gpu_equals_cpu(queries, targets, options, positions)


def check_gpu_equals_cpu(queries, targets, options, positions):
    for query in queries:
        pd.testing.assert_frame_equal(targets.sw.align(query, backend="gpu", **options),
                                      targets.sw.align(query, backend="cpu", **options))
    reads = pd.Series([queries[k % 2] for k in range(len(targets))], index=targets.index)
    pd.testing.assert_frame_equal(
        swdask.align_pairs(reads, targets, backend="gpu", **options),
        swdask.align_pairs(reads, targets, backend="cpu", **options))
    if positions is not False:
        pd.testing.assert_frame_equal(
            targets.sw.search(queries, top=7, backend="gpu", **options),
            targets.sw.search(queries, top=7, backend="cpu", **options))


def ranked(plus: pd.DataFrame, minus: pd.DataFrame, top: int) -> pd.DataFrame:
    """Each target's better strand (plus on a tie) from the two searches of every row, ranked
    as the search ranks: score descending, then the rows' order."""
    both = pd.concat([plus.assign(strand="+", order=0), minus.assign(strand="-", order=1)])
    both = both.sort_values(["query_id", "target_index", "score", "order"],
                            ascending=[True, True, False, True], kind="stable")
    best = both.drop_duplicates(["query_id", "target_index"])
    best = best.assign(row=best["target_index"].str[3:].astype(int))
    best = best.sort_values(["query_id", "score", "row"], ascending=[True, False, True])
    best = best.groupby("query_id").head(top)
    return best


@pytest.mark.parametrize("positions", [True, "end", "alignment"])
def test_search_both_strands_equal_merging_two_searches(planted, positions):
    """The search's top hits with strand="both" are the best of every row's two strands, ranked
    once: the same rows, scores, positions and strands as two searches of every row (one per
    strand) merged by hand; on pandas and on Dask partitions."""
    queries, targets = planted
    top = 6
    got = targets.sw.search(queries, top=top, strand="both", positions=positions, **KW)
    every = len(targets)
    plus = targets.sw.search(queries, top=every, positions=positions, **KW)
    minus = targets.sw.search([reverse_complement(q) for q in queries], top=every,
                              positions=positions, **KW)
    want = ranked(plus, minus, top)
    assert list(got.columns[:3]) == ["query_id", "rank", "target_index"]
    assert got.columns[list(got.columns).index("score") + (1 if positions == "end" else 4)
                       + 1] == "strand" or positions == "end"
    for name in [c for c in plus.columns if c not in ("rank",)] + ["strand"]:
        assert got[name].tolist() == want[name].tolist(), name
    assert got["rank"].tolist() == [r for q in range(2) for r in
                                    range(1, (want["query_id"] == q).sum() + 1)]
    lazy = dd.from_pandas(targets.to_frame("sequence"), npartitions=3, sort=False)
    from_dask = lazy.sw.search(queries, top=top, strand="both", positions=positions,
                               **KW).compute()
    pd.testing.assert_frame_equal(from_dask.reset_index(drop=True), got)


def test_dask_align_both_strands(planted):
    queries, targets = planted
    lazy = dd.from_pandas(targets, npartitions=4, sort=False)
    got = lazy.sw.align(queries[0], strand="both", **KW)
    assert "strand" in got.columns
    pd.testing.assert_frame_equal(got.compute(),
                                  targets.sw.align(queries[0], strand="both", **KW),
                                  check_index_type=False)  # Dask's string index dtype


def nucleotide_matrix(path):
    """An NCBI-format matrix over the IUPAC letters (as NCBI's NUC.4.4 is)."""
    from tests.conftest import write_ncbi_matrix

    letters = "ATGCSWRYKMBVHDN"
    values = [[5 if a == b else (-4 if "N" not in (a, b) else -2) for b in letters]
              for a in letters]
    return write_ncbi_matrix(path, letters, values)


def test_reverse_complement_in_code_space_equals_encoding_the_text(tmp_path):
    """The engine reverse-complements encoded columns (nulls and empty rows kept); that
    equals encoding Biopython's reverse complement of every row, IUPAC codes and lower case
    included, for match/mismatch scoring (IUPAC codes read as N) and for a matrix over
    IUPAC letters; the text form (SAM's SEQ) equals Biopython's."""
    from swdask._scoring import make_scoring
    from swdask._sequences import encode, reverse_complement_text
    from swdask._sequences import reverse_complement as in_code_space

    rows = ["ACGTN", None, "", "acgtRYKMSWBDHVNryk", "T", "GATTACA"]
    for scoring in (make_scoring(None, match=1, mismatch=-1),
                    make_scoring(str(nucleotide_matrix(tmp_path / "nuc.txt")))):
        encoded = encode(rows, scoring)
        got = in_code_space(encoded, scoring)
        want = encode([None if r is None else reverse_complement(r) for r in rows], scoring)
        np.testing.assert_array_equal(got.residues, want.residues)
        np.testing.assert_array_equal(got.offsets, want.offsets)
        np.testing.assert_array_equal(got.valid, want.valid)
    for row in rows[2:]:
        assert reverse_complement_text(row) == reverse_complement(row)


def test_strand_both_on_a_nucleotide_matrix_file(tmp_path):
    """A nucleotide matrix file (IUPAC letters, as NCBI's NUC.4.4) takes strand="both": its
    complements stay letters of the matrix, and the result is the better of two runs."""
    path = nucleotide_matrix(tmp_path / "nuc.txt")
    targets = pd.Series(["GGGTTTRYCAAAGGG", "CCCTTTGRYAAACCC", "AAAA"])
    query = "TTTRYCAAA"
    options = dict(matrix=str(path), gap_open=10, gap_extend=1)
    got = targets.sw.align(query, strand="both", **options)
    want = better_of(targets.sw.align(query, **options),
                     targets.sw.align(reverse_complement(query), **options))
    pd.testing.assert_frame_equal(got, want)


def test_strand_errors_name_the_parameter():
    targets = pd.Series(["MKTAYIAK"])
    with pytest.raises(swdask.ScoringError, match="strand='both' is for DNA"):
        targets.sw.align("MKT", strand="both")
    with pytest.raises(ValueError, match="strand must be 'plus'.*'both'"):
        targets.sw.align("ACGT", matrix=None, match=1, mismatch=-1, strand="minus")
    with pytest.raises(swdask.ScoringError, match="strand='both' is for DNA"):
        targets.sw.search(["MKT"], strand="both")


def test_command_writes_minus_strand_hits_as_blast_and_sam_do(tmp_path, planted):
    """``swdask search --strand both``: blast6 gives a minus-strand hit's query positions on
    the query as given (qstart < qend) and sstart > send, the target positions of its TSV
    row; SAM gives it FLAG 16 (272 when secondary) and the read's reverse complement as SEQ,
    whose soft clips and CIGAR span it."""
    from swdask.cli import main

    queries, targets = planted
    (tmp_path / "q.fa").write_text("".join(f">q{k}\n{q}\n" for k, q in enumerate(queries)))
    (tmp_path / "db.fa").write_text("".join(f">{label}\n{seq}\n" for label, seq in
                                            targets.items() if seq))
    base = [str(tmp_path / "q.fa"), str(tmp_path / "db.fa"), "--dna", "--match", "2",
            "--mismatch", "-3", "--gap-open", "5", "--gap-extend", "2", "--strand", "both",
            "--top", "5", "--no-progress"]
    outputs = {fmt: tmp_path / f"hits.{fmt}" for fmt in ("tsv", "m8", "sam")}
    for fmt, path in outputs.items():
        extra = ["--alignment"] if fmt == "tsv" else []
        extra += ["--statistics", "search"] if fmt == "m8" else []
        assert main(["search", *base, *extra, "-o", str(path)]) == 0
    table = pd.read_csv(outputs["tsv"], sep="\t")
    blast = pd.read_csv(outputs["m8"], sep="\t", header=None)
    sam = [line.split("\t") for line in outputs["sam"].read_text().splitlines()
           if not line.startswith("@")]
    assert len(table) == len(blast) == len(sam) and (table["strand"] == "-").sum() >= 3
    lengths = {f"q{k}": len(q) for k, q in enumerate(queries)}
    for hit, blast_row, sam_row in zip(table.itertuples(), blast.itertuples(index=False), sam):
        length = lengths[hit.query_id]
        if hit.strand == "-":
            assert (blast_row[6], blast_row[7]) == (length - hit.query_end + 1,
                                                    length - hit.query_start)
            assert (blast_row[8], blast_row[9]) == (hit.target_end, hit.target_start + 1)
            read = reverse_complement(queries[int(hit.query_id[1:])])
        else:
            assert (blast_row[6], blast_row[7]) == (hit.query_start + 1, hit.query_end)
            assert (blast_row[8], blast_row[9]) == (hit.target_start + 1, hit.target_end)
            read = queries[int(hit.query_id[1:])]
        flag = int(sam_row[1])
        assert flag & 16 == (16 if hit.strand == "-" else 0)
        assert flag & 256 == (0 if hit.rank == 1 else 256)
        assert sam_row[9] == read and int(sam_row[3]) == hit.target_start + 1
        clip = f"{hit.query_start}S" if hit.query_start else ""
        assert sam_row[5].startswith(clip + hit.cigar)


def masked_as(sequence, letter: str):
    """``sequence`` with its lower-case letters written as ``letter`` (the reference)."""
    if not isinstance(sequence, str):
        return sequence
    return "".join(letter if c.islower() else c for c in sequence)


@pytest.mark.parametrize("kind", ["cpu", *GPU_KINDS])
def test_lowercase_mask_scores_soft_masked_letters_as_n(planted, kind):
    """``mask="lowercase"``: every lower-case letter of the query and the targets scores as
    N (X for protein), on every entry point and backend: the same frames as writing those
    letters as N beforehand, both strands too."""
    queries, targets = planted
    soft = targets.map(lambda s: s if not isinstance(s, str) else "".join(
        c.lower() if 20 <= k % 60 < 35 else c for k, c in enumerate(s)))
    query = queries[1][:40] + queries[1][40:70].lower() + queries[1][70:]
    hard = soft.map(lambda s: masked_as(s, "N"))
    context = _gpu_runtime(kind) if kind != "cpu" else contextlib.nullcontext()
    backend = "cpu" if kind == "cpu" else "gpu"
    with context:
        for strand in ("plus", "both"):
            options = dict(strand=strand, positions="alignment", backend=backend, **KW)
            got = soft.sw.align(query, mask="lowercase", **options)
            pd.testing.assert_frame_equal(got, hard.sw.align(masked_as(query, "N"), **options))
            assert (got["score"] < soft.sw.align(query, **options)["score"]).any()
            got = soft.sw.search([query, queries[0]], top=5, mask="lowercase", **options)
            want = hard.sw.search([masked_as(query, "N"), queries[0]], top=5, **options)
            pd.testing.assert_frame_equal(got, want)
        reads = pd.Series([query] * len(soft), index=soft.index)
        pd.testing.assert_frame_equal(
            swdask.align_pairs(reads, soft, mask="lowercase", backend=backend, **KW),
            swdask.align_pairs(reads.map(lambda s: masked_as(s, "N")), hard, backend=backend,
                               **KW))
    protein = pd.Series(["MKTAYIAKQRqisfvkSHFSRQ", None, "mktayiak"])
    pd.testing.assert_frame_equal(
        protein.sw.align("KQRQISFVKSHF", mask="lowercase"),
        protein.map(lambda s: masked_as(s, "X")).sw.align("KQRQISFVKSHF"))
    with pytest.raises(ValueError, match="mask must be None, 'lowercase' .* or 'dust'"):
        protein.sw.align("MKT", mask="dust!")
