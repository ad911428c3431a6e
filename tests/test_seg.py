"""SEG masking of protein (``mask="seg"``): the intervals against NCBI's ``segmasker``, and what
masking does to the scores.

The reference is ``segmasker -outfmt interval`` (Debian's ``ncbi-blast+``) on every record of
mmseqs2's example database (``DB.fasta.gz``, 20,000 UniProt proteins; ``SWDASK_MMSEQS_DB``
names another copy), skipped where either is absent. Masked letters must score exactly as
the same letters written ``X``, on the CPU and the GPU (host emulation in CI).
"""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import dask.config
import pandas as pd
import pyarrow as pa
import pytest

import swdask
from swdask import ScoringError
from swdask._scoring import make_scoring
from swdask._seg import WINDOW, seg_intervals
from swdask._sequences import encode

from .test_dust import assert_command_masks_as_by_hand
from .test_traceback import _gpu_runtime

DB = Path(os.environ.get("SWDASK_MMSEQS_DB", "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz"))
DATA = Path(__file__).parent / "data"
HAVE_SEGMASKER = shutil.which("segmasker") is not None
UBIQUITIN = "MQIFVKTLTGKTITLEVEPSDTIENVKAKIQDKEGIPPDQQRLIFAGKQLEDGRTLSDYNIQKESTLHLVLRLRGG"
#: Small cases, each with segmasker's intervals (end-exclusive), checked against segmasker
#: again where it is installed.
CASES = {
    "plain protein": (UBIQUITIN, []),
    "poly-Q inside": (UBIQUITIN[:39] + "Q" * 20 + UBIQUITIN[39:], [(39, 61)]),
    "lower case": ((UBIQUITIN[:39] + "Q" * 20 + UBIQUITIN[39:]).lower(), [(39, 61)]),
    "one short of a window": ("Q" * (WINDOW - 1), []),
    "one window": ("Q" * WINDOW, [(0, WINDOW)]),
    # three X in a window take its complexity away: two overlapping segments, as segmasker
    "X inside": ("MQIFVKTLTGKTQQQQXQQXQQXQQQQQQTITLEVEPSDTIENV", [(12, 22), (17, 29)]),
    "empty": ("", []),
}


def _records(path: Path) -> list:
    """``(header, sequence)`` of every record (a header may hold ``>``, so records start at
    lines)."""
    opener = gzip.open if path.suffix == ".gz" else open
    records = []
    with opener(path, "rt") as handle:
        for line in handle:
            if line.startswith(">"):
                records.append((line[1:].strip(), []))
            elif records:
                records[-1][1].append(line.strip())
    return [(header, "".join(parts)) for header, parts in records]


def _segmasker(records: list, tmp_path: Path) -> list:
    """segmasker's intervals of each record, in its order (end-exclusive)."""
    path = tmp_path / "in.fa"
    path.write_text("".join(f">r{k}\n{seq}\n" for k, (_, seq) in enumerate(records)))
    out = subprocess.run(["segmasker", "-in", str(path), "-outfmt", "interval"],
                         check=True, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        if line.startswith(">"):
            found.append([])
        elif line.strip():
            start, end = line.split(" - ")
            found[-1].append((int(start), int(end) + 1))  # end-inclusive -> exclusive
    return found


@pytest.mark.skipif(not HAVE_SEGMASKER, reason="needs segmasker (apt install ncbi-blast+)")
@pytest.mark.skipif(not DB.exists(), reason=f"needs {DB} (apt install mmseqs2-examples)")
def test_intervals_equal_segmasker(tmp_path):
    """Every record's intervals equal segmasker's (window 12, locut 2.2, hicut 2.5), in its
    order, overlaps included; and the encoders' mask sets exactly their union to X."""
    records = _records(DB)
    want = _segmasker(records, tmp_path)
    assert len(want) == len(records)
    got = [seg_intervals(sequence) for _, sequence in records]
    differ = [k for k in range(len(records)) if got[k] != want[k]]
    assert not differ, f"{len(differ)} of {len(records)} records differ, first: " + "; ".join(
        f"{records[k][0].split()[0]}: swdask {got[k]}, segmasker {want[k]}" for k in differ[:3])
    assert sum(map(len, want)) > len(records)  # the data has low-complexity runs to find

    scoring = make_scoring("BLOSUM62")
    sequences = [sequence for _, sequence in records]
    plain = encode(pa.array(sequences, type=pa.large_string()), scoring)
    masked = encode(pa.array(sequences, type=pa.large_string()), scoring.seg_masked)
    assert (masked.offsets == plain.offsets).all()
    expected = plain.residues.copy()
    for k, intervals in enumerate(want):
        for start, end in intervals:
            expected[plain.offsets[k] + start:plain.offsets[k] + end] = scoring.alphabet.index("X")
    assert (masked.residues == expected).all()


@pytest.mark.parametrize("case", list(CASES))
def test_small_cases(case, tmp_path):
    sequence, want = CASES[case]
    assert seg_intervals(sequence) == want
    if HAVE_SEGMASKER and sequence:
        assert _segmasker([(case, sequence)], tmp_path) == [want]


def _masked_by_hand(sequence: str) -> str:
    letters = list(sequence)
    for start, end in seg_intervals(sequence):
        letters[start:end] = "X" * (end - start)
    return "".join(letters)


def _proteins() -> list:
    """Proteins with SEG intervals: the tests' subset of the database's records that have
    some, and each of a few with a poly-Q run put inside."""
    records = [seq for _, seq in _records(DATA / "proteins_db.fasta")]
    with_runs = [seq for seq in records if seg_intervals(seq)][:10]
    plain = [seq for seq in records if not seg_intervals(seq)][:4]
    return with_runs + [seq[:len(seq) // 2] + "Q" * 25 + seq[len(seq) // 2:] for seq in plain]


@pytest.mark.parametrize("kind", ["cpu", "emulation"])
def test_masked_letters_score_as_x(kind):
    """``mask="seg"`` gives every row the result of the same sequences with SEG's intervals
    written as X by hand: one query against many rows (nulls and empty rows too), the pairs,
    and a search; positions count the masked letters."""
    targets = _proteins()
    queries = [t[max(0, start - 40):end + 40] for t in targets
               for start, end in seg_intervals(t)[:1]]
    targets_x = [_masked_by_hand(t) for t in targets]
    queries_x = [_masked_by_hand(q) for q in queries]
    assert targets_x != targets and queries_x != queries
    backend = "cpu" if kind == "cpu" else "gpu"
    context = _gpu_runtime("emulation") if kind == "emulation" else dask.config.set({})
    with context:
        column = pd.Series(targets + [None, "", "MK"], dtype=object)
        by_hand = pd.Series(targets_x + [None, "", "MK"], dtype=object)
        got = column.sw.align(queries[-1], mask="seg", backend=backend)
        want = by_hand.sw.align(queries_x[-1], backend=backend)
        pd.testing.assert_frame_equal(got, want)
        assert got["score"].isna().tolist()[-3:] == [True, False, False]
        got = swdask.align_pairs(queries, targets[:len(queries)], mask="seg", backend=backend,
                                 positions="alignment")
        want = swdask.align_pairs(queries_x, targets_x[:len(queries)], backend=backend,
                                  positions="alignment")
        pd.testing.assert_frame_equal(got, want)
        got = pd.Series(targets).sw.search(queries, mask="seg", top=2, backend=backend)
        want = pd.Series(targets_x).sw.search(queries_x, top=2, backend=backend)
        pd.testing.assert_frame_equal(got, want)
    plain = swdask.align_pairs(queries, targets[:len(queries)])
    masked = swdask.align_pairs(queries, targets[:len(queries)], mask="seg")
    assert (plain["score"] > masked["score"]).any()


def test_search_command_masks_seg(tmp_path):
    """``swdask search --mask seg`` writes what a search of the masked files writes."""
    targets = _proteins()
    queries = [t[max(0, start - 30):end + 30] for t in targets
               for start, end in seg_intervals(t)[:1]]
    assert_command_masks_as_by_hand(tmp_path, queries, targets, _masked_by_hand, "seg", [])


def test_each_mask_is_for_its_alphabet():
    with pytest.raises(ScoringError, match="mask='seg' masks protein .* for DNA use "
                                           "mask='dust'"):
        swdask.align("ACGT", ["ACGT"], mask="seg", matrix=None, match=2, mismatch=-3)
    with pytest.raises(ScoringError, match="mask='dust' masks DNA .* for protein use "
                                           "mask='seg'"):
        swdask.align("MKT", ["MKT"], mask="dust")
    with pytest.raises(ValueError, match="mask must be None, .*'seg' \\(protein\\)"):
        swdask.align("MKT", ["MKT"], mask="SEG")
