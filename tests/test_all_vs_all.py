"""All against all (``swdask.all_vs_all``, ``.sw.all_vs_all``, ``swdask search DB DB
--all-vs-all``): each unordered pair scored once, and every row's hits equal those of the row
searched as a query against the whole column, its self hit left out."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import swdask
from swdask import _all_vs_all
from swdask._fasta import read_fasta_frame
from swdask.cli import main

from .test_traceback import _gpu_runtime

DB = Path(__file__).resolve().parents[1] / "examples" / "data" / "db.fasta"


def _rows(count: int) -> pd.DataFrame:
    """``count`` records of the example database (real UniProt proteins), their order
    shuffled so equal scores meet in other orders, with labels that are not positions, a
    null and an empty sequence, and a duplicate record (equal scores for two partners)."""
    frame = read_fasta_frame(str(DB), blocksize=None, threads=1)
    picked = frame.iloc[np.random.default_rng(3).permutation(len(frame))[:count]]
    picked = picked.reset_index(drop=True)
    picked.loc[4, "sequence"] = None
    picked.loc[9, "sequence"] = ""
    picked.loc[11, "sequence"] = picked.loc[12, "sequence"]
    picked.index = pd.Index(np.arange(len(picked)) * 10 + 5)
    return picked


def _searched(frame: pd.DataFrame, top: int, include_self: bool, **options) -> pd.DataFrame:
    """Every non-empty row searched as a query against the whole column (``.sw.search``),
    its self hit dropped unless ``include_self``, ranks renumbered: the reference."""
    queries = frame[frame["sequence"].str.len() > 0]
    found = frame.sw.search(queries, top=top + 1, keep=("id",), **options)
    own = dict(zip(queries["id"], queries.index))
    if not include_self:
        found = found[found["query_id"].map(own) != found["target_index"]]
    found = found.assign(rank=found.groupby("query_id", sort=False).cumcount() + 1)
    return found[found["rank"] <= top].reset_index(drop=True)


@pytest.mark.parametrize("include_self", [False, True])
@pytest.mark.parametrize("positions", [True, "alignment"])
def test_equals_every_row_searched(positions, include_self):
    """Blocks of 16 rows (diagonal and off-diagonal tasks, a last short block): the same
    frame as every row's search, hits, ranks, positions, alignments and E-values."""
    frame = _rows(70)
    got = frame.sw.all_vs_all(top=4, keep=("id",), include_self=include_self,
                              positions=positions)
    want = _searched(frame, 4, include_self, positions=positions)
    pd.testing.assert_frame_equal(got, want)
    assert set(got["query_id"]) <= set(frame["id"].dropna())
    assert frame.loc[45, "id"] not in set(got["query_id"])  # the null row has no hits
    assert (got["query_id"].map(dict(zip(frame["id"], frame.index))) ==
            got["target_index"]).any() == include_self


def test_block_size_and_tasks_do_not_change_the_hits():
    """One block, blocks of one row, and a Dask client running the named block tasks."""
    frame = _rows(30)
    want = swdask.all_vs_all(frame, top=3, block_rows=1000)
    pd.testing.assert_frame_equal(swdask.all_vs_all(frame, top=3, block_rows=1), want)
    tasks = _all_vs_all.pair_tasks(swdask._sequences.encode(frame["sequence"],
                                                            swdask.make_scoring()),
                                   [], "cpu", 3, False, 8)
    assert sorted(t.key for t in tasks) == sorted(
        f"all-vs-all-{a}-{b}" for a in range(4) for b in range(a, 4))
    from distributed import Client

    with Client(processes=False, n_workers=1, threads_per_worker=2,
                dashboard_address=":0") as client:
        pd.testing.assert_frame_equal(
            swdask.all_vs_all(frame, top=3, block_rows=7, client=client), want)


@pytest.mark.parametrize("mode", ["global", "overlap"])
def test_symmetric_end_to_end_modes(mode):
    """DNA in the symmetric end-to-end modes (scores may be negative: only rows above 0
    are hits, as in a search), a Series as input (ids: its index)."""
    rng = np.random.default_rng(5)
    base = "".join(rng.choice(list("ACGT"), 300))
    rows = [base[s:s + n] for s, n in zip(rng.integers(0, 150, 40), rng.integers(20, 150, 40))]
    column = pd.Series(rows, index=[f"r{k}" for k in range(len(rows))])
    options = dict(matrix=None, match=2, mismatch=-3, gap_open=5, gap_extend=2, mode=mode)
    got = column.sw.all_vs_all(top=3, **options)
    found = column.sw.search(column, top=4, **options)
    found = found[found["query_id"] != found["target_index"]]
    found = found.assign(rank=found.groupby("query_id", sort=False).cumcount() + 1)
    pd.testing.assert_frame_equal(got, found[found["rank"] <= 3].reset_index(drop=True))


def test_emulated_gpu_backend_gives_the_cpu_hits():
    """The GPU backend (host emulation in CI) through the same block tasks."""
    frame = _rows(24)
    want = swdask.all_vs_all(frame, top=3, block_rows=10, positions="alignment")
    with _gpu_runtime("emulation"):
        got = swdask.all_vs_all(frame, top=3, block_rows=10, positions="alignment",
                                backend="gpu")
    pd.testing.assert_frame_equal(got, want)


def test_refuses_what_is_not_symmetric():
    """One side's free ends, both strands and fitted statistics are refused by name."""
    rows = ["ACGTACGTAC", "ACGTTCGTAC", "TTGTACGAAC"]
    dna = dict(matrix=None, match=2, mismatch=-3)
    with pytest.raises(ValueError, match="mode='query-global'"):
        swdask.all_vs_all(rows, **dna, mode="query-global")
    with pytest.raises(ValueError, match="strand='both'"):
        swdask.all_vs_all(rows, **dna, strand="both")
    with pytest.raises(ValueError, match="statistics='search'"):
        swdask.all_vs_all(rows, **dna, statistics="search")
    with pytest.raises(ValueError, match="block_rows"):
        swdask.all_vs_all(rows, **dna, block_rows=0)
    with pytest.raises(KeyError, match="sequence"):
        swdask.all_vs_all(pd.DataFrame({"seq": rows}))


def test_search_command_all_vs_all(tmp_path, capsys):
    """``swdask search DB DB --all-vs-all`` writes what the plain search writes without the
    self hits; two different files are an error in one line."""
    frame = _rows(40).dropna()
    frame = frame[frame["sequence"].str.len() > 0]
    path = tmp_path / "db.fa"
    path.write_text("".join(f">{i}\n{s}\n" for i, s in zip(frame["id"], frame["sequence"])))
    base = ["--no-progress", "--backend", "cpu", "--top", "3"]
    assert main(["search", str(path), str(path), *base, "--all-vs-all",
                 "-o", str(tmp_path / "pairs.tsv")]) == 0
    assert main(["search", str(path), str(path), *base[:-1], "4",
                 "-o", str(tmp_path / "plain.tsv")]) == 0
    got = pd.read_csv(tmp_path / "pairs.tsv", sep="\t")
    want = pd.read_csv(tmp_path / "plain.tsv", sep="\t")
    want = want[want["query_id"] != want["target_id"]]
    want = want.assign(rank=want.groupby("query_id", sort=False).cumcount() + 1)
    pd.testing.assert_frame_equal(got, want[want["rank"] <= 3].reset_index(drop=True))
    other = tmp_path / "other.fa"
    other.write_text(path.read_text())
    capsys.readouterr()
    assert main(["search", str(path), str(other), *base, "--all-vs-all"]) == 1
    err = capsys.readouterr().err
    assert "same FASTA file" in err and "Traceback" not in err
