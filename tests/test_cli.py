"""The ``swdask search`` command: in-process and as a subprocess, on the example data, on a
LocalCluster of 2 worker processes with 1 thread each.

Expected hits come from the pandas path: the database parsed by Biopython, ``s.sw.align`` per
query, zero scores dropped, a stable sort by score (so equal scores keep database order), the
first ``top`` rows. The best hit of each query is also rescored by Biopython's aligner.
"""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from Bio.SeqIO.FastaIO import SimpleFastaParser

import swdask  # noqa: F401  (registers the .sw accessor used by the reference)
from swdask._cluster import cluster
from swdask._search import HIT_COLUMNS, output_format
from swdask.cli import main

from .conftest import Scheme, biopython_score

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "data"
QUERIES = EXAMPLES / "queries.fasta"
DB = EXAMPLES / "db.fasta"
POSITIONS = ["query_start", "query_end", "target_start", "target_end"]


def records(path) -> list[tuple[str, str, str]]:
    """(id, description, sequence) by Biopython."""
    with open(path) as handle:
        out = []
        for title, sequence in SimpleFastaParser(handle):
            words = title.split(None, 1)
            out.append((words[0], words[1].strip() if len(words) > 1 else "", sequence))
        return out


def expected_hits(queries_path, db_path, top, **options) -> pd.DataFrame:
    targets = records(db_path)
    sequences = pd.Series([s for _, _, s in targets])
    frames = []
    for query_id, _, query in records(queries_path):
        aligned = sequences.sw.align(query, **options)
        aligned = aligned[aligned["score"] > 0]
        best = aligned.sort_values("score", ascending=False, kind="stable").head(top)
        frames.append(pd.DataFrame({
            "query_id": query_id,
            "rank": range(1, len(best) + 1),
            "target_id": [targets[k][0] for k in best.index],
            "score": best["score"].astype(int).tolist(),
            **{c: best[c].astype(int).tolist() for c in POSITIONS},
            "target_description": [targets[k][1] for k in best.index],
        }))
    return pd.concat(frames, ignore_index=True)


def read_tsv(path_or_text, sep="\t") -> pd.DataFrame:
    strings = {"query_id": str, "target_id": str, "target_description": str}
    return pd.read_csv(path_or_text, sep=sep, dtype=strings, keep_default_na=False)


def check_hits(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    # bit scores and E-values follow the score where the scoring has published statistics
    # (tests/test_statistics.py checks their values)
    statistics = [c for c in ("bitscore", "evalue") if c in got.columns]
    assert list(got.columns) == (list(HIT_COLUMNS[:4]) + statistics
                                 + list(HIT_COLUMNS[4:]))
    assert len(got) == len(expected)
    for column in HIT_COLUMNS:
        assert [str(v) if isinstance(v, str) else int(v) for v in got[column]] == \
               [str(v) if isinstance(v, str) else int(v) for v in expected[column]], column


@pytest.fixture(scope="module")
def scheduler():
    """A LocalCluster of 2 worker processes, 1 thread each, started by the cluster helper."""
    with cluster(n_workers=2, threads_per_worker=1, gpu=False, dashboard_address=":0",
                 report=None) as client:
        yield client


def test_help():
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    result = subprocess.run([sys.executable, "-m", "swdask", "search", "--help"], cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for option in ("--top", "--matrix", "--gap-open", "--gap-extend", "--dna", "--match",
                   "--mismatch", "--on-unknown", "--blocksize", "--workers", "--scheduler",
                   "--no-progress", "-o", "end-exclusive"):
        assert option in result.stdout, option


def test_search_in_process_tsv(scheduler, tmp_path, capsys):
    output = tmp_path / "hits.tsv"
    code = main(["search", str(QUERIES), str(DB), "--top", "10", "-o", str(output),
                 "--no-progress", "--scheduler", scheduler.scheduler.address,
                 "--blocksize", "300kB"])
    assert code == 0, capsys.readouterr().err
    got = read_tsv(output)
    expected = expected_hits(QUERIES, DB, 10)
    check_hits(got, expected)
    assert got["query_id"].nunique() == 2 and (got.groupby("query_id").size() == 10).all()
    # the best hit of each query, rescored by an exact reference outside swdask
    targets = {i: s for i, _, s in records(DB)}
    queries = {i: s for i, _, s in records(QUERIES)}
    for row in got[got["rank"] == 1].itertuples():
        assert row.score == biopython_score(queries[row.query_id], targets[row.target_id], Scheme())


def test_search_subprocess_parquet_on_its_own_cluster(tmp_path):
    output = tmp_path / "hits.parquet"
    result = subprocess.run(
        [sys.executable, "-m", "swdask", "search", str(QUERIES), str(DB), "--top", "7",
         "-o", str(output), "--workers", "2"],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
        text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "LocalCluster of 2 worker(s), 2 thread(s)" in result.stderr
    assert "100%" in result.stderr  # the progress bar, on stderr
    assert result.stdout == ""
    got = pd.read_parquet(output)
    check_hits(got, expected_hits(QUERIES, DB, 7))
    assert got["score"].dtype == "Int64"


def test_search_subprocess_in_this_process_streams_and_ends_whole(tmp_path):
    """The CPU job with no cluster, as from the shell: the database streams through in
    partitions (a progress bar counts them on stderr), no Dask graph is built
    (dask.dataframe never imported), and the process, which skips the interpreter's
    finalisation, still ends with every hit on stdout and status 0."""
    code = ("import sys, runpy\n"
            "sys.argv = ['swdask', 'search', %r, %r, '--top', '9', '-o', '-', "
            "'--blocksize', '100kB']\n"
            "import atexit\n"
            "atexit.register(lambda: sys.stderr.write('modules: %%s\\n' %% [m for m in "
            "('dask.dataframe', 'distributed') if m in sys.modules]))\n"
            "runpy.run_module('swdask', run_name='__main__')\n" % (str(QUERIES), str(DB)))
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "partitions" in result.stderr and "100%" in result.stderr
    assert "modules: []" in result.stderr  # the atexit handlers ran, and found no Dask graph
    got = pd.read_csv(io.StringIO(result.stdout), sep="\t")
    check_hits(got, expected_hits(QUERIES, DB, 9))


@pytest.mark.parametrize("where", [[], ["--workers", "1"]], ids=["in-process", "cluster"])
def test_a_bad_database_record_is_named_on_every_path(tmp_path, capsys, where):
    """A database record holding '-' stops the job with one line naming the record by its
    id and number, in this process (streamed partitions) as on a cluster, and no output."""
    db = tmp_path / "db.fa"
    db.write_text(">ok1\nMKTAYIAK\n>aligned_7 from an MSA\nMKT-AYIAK\n>ok2\nMKV\n")
    queries = tmp_path / "q.fa"
    queries.write_text(">q\nMKTAY\n")
    out = tmp_path / "hits.tsv"
    assert main(["search", str(queries), str(db), "-o", str(out), "--no-progress",
                 *where]) == 1
    err = capsys.readouterr().err
    assert "record 'aligned_7' (number 1 of the database)" in err and "--strip-gaps" in err
    assert "Traceback" not in err and not out.exists()


def test_ties_rank_by_database_order_across_partitions(scheduler, tmp_path):
    """Identical targets score the same; they must be ranked in database order, also when
    they sit in different partitions (tiny blocksize)."""
    query = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ"
    decoy = "GGGGSGGGGSGGGGS"
    names = []
    lines = []
    for k in range(12):
        name = f"t{k:02d}"
        sequence = query[3:25] if k % 3 == 0 else decoy
        names.append((name, sequence))
        lines += [f">{name} copy {k}", sequence]
    db = tmp_path / "ties.fasta"
    db.write_text("\n".join(lines) + "\n")
    queries = tmp_path / "q.fasta"
    queries.write_text(f">q\n{query}\n")
    output = tmp_path / "hits.csv"
    code = main(["search", str(queries), str(db), "--top", "3", "-o", str(output),
                 "--no-progress", "--scheduler", scheduler.scheduler.address,
                 "--blocksize", "40"])
    assert code == 0
    got = read_tsv(output, sep=",")
    identical = [name for name, sequence in names if sequence == query[3:25]]
    assert got["target_id"].tolist() == identical[:3]
    assert got["rank"].tolist() == [1, 2, 3]
    assert got["score"].nunique() == 1
    check_hits(got, expected_hits(queries, db, 3))


def test_dna_search_to_stdout(scheduler, tmp_path, capsys):
    dna = "ACGTTGCAAGGCTTACCGATTAGCCATGACGTACGTTAGCATCGATCGGATCCA"
    db = tmp_path / "dna.fasta"
    db.write_text(">d1\n" + dna[5:40] + "\n>d2 reverse\n" + dna[::-1] + "\n>d3\nNNNN\n"
                  ">d4 mutated\n" + dna[:20] + "TT" + dna[20:45] + "\n")
    queries = tmp_path / "q.fasta"
    queries.write_text(">q1\n" + dna[:30].lower() + "\n>q2 short\nGATTAGCCATG\n")
    options = ["--dna", "--match", "2", "--mismatch", "-3", "--gap-open", "5", "--gap-extend", "2"]
    code = main(["search", str(queries), str(db), "--top", "10", "--no-progress",
                 "--scheduler", scheduler.scheduler.address, *options])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    from io import StringIO

    got = read_tsv(StringIO(captured.out))
    expected = expected_hits(queries, db, 10, matrix=None, match=2, mismatch=-3, gap_open=5,
                             gap_extend=2)
    check_hits(got, expected)
    assert set(got["query_id"]) == {"q1", "q2"}
    assert "d3" not in set(got["target_id"])  # all N: score 0, not a hit
    assert (got["score"] > 0).all()


def test_empty_database_is_an_error(scheduler, tmp_path, capsys):
    """An empty database is said to be empty (exit 1) rather than written as no hits."""
    db = tmp_path / "empty.fasta"
    db.write_text("")
    output = tmp_path / "hits.tsv"
    code = main(["search", str(QUERIES), str(db), "-o", str(output), "--no-progress",
                 "--scheduler", scheduler.scheduler.address])
    assert code == 1 and not output.exists()
    assert "empty" in capsys.readouterr().err


def test_malformed_database_line_is_reported_from_the_workers(scheduler, tmp_path, capsys):
    """An error found inside a worker's partition comes back with the file and line."""
    lines = DB.read_text().splitlines()
    bad_line = 2 * 1500 + 1  # a header line far into the file (one sequence line per record)
    assert lines[bad_line - 1].startswith(">")
    lines[bad_line - 1] = ">"
    db = tmp_path / "broken.fasta"
    db.write_text("\n".join(lines) + "\n")
    code = main(["search", str(QUERIES), str(db), "--no-progress", "--blocksize", "100kB",
                 "--scheduler", scheduler.scheduler.address])
    assert code == 1
    err = capsys.readouterr().err
    assert f"{db}, line {bad_line}: header '>' without an id" in err


def test_cluster_helper_shares_the_cores(scheduler):
    workers = scheduler.nthreads()
    assert len(workers) == 2 and set(workers.values()) == {1}
    numba_threads = scheduler.run(lambda: os.environ.get("NUMBA_NUM_THREADS"))
    cores = len(os.sched_getaffinity(0))
    assert set(numba_threads.values()) == {str(max(1, cores // 2))}


# ------------------------------------------------------------------ errors (no cluster starts)


@pytest.mark.parametrize("extra, message", [
    (["--matrix", "BLOSUM63"], "matrix='BLOSUM63'"),
    (["--blocksize", "lots"], "blocksize"),
    (["--gap-open", "-2"], "gap_open"),
    (["-o", "hits.xlsx"], "suffix"),
])
def test_bad_options_are_reported(tmp_path, capsys, extra, message):
    code = main(["search", str(QUERIES), str(DB), *extra])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("swdask: error:") and message in err
    assert "LocalCluster" not in err


@pytest.mark.parametrize("extra", [
    ["--match", "2"], ["--dna", "--matrix", "BLOSUM62"], ["--top", "0"],
    ["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], ["--backend", "tpu"],
])
def test_usage_errors_exit_2(extra, capsys):
    # argparse's usage errors (--backend lists auto, cpu, gpu, cudf)
    with pytest.raises(SystemExit) as info:
        main(["search", str(QUERIES), str(DB), *extra])
    assert info.value.code == 2


def test_malformed_query_file_names_the_line(tmp_path, capsys):
    queries = tmp_path / "q.fasta"
    queries.write_text(">q1\nMKV\n>\nMKV\n")
    assert main(["search", str(queries), str(DB)]) == 1
    err = capsys.readouterr().err
    assert f"{queries}, line 3: header '>' without an id" in err


def test_empty_query_sequence_names_the_query(tmp_path, capsys):
    queries = tmp_path / "q.fasta"
    queries.write_text(">q1\nMKV\n>q2 nothing\n")
    assert main(["search", str(queries), str(DB)]) == 1
    err = capsys.readouterr().err
    assert "query 'q2'" in err and "empty" in err
    assert "LocalCluster" not in err


def test_missing_database_file(tmp_path, capsys):
    assert main(["search", str(QUERIES), str(tmp_path / "missing.fasta")]) == 1
    err = capsys.readouterr().err
    assert "missing.fasta" in err
    assert "LocalCluster" not in err


def test_output_formats():
    assert output_format("-") == "tsv"
    assert output_format("x/hits.TSV") == "tsv"
    assert output_format("hits.tsv.gz") == "tsv"
    assert output_format("hits.csv") == "csv"
    assert output_format("hits.parquet") == "parquet"
    with pytest.raises(ValueError, match="suffix"):
        output_format("hits.parquet.gz")


def test_cluster_helper_arguments():
    with pytest.raises(ValueError, match="local cluster"):
        with cluster("tcp://127.0.0.1:1", n_workers=2):
            pass
    with pytest.raises(ValueError, match="gpu"):
        with cluster(gpu="yes"):
            pass
    try:
        import dask_cuda  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="dask_cuda"):
            with cluster(gpu=True):
                pass


def test_process_age_lies_within_the_process_lifetime():
    """The ``imports`` phase's clock: the age a new process reports of itself after sleeping
    0.3 s is at least that, and at most the wall clock seen from outside, from before it was
    started to after it ended (psutil's create_time, whole-second boot time, gave up to a
    second more)."""
    import subprocess
    import time

    code = ("import time; time.sleep(0.3); from swdask._search import process_age; "
            "print(process_age())")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    outside = time.perf_counter() - start
    age = float(done.stdout.strip())
    assert 0.3 <= age <= outside + 0.02, (age, outside)


def test_search_function_rejects_an_unknown_backend():
    from swdask._search import search

    with pytest.raises(ValueError, match="backend must be 'auto', 'cpu', 'gpu' or 'cudf'"):
        search(QUERIES, DB, backend="tpu", progress=False)


def _files_in_form(tmp_path, count: int, form: str, bad: int):
    """``(records, database, the same as plain text, queries)``: the first ``count`` records of
    DB as a database file in ``form`` ("plain"; "gzip": compressed; "crlf": \\r\\n line
    ends; "gap": record ``bad`` holds a '-', which is no residue) and 2 queries."""
    import gzip

    chosen = records(DB)[:count]
    if form == "gap":
        chosen[bad] = (chosen[bad][0], "", chosen[bad][2][:20] + "-" + chosen[bad][2][20:])
    newline = "\r\n" if form == "crlf" else "\n"
    text = "".join(f">{name} {description}{newline}{sequence}{newline}"
                   for name, description, sequence in chosen)
    db = tmp_path / ("db.fasta.gz" if form == "gzip" else "db.fasta")
    db.write_bytes(gzip.compress(text.encode()) if form == "gzip" else text.encode())
    plain = tmp_path / "plain.fasta"
    plain.write_text(text.replace("\r\n", "\n"))
    queries = tmp_path / "q.fasta"
    queries.write_text("".join(f">{name}\n{sequence[:60]}\n"
                               for name, _, sequence in records(QUERIES)[:2]))
    return chosen, db, plain, queries


def _recording_frame_reads(monkeypatch) -> list:
    """The paths read_fasta_frame is called on from now on (it still reads them)."""
    from swdask import _fasta

    calls, real = [], _fasta.read_fasta_frame

    def recording(path, *args, **kwargs):
        calls.extend(map(str, path) if isinstance(path, (list, tuple)) else [str(path)])
        return real(path, *args, **kwargs)

    monkeypatch.setattr(_fasta, "read_fasta_frame", recording)
    return calls


@pytest.mark.skipif(__import__("swdask.gpu._runtime", fromlist=["x"]).host_compiler() is None,
                    reason="the host emulation needs g++")
def test_one_local_gpu_runs_in_this_process(tmp_path, capsys, monkeypatch, setting):
    """--backend gpu on a machine with one GPU and no cluster asked for: no cluster, the
    plain database parsed where the GPU's arrays are (no frame), searched in this process,
    its phases printed; the hits equal the expected ones (the GPU kernels run in the host
    emulation)."""
    import swdask._cluster as cluster_module

    setting("gpu.runtime", "emulation")
    monkeypatch.setattr(cluster_module, "local_gpu_count", lambda: 1)
    started = []
    monkeypatch.setattr(cluster_module, "cluster", lambda *a, **k: started.append(a))
    framed = _recording_frame_reads(monkeypatch)
    db = tmp_path / "db.fasta"
    db.write_text("".join(f">{name} {description}\n{sequence}\n"
                          for name, description, sequence in records(DB)[:12]))
    queries = tmp_path / "q.fasta"
    queries.write_text("".join(f">{name}\n{sequence[:60]}\n"
                               for name, _, sequence in records(QUERIES)[:2]))
    out = tmp_path / "hits.tsv"
    assert main(["search", str(queries), str(db), "--top", "4", "-o", str(out),
                 "--backend", "gpu", "--blocksize", "200", "--verbose"]) == 0
    assert not started  # no cluster was started
    err = capsys.readouterr().err
    assert "in this process on one GPU" in err
    assert all(f"{phase} " in err for phase in ("queries", "read", "parse", "search", "write"))
    assert str(db) not in framed
    check_hits(read_tsv(out), expected_hits(queries, db, 4))


@pytest.mark.skipif(__import__("swdask.gpu._runtime", fromlist=["x"]).host_compiler() is None,
                    reason="the host emulation needs g++")
@pytest.mark.parametrize("form", ["plain", "gzip", "gap", "crlf"])
def test_several_local_gpus_share_the_queries(tmp_path, capsys, monkeypatch, setting, form):
    """--backend gpu on a machine with 3 GPUs and no cluster asked for: GPU 0 in this
    process, a spawned process for each other (the host emulation pretends to have 3; the
    settings reach the processes), each reading the whole database on its own device and
    taking batches of the queries (the job lists them: every query searched once); the hits
    equal the expected ones. A plain file is parsed on the GPUs; a compressed one, or one
    outside the plain form (\r\n), by the reader; a record with a byte that is no residue
    ('-') is named in one line, exit status 1. The processes start with small arguments only
    (numbers and the queues): Process.start waits until the new interpreter has read its
    arguments, and a frame there waited for that process to import pandas."""
    import multiprocessing

    import swdask._cluster as cluster_module
    import swdask._local_gpus as local_gpus

    process_class = multiprocessing.get_context("spawn").Process
    start, started_with = process_class.start, []

    def recording_start(process):
        started_with.append(process._args)
        return start(process)

    monkeypatch.setattr(process_class, "start", recording_start)

    setting("gpu.runtime", "emulation")
    setting("emulation.devices", 3)
    monkeypatch.setattr(cluster_module, "local_gpu_count", lambda: 3)
    monkeypatch.setattr(local_gpus, "MIN_BATCH_RESIDUES", 1)  # batches of one query or two
    started = []
    monkeypatch.setattr(cluster_module, "cluster", lambda *a, **k: started.append(a))
    chosen, db, plain, _ = _files_in_form(tmp_path, 12, form, bad=10)
    queries = tmp_path / "q6.fasta"  # six queries: several batches
    queries.write_text("".join(f">q{k}\n{sequence[:60]}\n"
                               for k, (_, _, sequence) in enumerate(records(DB)[20:26])))
    out = tmp_path / "hits.tsv"
    framed = _recording_frame_reads(monkeypatch)
    code = main(["search", str(queries), str(db), "--top", "4", "-o", str(out),
                 "--backend", "gpu", "--verbose"])
    err = capsys.readouterr().err
    assert not started  # no Dask cluster
    if form == "gap":
        assert code == 1 and f"record {chosen[10][0]!r}" in err and "'-'" in err, err
        assert "Traceback" not in err and not out.exists()
        return
    assert code == 0, err
    assert "on 3 GPUs" in err
    assert len(started_with) == 2
    assert all(isinstance(argument, int)
               or type(argument).__module__.startswith("multiprocessing.")
               for arguments in started_with for argument in arguments), started_with
    shares = re.findall(r"GPU (\d+): (\d+) queries", err)
    assert sorted(int(device) for device, _ in shares) == [0, 1, 2], err
    assert sum(int(count) for _, count in shares) == 6
    assert (str(db) in framed) == (form in ("gzip", "crlf"))  # the reader, in this process
    assert all(f"{phase} " in err for phase in ("queries", "parse" if form == "plain" else
                                                 "read", "search", "write"))
    check_hits(read_tsv(out), expected_hits(queries, plain, 4))


@pytest.mark.skipif(__import__("swdask.gpu._runtime", fromlist=["x"]).host_compiler() is None,
                    reason="the host emulation needs g++")
@pytest.mark.parametrize("case", ["early", "fewer", "bad query"])
def test_further_gpus_start_before_the_queries_are_read(tmp_path, capsys, monkeypatch,
                                                        setting, case):
    """The several-GPU job spawns its further GPUs' processes before it reads the queries
    (_local_gpus.FurtherGpus: they start their interpreters beside the read and the
    driver's start). Where the driver then counts fewer GPUs than the quick count, those
    processes end and the right number start; where the job fails first (a bad query), they
    end too: no process is left waiting for work. The hits equal the expected ones."""
    import multiprocessing

    import swdask._cluster as cluster_module
    import swdask._local_gpus as local_gpus
    import swdask._search as search_module

    events, processes = [], []
    process_class = multiprocessing.get_context("spawn").Process
    start = process_class.start

    def recording_start(process):
        events.append("spawn")
        processes.append(process)
        return start(process)

    read_queries = search_module.read_queries

    def recording_read(*args, **kwargs):
        events.append("queries")
        return read_queries(*args, **kwargs)

    from swdask.gpu import _runtime

    start_driver = _runtime.start_driver

    def recording_driver(device=0):
        events.append(f"driver {device}")
        return start_driver(device)

    monkeypatch.setattr(process_class, "start", recording_start)
    monkeypatch.setattr(search_module, "read_queries", recording_read)
    monkeypatch.setattr(_runtime, "start_driver", recording_driver)
    setting("gpu.runtime", "emulation")
    setting("emulation.devices", 3)
    monkeypatch.setattr(cluster_module, "local_gpu_count", lambda: 2 if case == "fewer" else 3)
    monkeypatch.setattr(local_gpus, "MIN_BATCH_RESIDUES", 1)
    queries = tmp_path / "q.fasta"
    body = "".join(f">q{k}\n{sequence[:60]}\n"
                   for k, (_, _, sequence) in enumerate(records(DB)[20:24]))
    queries.write_text(body + (">bad\nMK1LV\n" if case == "bad query" else ""))
    out = tmp_path / "hits.tsv"
    code = main(["search", str(queries), str(DB), "--top", "3", "-o", str(out),
                 "--backend", "gpu"])
    err = capsys.readouterr().err
    # GPU 0's driver, then the further processes, before the queries' read
    assert events[:4] == ["driver 0", "spawn", "spawn", "queries"], events
    for process in processes:  # every process ends: with its hits, or told to
        process.join(timeout=60)
        assert process.exitcode == 0, (case, process.name, process.exitcode)
    if case == "bad query":
        assert code == 1 and "'bad'" in err and "Traceback" not in err, err
        assert len(processes) == 2 and not out.exists()
        return
    assert code == 0, err
    gpus = 2 if case == "fewer" else 3
    assert f"on {gpus} GPUs" in err
    assert len(processes) == (2 if case == "early" else 3)  # 2 early (+ 1 for two GPUs)
    check_hits(read_tsv(out), expected_hits(queries, DB, 3))


def test_quick_gpu_count_reads_the_driver_and_cuda_visible_devices(monkeypatch, setting):
    """The count that starts further GPUs' processes early: the NVIDIA driver's list of GPUs,
    at most as many as CUDA_VISIBLE_DEVICES names (up to its first invalid entry), 0 with
    no driver; the emulation's own setting under the emulation."""
    import swdask._local_gpus as local_gpus

    setting("gpu.runtime", "cuda")
    listed = ["0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:00.0"]
    listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: listed
                        if path == "/proc/driver/nvidia/gpus" else listdir(path))
    for visible, expected in ((None, 4), ("0,1", 2), ("2", 1), ("0,-1,3", 1), ("", 0),
                              ("0,1,2,3,4,5", 4), ("GPU-1a2b,GPU-3c4d", 2)):
        if visible is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        assert local_gpus.quick_gpu_count() == expected, visible

    def no_driver(path):
        raise FileNotFoundError(path)

    monkeypatch.setattr(os, "listdir", no_driver)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert local_gpus.quick_gpu_count() == 0
    setting("gpu.runtime", "emulation")
    setting("emulation.devices", 3)
    assert local_gpus.quick_gpu_count() == 3


def test_start_driver_starts_cuda_without_cupy(monkeypatch, setting):
    """start_driver calls the driver library itself on a thread (cuInit, the device, its
    primary context, which it keeps), says nothing where the library or the device is
    missing, and does nothing under the host emulation."""
    import ctypes

    from swdask.gpu import _runtime

    calls = []

    class Driver:  # libcuda.so.1's three functions, as ctypes calls them
        def __init__(self, failing=None):
            self.failing = failing

        def _result(self, name):
            return 100 if name == self.failing else 0  # 100: CUDA_ERROR_NO_DEVICE

        def cuInit(self, flags):
            calls.append(("cuInit", flags))
            return self._result("cuInit")

        def cuDeviceGet(self, handle, ordinal):
            calls.append(("cuDeviceGet", ordinal))
            handle._obj.value = 40 + ordinal
            return self._result("cuDeviceGet")

        def cuDevicePrimaryCtxRetain(self, context, handle):
            calls.append(("cuDevicePrimaryCtxRetain", handle.value))
            context._obj.value = 0xC0
            return self._result("cuDevicePrimaryCtxRetain")

    def library(failing=None):
        def load(name):
            assert name == "libcuda.so.1"
            if failing == "load":
                raise OSError(f"{name}: cannot open shared object file")
            return Driver(failing)
        return load

    setting("gpu.runtime", "cuda")
    monkeypatch.setattr(_runtime, "_RETAINED", [])
    monkeypatch.setattr(ctypes, "CDLL", library())
    _runtime.start_driver(2).join(timeout=10)
    assert calls == [("cuInit", 0), ("cuDeviceGet", 2), ("cuDevicePrimaryCtxRetain", 42)]
    assert [context.value for context in _runtime._RETAINED] == [0xC0]
    for failing, made in (("cuInit", 1), ("cuDeviceGet", 2), ("cuDevicePrimaryCtxRetain", 3),
                          ("load", 0)):
        calls.clear()
        monkeypatch.setattr(ctypes, "CDLL", library(failing))
        _runtime.start_driver(0).join(timeout=10)
        assert len(calls) == made and len(_runtime._RETAINED) == 1, failing
    setting("gpu.runtime", "emulation")
    monkeypatch.setattr(ctypes, "CDLL", library("load"))
    assert _runtime.start_driver(0) is None


FIRST_GPU_USE = """
import sys
from swdask.gpu import _runtime
calls = []
def recording(device=0, check_setting=True):
    calls.append((device, check_setting, "dask" in sys.modules))
_runtime.start_driver = recording
if sys.argv[1] == "dask emulation":
    import dask
    dask.config.set({"swdask.gpu.runtime": "emulation"})
if sys.argv[1] == "started":
    _runtime._DRIVER_STARTS.append(1)  # a further GPU's process started its own device
try:
    runtime = type(_runtime.get_runtime()).__name__
except _runtime.GpuUnavailableError:  # no CuPy or no GPU here
    runtime = "none"
print(runtime, calls)
"""


@pytest.mark.parametrize("case, environment, expected", [
    ("fresh", {}, [(0, False, False)]),
    ("fresh", {"DASK_SWDASK__GPU__RUNTIME": "emulation"}, []),
    ("fresh", {"SWDASK_GPU_BACKEND": "emulation"}, []),
    ("dask emulation", {}, []),
    ("started", {}, [])])
def test_the_first_gpu_use_starts_the_driver_before_dask(case, environment, expected):
    """A process's first get_runtime (the accessors' and the API's way to the GPU), with
    neither CuPy nor Dask imported, starts device 0's driver before it imports Dask for the
    setting: not where the environment names the emulation, nor where Dask's setting says
    it, nor in a process that started a driver itself. A new interpreter each, so that
    neither library is imported yet."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DASK_SWDASK__GPU__RUNTIME", "SWDASK_GPU_BACKEND")}
    env.update(environment)
    done = subprocess.run([sys.executable, "-c", FIRST_GPU_USE, case], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    runtime, calls = done.stdout.strip().split(" ", 1)
    assert calls == repr(expected), (case, environment, done.stdout)
    emulated = case == "dask emulation" or environment
    assert (runtime == "EmulationRuntime") == bool(emulated), done.stdout


@pytest.mark.parametrize("backend, counted, extra, started", [
    ("gpu", 1, [], True), ("gpu", 0, [], True), ("cudf", 1, [], True),
    ("cudf", 0, [], True), ("cudf", 1, ["--workers", "1"], False),
    ("gpu", 1, ["--scheduler", "tcp://127.0.0.1:1"], False), ("cpu", 1, [], False)])
def test_the_driver_starts_where_this_process_searches_on_gpu_0(tmp_path, capsys, monkeypatch,
                                                                setting, backend, counted,
                                                                extra, started):
    """The job starts GPU 0's driver as it begins where this process will search on it: the
    GPU engine (gpu or cudf) with no cluster (one GPU or several); not on a cluster
    (--workers, --scheduler), nor on the CPU. The job here fails at its bad query, after
    that choice and before anything else."""
    import swdask._local_gpus as local_gpus
    from swdask.gpu import _runtime

    calls = []
    setting("gpu.runtime", "emulation")
    monkeypatch.setattr(_runtime, "start_driver", lambda device=0: calls.append(device))
    monkeypatch.setattr(local_gpus, "quick_gpu_count", lambda: counted)
    monkeypatch.setattr(local_gpus, "FurtherGpus", None)  # never reached: one GPU counted
    queries = tmp_path / "q.fasta"
    queries.write_text(">bad\nMK1LV\n")
    code = main(["search", str(queries), str(DB), "-o", str(tmp_path / "hits.tsv"),
                 "--backend", backend, *extra])
    err = capsys.readouterr().err
    assert code == 1 and "'bad'" in err and "Traceback" not in err, err
    assert calls == ([0] if started else []), (backend, counted, extra)


def test_a_further_gpus_process_that_dies_is_an_error_not_a_hang():
    """The several-GPU job waits for its further GPUs' hits on a queue: a process that ends
    with none (killed, out of memory) is a GpuUnavailableError naming the GPU and its exit
    code, and an error a process sends back is raised as it is."""
    import queue
    from types import SimpleNamespace

    from swdask._local_gpus import _collect
    from swdask.gpu import GpuUnavailableError

    dead = SimpleNamespace(name="1", is_alive=lambda: False, exitcode=-9)
    with pytest.raises(GpuUnavailableError, match=r"GPU 1 ended abruptly \(exit code -9\)"):
        _collect([dead], queue.Queue())
    sent = queue.Queue()
    sent.put((1, None, ValueError("record 'x': bad")))
    alive = SimpleNamespace(name="1", is_alive=lambda: True, exitcode=None)
    with pytest.raises(ValueError, match="record 'x'"):
        _collect([alive], sent)


def test_query_batches_take_every_query_once_largest_first(monkeypatch):
    """The batches of the several-GPU job: consecutive queries, each taken once, about
    1 / processes of the residues left each time (so they shrink), at least
    MIN_BATCH_RESIDUES where that many are left; none once all are taken, or after
    stop_all (a process failed)."""
    import multiprocessing

    import numpy as np

    from swdask._local_gpus import MIN_BATCH_RESIDUES, QueryBatches

    lengths = np.random.default_rng(3).integers(50, 3000, 400)
    batches = QueryBatches(lengths, 2, multiprocessing.Value("q", 0))
    taken = []
    while (batch := batches.take()) is not None:
        taken.append(batch)
    assert [first for first, _ in taken] == [0] + [stop for _, stop in taken[:-1]]
    assert taken[-1][1] == len(lengths)
    sizes = [int(lengths[first:stop].sum()) for first, stop in taken]
    left = int(lengths.sum())
    for (first, stop), size in zip(taken, sizes):
        wanted = max(left / 2, MIN_BATCH_RESIDUES)
        assert size >= min(wanted, left)  # at least the share, or what was left
        assert size - int(lengths[stop - 1]) < wanted  # one query fewer would fall short
        left -= size
    assert sizes[0] > 4 * sizes[-2]  # large first, small last
    again = QueryBatches(lengths, 2, multiprocessing.Value("q", 0))
    again.take()
    again.stop_all()
    assert again.take() is None


@pytest.mark.skipif(__import__("swdask.gpu._runtime", fromlist=["x"]).host_compiler() is None,
                    reason="the host emulation needs g++")
@pytest.mark.parametrize("form,backend", [("crlf", "gpu"), ("gzip", "gpu"), ("gap", "gpu"),
                                          ("gzip", "cudf")])
def test_one_gpu_job_leaves_other_files_to_the_reader(tmp_path, capsys, monkeypatch, setting,
                                                       form, backend):
    """The one-GPU job parses a plain file on the GPU; a file outside that form (\r\n line
    ends, compressed) is read by the reader instead, with the same hits, and a record with a
    byte that is no residue ('-') is named by the reader's error, as on every path. With
    ``--backend cudf`` it is the same job (no cuDF needed)."""
    import swdask._cluster as cluster_module

    setting("gpu.runtime", "emulation")
    monkeypatch.setattr(cluster_module, "local_gpu_count", lambda: 1)
    chosen, db, plain, queries = _files_in_form(tmp_path, 8, form, bad=5)
    out = tmp_path / "hits.tsv"
    framed = _recording_frame_reads(monkeypatch)
    code = main(["search", str(queries), str(db), "--top", "3", "-o", str(out),
                 "--backend", backend, "--verbose", "--no-progress"])
    err = capsys.readouterr().err
    assert str(db) in framed, framed  # the database went to the reader
    if form == "gap":
        assert code == 1 and f"record {chosen[5][0]!r}" in err and "'-'" in err, err
        return
    assert code == 0, err
    check_hits(read_tsv(out), expected_hits(queries, plain, 3))


@pytest.mark.skipif(__import__("swdask.gpu._runtime", fromlist=["x"]).host_compiler() is None,
                    reason="the host emulation needs g++")
@pytest.mark.parametrize("backend", ["gpu", "cudf"])
def test_one_local_gpu_job_imports_no_dask_dataframe(tmp_path, backend):
    """The one-GPU job in a new process (as from the shell) never imports dask.dataframe,
    dask.array or distributed, nor numba (its database parsed where the GPU's arrays are, its
    queries by NumPy), nor cuDF with ``--backend cudf`` (the same job: the database is in GPU
    memory either way): on a GPU machine they cost seconds of a seconds-long job."""
    import os
    import subprocess
    import sys

    db = tmp_path / "db.fasta"
    db.write_text("".join(f">{name}\n{sequence}\n" for name, _, sequence in records(DB)[:6]))
    queries = tmp_path / "q.fasta"
    queries.write_text("".join(f">{name}\n{sequence[:40]}\n"
                               for name, _, sequence in records(QUERIES)[:1]))
    out = tmp_path / "hits.tsv"
    code = ("import sys, swdask._cluster as c; c.local_gpu_count = lambda: 1\n"
            "from swdask.cli import main\n"
            f"code = main(['search', {str(queries)!r}, {str(db)!r}, '-o', {str(out)!r}, "
            f"'--backend', {backend!r}, '--no-progress'])\n"
            "print(code, [m for m in ('dask.dataframe', 'dask.array', 'distributed', "
            "'numba', 'cudf', 'dask_cudf') if m in sys.modules])")
    env = {**os.environ, "DASK_SWDASK__GPU__RUNTIME": "emulation"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=600)
    assert result.stdout.strip().splitlines()[-1] == "0 []", result.stderr
    assert len(read_tsv(out)) > 0


def test_info_reports_engines_and_a_cudf_that_fails_to_import(monkeypatch, capsys):
    """``swdask info``: every core package with its version; an engine is "yes" only where it
    can run, and a cuDF that is installed but fails to import says so."""
    from swdask import _info

    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert "  cpu          yes" in text and "numpy" in text and "MISSING" not in text
    monkeypatch.setattr(_info, "_gpus", lambda: (["Test GPU"], None))
    versions = {"cudf-cu13": "26.10", "dask-cudf-cu13": "26.10", "dask-cuda": "26.10"}
    real = _info._version
    monkeypatch.setattr(_info, "_version", lambda name: versions.get(name) or real(name))
    monkeypatch.setitem(sys.modules, "cudf", None)  # installed, but its import fails
    text = _info.report()
    assert "0: Test GPU" in text
    cudf_line = next(line for line in text.splitlines() if line.strip().startswith("cudf "))
    assert cudf_line.split()[1] == "no" and "fails to import" in cudf_line
