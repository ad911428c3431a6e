"""Profile queries (``swdask.Profile``): PSI-BLAST's ASCII PSSMs read, and every score,
position and alignment equal to a pure-Python Smith-Waterman that scores with the profile,
on the CPU and on the GPU backend (host emulation in CI, the device in ci/gpu_run.sh)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import swdask
from swdask._profile import PSIBLAST_ALPHABET
from swdask._scoring import make_scoring
from swdask.cli import main

from .conftest import read_fasta
from .test_traceback import GPU_KINDS, _gpu_runtime

DATA = Path(__file__).resolve().parent / "data"
PSSMS = [DATA / "proteins_query_1.pssm", DATA / "proteins_query_2.pssm"]
NEG = -(1 << 40)
BLOSUM62 = make_scoring("BLOSUM62", gap_open=11, gap_extend=1)


def _db(count: int = 300) -> pd.Series:
    records = read_fasta(DATA / "proteins_db.fasta")[:count]
    return pd.Series([s for _, s in records], index=np.arange(len(records)) * 3 + 1)


def _rows_of(profile: swdask.Profile):
    """The profile's scores over BLOSUM62's letters (letters without a column: BLOSUM62's
    score of the position's own letter), ``rows[i][letter]``."""
    matrix = BLOSUM62.matrix
    out = []
    for i, own in enumerate(profile.consensus):
        row = {letter: int(matrix[BLOSUM62.alphabet.index(own), k])
               for k, letter in enumerate(BLOSUM62.alphabet)}
        row.update({letter: int(profile.scores[i, k])
                    for k, letter in enumerate(profile.alphabet)})
        out.append(row)
    return out


def _canonical(target: str) -> str:
    return "".join(c if c in BLOSUM62.alphabet else "X" for c in target.upper())


def reference(rows, target: str, gap_open: int, gap_extend: int):
    """``(score, query_start, query_end, target_start, target_end)`` by plain Python
    (Gotoh) scoring query position ``i`` against letter ``t`` as ``rows[i][t]``: the end the
    best cell in column-major order, the start the largest target start then query start
    among the alignments reaching the score from that end (the engines' tie rule,
    tests/conftest.py ``brute_force``); positions None where the score is 0."""
    t = _canonical(target)
    m, n = len(rows), len(t)
    h_prev = [0] * (n + 1)
    f_prev = [NEG] * (n + 1)
    best, end = 0, None
    cells = {}
    for i in range(1, m + 1):
        h_cur, f_cur = [0] * (n + 1), [NEG] * (n + 1)
        e = NEG
        row = rows[i - 1]
        for j in range(1, n + 1):
            e = max(h_cur[j - 1] - gap_open, e - gap_extend)
            f_cur[j] = max(h_prev[j] - gap_open, f_prev[j] - gap_extend)
            h_cur[j] = max(0, h_prev[j - 1] + row[t[j - 1]], e, f_cur[j])
            if h_cur[j] > 0:
                cells[(i, j)] = h_cur[j]
        h_prev, f_prev = h_cur, f_cur
    if cells:
        best = max(cells.values())
        end = min((j, i) for (i, j), v in cells.items() if v == best)
    if best <= 0:
        return 0, None, None, None, None
    end_j, end_i = end
    # global affine scores of the segments ending at the end cell, from it backwards
    a = rows[:end_i][::-1]
    b = t[:end_j][::-1]
    M = [[NEG] * (end_j + 1) for _ in range(end_i + 1)]
    X = [[NEG] * (end_j + 1) for _ in range(end_i + 1)]
    Y = [[NEG] * (end_j + 1) for _ in range(end_i + 1)]
    M[0][0] = 0
    for x in range(end_i + 1):
        for y in range(end_j + 1):
            if x and y:
                M[x][y] = max(M[x - 1][y - 1], X[x - 1][y - 1], Y[x - 1][y - 1]) + \
                    a[x - 1][b[y - 1]]
            if x:
                X[x][y] = max(M[x - 1][y] - gap_open, Y[x - 1][y] - gap_open,
                              X[x - 1][y] - gap_extend)
            if y:
                Y[x][y] = max(M[x][y - 1] - gap_open, X[x][y - 1] - gap_open,
                              Y[x][y - 1] - gap_extend)
    y, x = next((y, x) for y in range(1, end_j + 1) for x in range(1, end_i + 1)
                if max(M[x][y], X[x][y], Y[x][y]) == best)
    return best, end_i - x, end_i, end_j - y, end_j


def rescore(cigar: str, rows, consensus: str, target: str, query_start: int,
            target_start: int, gap_open: int, gap_extend: int):
    """A CIGAR's score under the profile, and whether each ``=``/``X`` says whether the
    position's own letter equals the target's."""
    t = _canonical(target)
    i, j, score, agree = query_start, target_start, 0, True
    for count, op in re.findall(r"(\d+)([=XID])", cigar):
        count = int(count)
        if op in "=X":
            for _ in range(count):
                score += rows[i][t[j]]
                agree &= (consensus[i] == t[j]) == (op == "=")
                i, j = i + 1, j + 1
        else:
            score -= gap_open + (count - 1) * gap_extend
            i, j = (i + count, j) if op == "I" else (i, j + count)
    return score, agree


def _check_frame(found: pd.DataFrame, profile: swdask.Profile, targets: pd.Series,
                 gap_open=11, gap_extend=1):
    rows = _rows_of(profile)
    for label, target in targets.items():
        got = found.loc[label]
        want = reference(rows, target, gap_open, gap_extend)
        values = (int(got["score"]),) + tuple(
            None if pd.isna(got[name]) else int(got[name])
            for name in ("query_start", "query_end", "target_start", "target_end"))
        assert values == want, (label, values, want)
        if want[0] and "cigar" in found.columns:
            score, agree = rescore(got["cigar"], rows, profile.consensus, target,
                                   want[1], want[3], gap_open, gap_extend)
            assert score == want[0] and agree, (label, got["cigar"])


@pytest.fixture(scope="module")
def profiles():
    return [swdask.Profile.read_pssm(path) for path in PSSMS]


def test_reads_psiblast_pssm(profiles):
    first = profiles[0]
    queries = read_fasta(DATA / "proteins_query.fasta")
    assert first.consensus == queries[0][1]
    assert profiles[1].consensus == queries[1][1]
    assert first.alphabet == PSIBLAST_ALPHABET
    assert first.scores.shape == (len(queries[0][1]), 20)
    # the first data line as psiblast wrote it
    line = next(line for line in PSSMS[0].read_text().splitlines()
                if line.split()[:1] == ["1"])
    assert first.scores[0].tolist() == [int(v) for v in line.split()[2:22]]


@pytest.mark.parametrize("runtime", [pytest.param(None, id="cpu")] + GPU_KINDS)
def test_scores_positions_and_alignments_equal_the_reference(profiles, runtime):
    """Both PSSMs against 40 database proteins (a null and an empty row among them): every
    score and position equals the reference, every CIGAR re-scores to its score under the
    profile; on the CPU and the GPU backend (its host emulation, and the device)."""
    targets = _db(40)
    column = pd.concat([targets, pd.Series([None, ""], index=[1000, 1001], dtype=object)])
    for profile in profiles:
        if runtime is not None:
            with _gpu_runtime(runtime):
                found = column.sw.align(profile, positions="alignment", backend="gpu")
                full = column.sw.align(profile, positions=True, backend="gpu")
            pd.testing.assert_frame_equal(full, found[full.columns.tolist()])
        else:
            found = column.sw.align(profile, positions="alignment", backend="cpu")
        assert found.index.equals(column.index)
        assert pd.isna(found.loc[1000, "score"]) and found.loc[1001, "score"] == 0
        assert pd.isna(found.loc[1000, "query_start"])
        _check_frame(found, profile, targets)


def test_random_profiles_with_large_scores_and_long_positions():
    """Random profiles, one of 300 positions (codes past a byte) and one whose scores pass
    the 16-bit lanes (the saturation check recomputes them wider), against rows that hold
    their strong diagonal: the reference's scores and positions, on both backends."""
    rng = np.random.default_rng(46)
    targets = _db(12)
    for length, scale in ((300, 1), (40, 900)):
        scores = rng.integers(-4, 3, size=(length, 20)) * scale
        consensus = "".join(PSIBLAST_ALPHABET[k] for k in rng.integers(20, size=length))
        for i, letter in enumerate(consensus):
            scores[i, PSIBLAST_ALPHABET.index(letter)] = 6 * scale
        profile = swdask.Profile.from_array(scores, consensus=consensus, name="random")
        column = pd.concat([targets, pd.Series([consensus[10:200] + "W" + consensus[:30]])],
                           ignore_index=True)
        cpu = column.sw.align(profile, positions="alignment", gap_open=11 * scale,
                              gap_extend=scale, backend="cpu")
        if length == 40:
            assert cpu["score"].max() > 1 << 15
        _check_frame(cpu, profile, column, 11 * scale, scale)
        with _gpu_runtime("emulation"):
            gpu = column.sw.align(profile, positions="alignment", gap_open=11 * scale,
                                  gap_extend=scale, backend="gpu")
        pd.testing.assert_frame_equal(gpu, cpu)


def test_a_profile_of_the_matrix_rows_is_the_plain_query():
    """A profile whose rows are BLOSUM62's rows of the query's letters gives the plain
    query's frame, alignments and aligned strings included."""
    query = read_fasta(DATA / "proteins_query.fasta")[1][1]
    columns = [BLOSUM62.alphabet.index(c) for c in PSIBLAST_ALPHABET]
    rows = BLOSUM62.matrix[[BLOSUM62.alphabet.index(c) for c in query]][:, columns]
    profile = swdask.Profile.from_array(rows, consensus=query)
    targets = _db(60)
    want = targets.sw.align(query, positions="alignment", aligned_strings=True)
    got = targets.sw.align(profile, positions="alignment", aligned_strings=True)
    pd.testing.assert_frame_equal(got, want)


def test_search_mixes_profiles_and_strings(profiles):
    """``.sw.search`` with two profiles and a plain query: each query's hits are its own
    ``.sw.align`` ranked, with E-values from BLOSUM62's published parameters (as psiblast
    uses them), on the CPU and under GPU emulation."""
    targets = _db()
    frame = pd.DataFrame({"sequence": targets})
    plain = read_fasta(DATA / "proteins_query.fasta")[2][1]
    queries = [profiles[0], plain, profiles[1]]
    hits = frame.sw.search(queries, top=5, positions="alignment")
    assert hits["query_id"].tolist() == sorted(hits["query_id"].tolist())
    assert hits["evalue"].notna().all()
    for number, query in enumerate(queries):
        own = hits[hits["query_id"] == number]
        aligned = targets.sw.align(query, positions="alignment")
        best = aligned.sort_values("score", ascending=False, kind="stable").head(5)
        assert own["score"].tolist() == best["score"].tolist()
        for _, hit in own.iterrows():
            row = aligned.loc[hit["target_index"]]
            assert hit["cigar"] == row["cigar"]
            assert hit["query_start"] == row["query_start"]
    with _gpu_runtime("emulation"):
        on_gpu = frame.sw.search(queries, top=5, positions="alignment", backend="gpu")
    pd.testing.assert_frame_equal(on_gpu, hits)


def test_dask_search_with_a_profile(profiles):
    """Through Dask (three partitions): the same hits as in memory."""
    import dask.dataframe as dd

    records = read_fasta(DATA / "proteins_db.fasta")
    frame = pd.DataFrame({"id": [name for name, _ in records],
                          "sequence": [sequence for _, sequence in records]})
    queries = [profiles[0], read_fasta(DATA / "proteins_query.fasta")[2][1]]
    want = frame.sw.search(queries, top=3, positions="alignment")
    got = dd.from_pandas(frame, npartitions=3).sw.search(queries, top=3,
                                                          positions="alignment").compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True),
                                  check_dtype=False)


def test_alternatives_with_a_profile(profiles):
    """Several alignments per target score with the profile: each re-scores to its score."""
    targets = _db(30)
    hits = pd.DataFrame({"sequence": targets}).sw.search(
        [profiles[1]], top=3, alignments_per_target=3)
    rows = _rows_of(profiles[1])
    for _, hit in hits.iterrows():
        target = targets.loc[hit["target_index"]]
        score, agree = rescore(hit["cigar"], rows, profiles[1].consensus, target,
                               int(hit["query_start"]), int(hit["target_start"]), 11, 1)
        assert score == hit["score"] and agree


def test_search_command_pssm(tmp_path, capsys):
    """``swdask search --pssm A --pssm B DB`` writes blast6 rows named after the files."""
    db = DATA / "proteins_db.fasta"
    out = tmp_path / "hits.b6"
    assert main(["search", "--pssm", str(PSSMS[0]), "--pssm", str(PSSMS[1]), str(db),
                 "--top", "3", "--format", "blast6", "-o", str(out), "--backend", "cpu",
                 "--no-progress"]) == 0
    lines = [line.split("\t") for line in out.read_text().splitlines()]
    assert [line[0] for line in lines] == ["proteins_query_1"] * 3 + ["proteins_query_2"] * 3
    records = read_fasta(db)
    frame = pd.DataFrame({"id": [name for name, _ in records],
                          "sequence": [sequence for _, sequence in records]})
    hits = frame.sw.search([swdask.Profile.read_pssm(path) for path in PSSMS], top=3,
                           keep=("id",))
    assert [line[1] for line in lines] == hits["id"].tolist()
    assert [float(line[11]) for line in lines] == pytest.approx(
        hits["bitscore"].round(1).tolist(), abs=0.051)
    capsys.readouterr()
    assert main(["search", "--pssm", str(PSSMS[0]), str(db), str(db), "--all-vs-all",
                 "-o", str(tmp_path / "x.tsv")]) == 1
    assert "--pssm" in capsys.readouterr().err


def test_bad_profiles_are_named(tmp_path):
    bad = tmp_path / "bad.pssm"
    bad.write_text("\nLast position-specific scoring matrix computed\n"
                   "    A R N D C Q E G H I L K M F P S T W Y V\n"
                   "    1 M -1 x -2 -3 -1 0 -2 -3 -2 1 2 -1 6 0 -3 -2 -1 -2 -1 1\n")
    with pytest.raises(swdask.ProfileError, match="bad.pssm, line 4"):
        swdask.Profile.read_pssm(bad)
    bad.write_text("no table here\n")
    with pytest.raises(swdask.ProfileError, match="no column header"):
        swdask.Profile.read_pssm(bad)
    with pytest.raises(swdask.ProfileError, match="cannot read"):
        swdask.Profile.read_pssm(tmp_path / "missing.pssm")
    with pytest.raises(swdask.ProfileError, match="shape"):
        swdask.Profile.from_array(np.zeros((3, 5)))
    with pytest.raises(swdask.ProfileError, match="integers"):
        swdask.Profile.from_array(np.full((3, 20), 0.5))
    profile = swdask.Profile.read_pssm(PSSMS[0])
    targets = _db(5)
    with pytest.raises(swdask.ScoringError, match="local mode"):
        targets.sw.align(profile, mode="global")
    with pytest.raises(ValueError, match="column 'R'"):
        pd.Series(["ACGT"]).sw.align(profile, matrix=None, match=1, mismatch=-1)
    with pytest.raises(ValueError, match="composition"):
        pd.DataFrame({"sequence": targets}).sw.search([profile], statistics="composition")


@pytest.mark.skipif(shutil.which("psiblast") is None or
                    not Path("/usr/share/doc/mmseqs2/example-data/DB.fasta.gz").exists(),
                    reason="needs ncbi-blast+ (psiblast) and mmseqs2-examples")
def test_psiblast_pssms_of_mmseqs2_queries(tmp_path):
    """PSSMs made by ``psiblast -num_iterations 2 -out_ascii_pssm`` from queries of
    mmseqs2's QUERY.fasta.gz against DB.fasta: every score and position equals the
    reference on a sample of DB.fasta, on the CPU and under GPU emulation."""
    import gzip

    example = Path("/usr/share/doc/mmseqs2/example-data")
    db_text = gzip.decompress((example / "DB.fasta.gz").read_bytes()).decode()
    (tmp_path / "db.fasta").write_text(db_text)
    subprocess.run(["makeblastdb", "-in", str(tmp_path / "db.fasta"), "-dbtype", "prot",
                    "-out", str(tmp_path / "db")], check=True, capture_output=True)
    (tmp_path / "query.fasta").write_bytes(gzip.decompress(
        (example / "QUERY.fasta.gz").read_bytes()))
    queries = read_fasta(tmp_path / "query.fasta")
    records = read_fasta(tmp_path / "db.fasta")
    rng = np.random.default_rng(48)
    picked = [records[k][1] for k in rng.choice(len(records), size=25, replace=False)
              if len(records[k][1]) <= 400]
    made = 0
    for name, sequence in queries[:12]:
        if not 30 <= len(sequence) <= 200:
            continue
        fasta = tmp_path / "q.fa"
        fasta.write_text(f">{name}\n{sequence}\n")
        pssm = tmp_path / f"q{made}.pssm"
        subprocess.run(["psiblast", "-query", str(fasta), "-db", str(tmp_path / "db"),
                        "-num_iterations", "2", "-out_ascii_pssm", str(pssm),
                        "-out", "/dev/null"], check=True, capture_output=True)
        if not pssm.exists():
            continue
        profile = swdask.Profile.read_pssm(pssm)
        assert profile.consensus == sequence.upper()
        # the hits of the query itself among the targets, so that some score high
        targets = pd.Series(picked + [sequence[5:]])
        cpu = targets.sw.align(profile, positions="alignment", backend="cpu")
        _check_frame(cpu, profile, targets)
        with _gpu_runtime("emulation"):
            gpu = targets.sw.align(profile, positions="alignment", backend="gpu")
        pd.testing.assert_frame_equal(gpu, cpu)
        made += 1
        if made == 3:
            break
    assert made == 3
