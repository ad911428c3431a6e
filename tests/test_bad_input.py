"""``swdask search`` on bad input, run as a user runs it: a new process per case.

Each case asserts the exit status, one line naming the culprit on stderr, no Python traceback,
no partial output file left behind, and an existing output untouched (the output file is
created before every failing case with known content).
"""
from __future__ import annotations

import gzip
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_cli import DB

GOOD = ">q1 a query\nMKVLAAGIVGALLAAQWERTYHHK\n"
PROTEIN_DB = DB.read_text()
OLD_OUTPUT = "an existing output, kept\n"


def _files(tmp: Path) -> dict:
    """The inputs the cases name, written into ``tmp``."""
    files = {
        "q.fa": GOOD,
        "db.fa": PROTEIN_DB,
        "empty.fa": "",
        "blank.fa": "\n\n  \n",
        "noheader.fa": "MKVLAAGIVG\nMKV\n",
        "before.fa": "MKV\n>a\nMKV\n",
        "noid.fa": ">\nMKVLAAG\n",
        "gap_db.fa": ">a desc\nMKVLAAGIVGALL\n>b\nMKV-LAAG\n",
        "digit_db.fa": ">a\nMKVLAAG\n>rec7 x\nMKV1AAG\n",
        "unknown_db.fa": ">a\nMKVLAAG\n>odd\nMKJLAAG\n",
        "gap_q.fa": ">q1\nMKV-LAAG\n",
        "bom.fa": "\ufeff>a\nMKVLAAGIVGALLAA\n",
        "dups.fa": ">a\nMKVLAAGIVGALLAA\n>a\nMKVLAAGIVGALLAA\n",
        "huge.fa": ">long\n" + "MKVLAAGIVG" * 200_000 + "\n",
        "nonascii.fa": ">a\nMKV\u00e9AAG\n",
    }
    for name, text in files.items():
        (tmp / name).write_text(text, encoding="utf-8")
    (tmp / "nul.fa").write_bytes(b">a\nMKV\x00AAG\n")
    (tmp / "binary.fa").write_bytes(gzip.compress(GOOD.encode()))  # gzip without .gz
    (tmp / "trunc.fa.gz").write_bytes(gzip.compress(PROTEIN_DB.encode())[:3000])
    (tmp / "corrupt.fa.gz").write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(200))
    (tmp / "a_folder").mkdir()
    return files


# (case, arguments after "search", exit status, what stderr must say)
CASES = [
    ("missing query file", ["nope.fa", "db.fa"], 1, "nope.fa"),
    ("missing database", ["q.fa", "nope.fa"], 1, "nope.fa"),
    ("empty query file", ["empty.fa", "db.fa"], 1, "no query records"),
    ("query without header", ["noheader.fa", "db.fa"], 1, "line 1"),
    ("binary query file", ["binary.fa", "db.fa"], 1, "compressed"),
    ("truncated gzip database", ["q.fa", "trunc.fa.gz"], 1, "truncated or corrupt"),
    ("corrupt gzip database", ["q.fa", "corrupt.fa.gz"], 1, "corrupt.fa.gz"),
    ("empty database", ["q.fa", "empty.fa"], 1, "empty"),
    ("database of blank lines", ["q.fa", "blank.fa"], 1, "no FASTA record"),
    ("sequence before the first header", ["q.fa", "before.fa"], 1, "line 1"),
    ("header without an id", ["q.fa", "noid.fa"], 1, "without an id"),
    ("NUL byte in the database", ["q.fa", "nul.fa"], 1, "NUL"),
    ("non-ASCII residue", ["q.fa", "nonascii.fa"], 1, "non-ASCII"),
    ("gap in a database record", ["q.fa", "gap_db.fa"], 1, "record 'b'"),
    ("digit in a database record", ["q.fa", "digit_db.fa"], 1, "record 'rec7'"),
    ("unknown letter, --on-unknown raise", ["q.fa", "unknown_db.fa", "--on-unknown", "raise"],
     1, "record 'odd'"),
    ("gap in a query", ["gap_q.fa", "db.fa"], 1, "query 'q1'"),
    ("output folder missing", ["q.fa", "db.fa", "-o", "missing/hits.tsv"], 1,
     "does not exist"),
    ("output is a folder", ["q.fa", "db.fa", "-o", "a_folder"], 1, "is a folder"),
    ("unknown output suffix", ["q.fa", "db.fa", "-o", "hits.xyz"], 1, "suffix"),
    ("parquet to standard output", ["q.fa", "db.fa", "--format", "parquet", "-o", "-"], 1,
     "standard output"),
    ("SAM for protein", ["q.fa", "db.fa", "-o", "hits.sam"], 1, "--dna"),
    ("blast6 without statistics", ["q.fa", "db.fa", "--dna", "-o", "hits.m8"], 1,
     "needs E-values"),
    ("--evalue for a gap cost without statistics",
     ["q.fa", "db.fa", "--gap-open", "3", "--evalue", "1"], 1, "no statistics"),
    ("unknown matrix", ["q.fa", "db.fa", "--matrix", "NOPE62"], 1, "NOPE62"),
    ("negative gap cost", ["q.fa", "db.fa", "--gap-open", "-1"], 1, "gap_open"),
    ("gap extension above opening", ["q.fa", "db.fa", "--gap-extend", "20"], 1,
     "gap_extend"),
    ("--evalue below 0", ["q.fa", "db.fa", "--evalue", "-1"], 2, "--evalue"),
    ("--top 0", ["q.fa", "db.fa", "--top", "0"], 2, "--top"),
    ("--match without --dna", ["q.fa", "db.fa", "--match", "2"], 2, "--dna"),
    ("--workers 0", ["q.fa", "db.fa", "--workers", "0"], 2, "--workers"),
    ("--workers with --scheduler",
     ["q.fa", "db.fa", "--workers", "2", "--scheduler", "tcp://127.0.0.1:9"], 2, "--workers"),
    ("unreachable scheduler", ["q.fa", "db.fa", "--scheduler", "tcp://127.0.0.1:9"], 1,
     "no Dask scheduler answered"),
    ("unknown option", ["q.fa", "db.fa", "--frobnicate"], 2, "--frobnicate"),
]

# valid input that must simply work
GOOD_CASES = [
    ("UTF-8 byte-order mark", ["q.fa", "bom.fa"]),
    ("duplicate ids", ["q.fa", "dups.fa"]),
    ("a 2 MB sequence line", ["q.fa", "huge.fa"]),
    ("gaps stripped", ["gap_q.fa", "gap_db.fa", "--strip-gaps"]),
]


def _run(tmp: Path, arguments, output="hits.tsv", timeout=120):
    if "-o" not in arguments:
        arguments = [*arguments, "-o", output]
    command = [sys.executable, "-m", "swdask", "search", *arguments, "--no-progress",
               *([] if "--scheduler" in arguments or "--workers" in arguments
                 else ["--workers", "1"])]
    return subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=timeout)


def _no_partial_files(tmp: Path) -> bool:
    return not any(".swdask-partial" in p.name for p in tmp.rglob("*"))


@pytest.fixture(autouse=True, scope="module")
def _dashboard_port_taken():
    """Dask's default dashboard port held by something else, as on a machine where a cluster
    already runs: the job moves its dashboard and still says one line (no port warning)."""
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 8787))
        holder.listen()
    except OSError:  # taken already: the situation under test anyway
        pass
    yield
    holder.close()


@pytest.fixture
def workdir(tmp_path):
    _files(tmp_path)
    (tmp_path / "hits.tsv").write_text(OLD_OUTPUT)
    return tmp_path


@pytest.mark.parametrize("case, arguments, status, culprit", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_line(workdir, case, arguments, status, culprit):
    done = _run(workdir, arguments)
    lines = [line for line in done.stderr.splitlines()
             if line.strip() and not line.startswith("swdask: started")]
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr
    assert culprit in done.stderr
    if status == 1:
        assert len(lines) == 1 and lines[0].startswith("swdask: error: "), done.stderr
    assert (workdir / "hits.tsv").read_text() == OLD_OUTPUT  # untouched
    assert _no_partial_files(workdir)


@pytest.mark.parametrize("case, arguments", GOOD_CASES, ids=[c[0] for c in GOOD_CASES])
def test_valid_edge_input_works(workdir, case, arguments):
    done = _run(workdir, arguments, output="new.tsv")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    text = (workdir / "new.tsv").read_text()
    assert text.startswith("query_id\t") and len(text.splitlines()) >= 2


def test_blast6_writes_na_for_statistics_too_few_rows_could_fit(workdir):
    """``--statistics search`` fits lambda and K to each query's scores; against a database
    of two rows there is nothing to fit, and BLAST's table says NA rather than the job
    failing with a traceback."""
    done = _run(workdir, ["q.fa", "dups.fa", "--statistics", "search"], output="hits.m8")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    rows = [line.split("\t") for line in (workdir / "hits.m8").read_text().splitlines()]
    assert rows and all(len(row) == 12 for row in rows)
    assert all(row[10] == "NA" and row[11] == "NA" for row in rows)


@pytest.mark.parametrize("which", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_job_leaves_no_output(workdir, which):
    """A job stopped mid-search (Ctrl-C, or SIGTERM from a scheduler) exits 130 with one
    line, leaves the old output as it was, no partial file, and no worker behind."""
    records = PROTEIN_DB.split(">")[1:]
    # work enough that the job is still searching when the signal comes
    (workdir / "many.fa").write_text("".join(">" + r for r in records[:60]))
    (workdir / "big.fa").write_text(PROTEIN_DB * 300)
    command = [sys.executable, "-m", "swdask", "search", "many.fa", "big.fa", "-o",
               "hits.tsv", "--no-progress", "--workers", "1"]
    # as from a terminal: SIGINT at its default, whatever this test was started with (a
    # shell's background job, e.g. `nohup ... &`, ignores it, and a program started so keeps
    # ignoring it, as it should)
    process = subprocess.Popen(command, cwd=workdir, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = []
    for line in process.stderr:  # the cluster is up: the search is under way
        seen.append(line)
        if "started" in line:
            break
    time.sleep(3)
    assert process.poll() is None, "".join(seen)
    process.send_signal(which)
    _, err = process.communicate(timeout=60)
    err = "".join(seen) + err
    assert process.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert (workdir / "hits.tsv").read_text() == OLD_OUTPUT
    assert _no_partial_files(workdir)
