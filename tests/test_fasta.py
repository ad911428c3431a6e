"""swdask.read_fasta: partitions by byte ranges, compressed streams, globs, malformed input.

The reference is Biopython's ``SimpleFastaParser`` over the whole file (an independent parser):
every record must come out once, in order, whatever the blocksize.
"""
from __future__ import annotations

import bz2
import gzip
import io
import subprocess
import sys
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
import pytest
from Bio.SeqIO.FastaIO import SimpleFastaParser

import swdask
from swdask._fasta import FastaError

DATA = Path(__file__).parent / "data"
DB = DATA / "proteins_db.fasta"  # 300 real UniProt proteins wrapped at 60 columns
EXAMPLE_DB = Path(__file__).parent.parent / "examples" / "data" / "db.fasta"
MMSEQS_DB = Path("/usr/share/doc/mmseqs2/example-data/DB.fasta.gz")
STRING = pd.StringDtype("pyarrow")


def reference(text: str) -> pd.DataFrame:
    """id, description, sequence of every record, by Biopython, with a 0..n-1 index."""
    rows = []
    for title, sequence in SimpleFastaParser(io.StringIO(text)):
        words = title.split(None, 1)
        rows.append((words[0], words[1].strip() if len(words) > 1 else "",
                     "".join(sequence.split())))
    return pd.DataFrame(rows, columns=["id", "description", "sequence"])


def check_same(frame: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert list(frame.columns) == ["id", "description", "sequence"]
    assert len(frame) == len(expected)
    assert frame.index.tolist() == list(range(len(expected)))
    for column in expected.columns:
        assert frame[column].tolist() == expected[column].tolist(), column


def compute(ddf) -> pd.DataFrame:
    return ddf.compute(scheduler="sync")


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# ------------------------------------------------------------------ partitions and boundaries


@pytest.mark.parametrize("blocksize", [100, 257, 1000, 4096, 50_000, "64MB", None])
def test_byte_range_partitions_lose_and_repeat_nothing(blocksize):
    """Tiny blocks cut headers and sequence lines everywhere; every record still comes out
    once, in file order, numbered 0..n-1 whatever the blocksize."""
    text = DB.read_text()
    expected = reference(text)
    ddf = swdask.read_fasta(DB, blocksize=blocksize)
    if blocksize in (100, 257, 1000):
        assert ddf.npartitions > 50
    frame = compute(ddf)
    check_same(frame, expected)
    assert ddf.known_divisions
    assert ddf.divisions[0] == 0 and ddf.divisions[-1] == len(expected) - 1


def test_each_partition_holds_its_divisions_range():
    ddf = swdask.read_fasta(DB, blocksize=2000)
    divisions = ddf.divisions
    total = 0
    for k in range(ddf.npartitions):
        part = ddf.partitions[k].compute(scheduler="sync")
        assert len(part) > 0  # blocks without a header start make no empty partition
        assert part.index[0] == divisions[k]
        last = divisions[k + 1] if k + 1 == ddf.npartitions else divisions[k + 1] - 1
        assert part.index[-1] == last
        total += len(part)
    assert total == len(reference(DB.read_text()))


def test_records_longer_than_the_blocksize(tmp_path):
    """A record spanning many blocks belongs to the block of its '>' only."""
    rng = np.random.default_rng(7)
    records = [(f"r{k}", "".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), n)))
               for k, n in enumerate([5, 3000, 1, 0, 2500, 40])]
    text = "".join(f">{i} some words\n" + "\n".join(s[j:j + 70] for j in range(0, len(s), 70))
                   + "\n" for i, s in records)
    path = write(tmp_path / "long.fasta", text)
    for blocksize in (16, 64, 333):
        frame = compute(swdask.read_fasta(path, blocksize=blocksize))
        assert frame["id"].tolist() == [i for i, _ in records]
        assert frame["sequence"].tolist() == [s for _, s in records]


def test_partitions_are_pyarrow_string_frames():
    ddf = swdask.read_fasta(DB, blocksize=20_000)
    part = ddf.partitions[1].compute(scheduler="sync")
    assert isinstance(part, pd.DataFrame)
    for column in ("id", "description", "sequence"):
        assert ddf.dtypes[column] == STRING
        assert part[column].dtype == STRING
        assert part[column].dtype.storage == "pyarrow"
    assert isinstance(part.index, pd.RangeIndex)


def test_dask_alignment_over_byte_range_partitions_matches_pandas():
    """The frame feeds the Dask accessor; results equal pandas on the whole file."""
    expected = reference(DB.read_text())
    query = expected["sequence"].iloc[17][:150]
    lazy = swdask.read_fasta(DB, blocksize=5000).sw.align(query)
    got = compute(lazy)
    direct = pd.Series(expected["sequence"].tolist()).sw.align(query)
    for column in direct.columns:
        assert got[column].tolist() == direct[column].tolist(), column


@pytest.mark.skipif(not EXAMPLE_DB.exists(), reason="examples/data not present")
def test_example_database_is_a_plain_real_subset():
    frame = compute(swdask.read_fasta(EXAMPLE_DB, blocksize=100_000))
    check_same(frame, reference(EXAMPLE_DB.read_text()))
    assert len(frame) == 2000


# ------------------------------------------------------------------ compressed, globs, lists


@pytest.mark.parametrize("suffix, opener", [(".gz", gzip.compress), (".bz2", bz2.compress)])
def test_compressed_file_is_one_stream(tmp_path, suffix, opener):
    text = DB.read_text()
    path = write(tmp_path / f"db.fasta{suffix}", opener(text.encode()))
    ddf = swdask.read_fasta(path, blocksize=100)  # no byte ranges inside a compressed stream
    assert ddf.npartitions == 1
    check_same(compute(ddf), reference(text))


@pytest.mark.parametrize("piece", [50, 997, 8192])
def test_compressed_stream_parsed_in_pieces(tmp_path, monkeypatch, piece):
    """A compressed file is parsed in pieces cut before a record's '>' while the next piece
    decompresses: the same frame as the whole text (a byte-order mark, blank lines before
    the first header, \\r\\n endings, records longer than a piece), and an error in a late
    piece names its line in the file."""
    from swdask import _fasta

    monkeypatch.setattr(_fasta, "_STREAM_PIECE", piece)
    text = "\n\n" + DB.read_text().replace("\n", "\r\n")
    path = write(tmp_path / "db.fasta.gz", gzip.compress(b"\xef\xbb\xbf" + text.encode()))
    check_same(compute(swdask.read_fasta(path)), reference(text))

    lines = DB.read_text().splitlines()
    bad = len(lines) - 3  # 0-based: a sequence line near the end
    assert not lines[bad].startswith(">")
    lines[bad] = lines[bad][:5] + "\x01" + lines[bad][5:]
    path = write(tmp_path / "bad.fasta.gz", gzip.compress("\n".join(lines).encode()))
    with pytest.raises(FastaError, match=rf"bad\.fasta\.gz.*line {bad + 1}\b"):
        compute(swdask.read_fasta(path))


@pytest.mark.skipif(not MMSEQS_DB.exists(), reason="Debian package mmseqs2-examples not installed")
def test_mmseqs_database_gz():
    frame = compute(swdask.read_fasta(MMSEQS_DB))
    with gzip.open(MMSEQS_DB, "rt") as handle:
        expected = reference(handle.read())
    assert len(expected) == 20_000
    check_same(frame, expected)


@pytest.fixture
def three_files(tmp_path):
    """The test database cut into three files: a.fasta, b.fasta.gz, c.fasta."""
    text = DB.read_text()
    starts = [k for k in range(len(text))
              if text[k] == ">" and (k == 0 or text[k - 1] == "\n")]
    cuts = [0, starts[100], starts[220], len(text)]
    pieces = [text[cuts[k]:cuts[k + 1]] for k in range(3)]
    write(tmp_path / "a.fasta", pieces[0])
    write(tmp_path / "b.fasta.gz", gzip.compress(pieces[1].encode()))
    write(tmp_path / "c.fasta", pieces[2])
    return tmp_path, pieces


def test_glob_numbers_records_across_files_in_sorted_order(three_files):
    folder, pieces = three_files
    ddf = swdask.read_fasta(str(folder / "*.fasta*"), blocksize=3000)
    check_same(compute(ddf), reference("".join(pieces)))
    assert ddf.known_divisions


def test_list_of_paths_keeps_the_given_order(three_files):
    folder, pieces = three_files
    ddf = swdask.read_fasta([folder / "c.fasta", folder / "a.fasta"], blocksize=1500)
    check_same(compute(ddf), reference(pieces[2] + pieces[0]))


def test_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file matches"):
        swdask.read_fasta(str(tmp_path / "*.fasta"))
    with pytest.raises(FileNotFoundError, match="nope.fasta"):
        swdask.read_fasta(tmp_path / "nope.fasta")


# ------------------------------------------------------------------ text conventions


def test_crlf_line_endings_read_like_lf(tmp_path):
    text = DB.read_text()
    lf = compute(swdask.read_fasta(write(tmp_path / "lf.fasta", text), blocksize=700))
    crlf = compute(swdask.read_fasta(write(tmp_path / "crlf.fasta", text.replace("\n", "\r\n")),
                                     blocksize=700))
    pd.testing.assert_frame_equal(lf, crlf)
    assert not crlf["sequence"].str.contains("\r").any()
    assert not crlf["description"].str.contains("\r").any()


def test_headers_sequences_case_and_symbols(tmp_path):
    text = (
        "\n\n"                                      # blank lines before the first header
        ">sp|P1|A  first protein\tOS=x  \n"          # id, then description without edge blanks
        "mkTAy iaKQ\n"                               # lowercase kept, inner blanks removed
        "\tRQISF*\n"                                 # '*' terminal kept
        ">only_id\n"
        "ACGT\n\n"
        ">empty_sequence after\n"
        ">  spaced  id after blanks \n"
        "XX-XX\n"
    )
    frame = compute(swdask.read_fasta(write(tmp_path / "t.fasta", text), blocksize=20))
    assert frame["id"].tolist() == ["sp|P1|A", "only_id", "empty_sequence", "spaced"]
    assert frame["description"].tolist() == ["first protein\tOS=x", "", "after", "id after blanks"]
    assert frame["sequence"].tolist() == ["mkTAyiaKQRQISF*", "ACGT", "", "XX-XX"]


def test_file_without_trailing_newline(tmp_path):
    path = write(tmp_path / "t.fasta", ">a\nAC\nGT\n>b\nTT")
    frame = compute(swdask.read_fasta(path, blocksize=4))
    assert frame["sequence"].tolist() == ["ACGT", "TT"]


@pytest.mark.parametrize("content", ["", "\n\n  \n", "\r\n"])
def test_empty_files_give_an_empty_frame(tmp_path, content):
    path = write(tmp_path / "empty.fasta", content)
    ddf = swdask.read_fasta(path)
    frame = compute(ddf)
    assert len(frame) == 0
    assert list(frame.columns) == ["id", "description", "sequence"]
    assert (frame.dtypes == STRING).all()


def test_empty_file_among_others(tmp_path):
    write(tmp_path / "a.fasta", ">a\nAC\n")
    write(tmp_path / "b.fasta", "")
    write(tmp_path / "c.fasta", ">c\nGG\n")
    frame = compute(swdask.read_fasta(str(tmp_path / "*.fasta")))
    assert frame["id"].tolist() == ["a", "c"]
    assert frame.index.tolist() == [0, 1]


# ------------------------------------------------------------------ malformed input


def _lines_text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def test_sequence_before_the_first_header_names_the_line(tmp_path):
    lines = ["", "", "MKV", ">a", "AC"]
    path = write(tmp_path / "bad.fasta", _lines_text(lines))
    with pytest.raises(FastaError) as info:
        swdask.read_fasta(path)  # found while planning, before any compute
    assert f"line {lines.index('MKV') + 1}" in str(info.value)
    assert "bad.fasta" in str(info.value)
    assert "before the first '>' header" in str(info.value)


def test_compressed_file_with_a_plain_name(tmp_path):
    path = write(tmp_path / "db.fasta", gzip.compress(b">a\nAC\n"))
    with pytest.raises(FastaError, match=r"line 1: binary data .*compressed"):
        swdask.read_fasta(path)


def _bad_file(tmp_path, bad_line: str, at: int, name="bad.fasta") -> tuple[Path, int]:
    """A real file (the test database) with ``bad_line`` put in as line ``at`` (1-based)."""
    lines = DB.read_text().splitlines()
    lines.insert(at - 1, bad_line)
    return write(tmp_path / name, _lines_text(lines)), at


@pytest.mark.parametrize("blocksize", [None, 997])
@pytest.mark.parametrize("bad_line, message", [
    (">", "header '>' without an id"),
    (">   \t ", "header '>' without an id"),
    ("MKV\x00\x00LL", "NUL byte"),
    ("MKV\x07LL", "control byte 0x07"),
    ("MK\rVL", "carriage return not followed by a newline"),
    ("MKVÉLL", "non-ASCII byte"),
])
def test_malformed_line_in_a_real_file_is_named(tmp_path, bad_line, message, blocksize):
    """The error names the file and the exact line, also deep inside a later partition."""
    path, line = _bad_file(tmp_path, bad_line, at=1203)
    ddf = swdask.read_fasta(path, blocksize=blocksize)
    if blocksize:
        assert ddf.npartitions > 20
    with pytest.raises(FastaError) as info:
        compute(ddf)
    text = str(info.value)
    assert f"{path}, line {line}:" in text, text
    assert message in text, text


def test_invalid_utf8_header_is_named(tmp_path):
    lines = [">a ok", "AC", ">b caf\xe9".encode("latin-1").decode("latin-1"), "GG"]
    raw = b"".join((line.encode("latin-1") + b"\n") for line in lines)
    path = write(tmp_path / "latin1.fasta", raw)
    with pytest.raises(FastaError, match=r"line 3: header is not valid UTF-8"):
        compute(swdask.read_fasta(path))


def test_utf8_header_is_kept(tmp_path):
    path = write(tmp_path / "utf8.fasta", ">a protéine α\nAC\n")
    frame = compute(swdask.read_fasta(path))
    assert frame["description"].tolist() == ["protéine α"]


def test_file_changed_after_planning(tmp_path):
    path = write(tmp_path / "t.fasta", ">a\nAC\n>b\nGG\n")
    ddf = swdask.read_fasta(path)
    with open(path, "ab") as handle:
        handle.write(b">c\nTT\n")
    with pytest.raises(FastaError, match="changed"):
        compute(ddf)


# ------------------------------------------------------------------ arguments


def test_bad_arguments(tmp_path):
    path = write(tmp_path / "t.fasta", ">a\nAC\n")
    with pytest.raises(ValueError, match=r"backend must be 'pandas', 'cudf' or None.*'polars'"):
        swdask.read_fasta(path, backend="polars")
    with pytest.raises(ValueError, match="backend must be"):
        swdask.read_fasta(path, backend="CUDF")
    with pytest.raises(ValueError, match="blocksize"):
        swdask.read_fasta(path, blocksize="lots")
    with pytest.raises(ValueError, match="blocksize"):
        swdask.read_fasta(path, blocksize=0)
    with pytest.raises(ValueError, match="compression"):
        swdask.read_fasta(path, compression="rar")
    with pytest.raises(TypeError, match="path"):
        swdask.read_fasta(42)
    with pytest.raises(IsADirectoryError, match="glob"):
        swdask.read_fasta(tmp_path)


# ------------------------------------------------------------------ backends


def _has_dask_cudf() -> bool:
    try:
        import dask_cudf  # noqa: F401
    except Exception:  # noqa: BLE001 - absent, or present without a usable GPU
        return False
    return True


def test_backend_none_follows_dask_configuration():
    default = swdask.read_fasta(DB, blocksize=20_000, backend=None)
    explicit = swdask.read_fasta(DB, blocksize=20_000)
    assert isinstance(default.partitions[0].compute(scheduler="sync"), pd.DataFrame)
    assert default.divisions == explicit.divisions
    pd.testing.assert_frame_equal(compute(default), compute(explicit))
    with dask.config.set({"dataframe.backend": "polars"}):
        with pytest.raises(ValueError, match=r"'dataframe.backend' setting.*'polars'"):
            swdask.read_fasta(DB, backend=None)


@pytest.mark.skipif(_has_dask_cudf(), reason="cuDF is installed: the GPU tests cover it")
def test_cudf_backend_without_cudf_says_what_to_install(tmp_path):
    missing = tmp_path / "not_even_there.fasta"  # refused before any file is opened
    with pytest.raises(ImportError) as info:
        swdask.read_fasta(missing, backend="cudf")
    text = str(info.value)
    assert "backend='cudf'" in text
    assert "pip install 'swdask[cudf]'" in text and "cudf-cu12 dask-cudf-cu12" in text
    assert "backend='pandas'" in text and "no GPU" in text
    with dask.config.set({"dataframe.backend": "cudf"}):
        with pytest.raises(ImportError, match=r"pip install 'swdask\[cudf\]'"):
            swdask.read_fasta(DB, backend=None)


def test_import_swdask_imports_no_cudf():
    # (CuPy is left out: Dask itself may import it where it is installed)
    code = ("import sys, swdask; swdask.read_fasta; "
            "loaded = {'cudf', 'dask_cudf'} & set(sys.modules); assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=Path(__file__).parent.parent)


@pytest.mark.gpu
def test_cudf_backend_matches_pandas():
    pytest.importorskip("dask_cudf")
    cudf = pytest.importorskip("cudf")
    pandas_ddf = swdask.read_fasta(DB, blocksize=7000)
    expected = compute(pandas_ddf)
    for ddf in (swdask.read_fasta(DB, blocksize=7000, backend="cudf"),
                _configured_cudf(lambda: swdask.read_fasta(DB, blocksize=7000, backend=None))):
        assert isinstance(ddf._meta, cudf.DataFrame)
        assert ddf.divisions == pandas_ddf.divisions
        assert ddf.npartitions == pandas_ddf.npartitions
        assert list(ddf.columns) == ["id", "description", "sequence"]
        part = ddf.partitions[2].compute()
        assert isinstance(part, cudf.DataFrame)
        assert part.index.to_pandas().tolist() == \
            compute(pandas_ddf.partitions[2]).index.tolist()
        frame = ddf.compute().to_pandas()
        assert frame.index.tolist() == expected.index.tolist()
        for column in expected.columns:
            assert frame[column].tolist() == expected[column].tolist(), column


def _configured_cudf(make):
    with dask.config.set({"dataframe.backend": "cudf"}):
        return make()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b">", b">id desc", b">caf\xc3\xa9", b"ACGT", b"ac gt", b"\t*-", b"",
                                 b"\r", b"\x00", b"\x7f", b"\xc3\xa9", b"MKV", b" ", b"> x",
                                 b">\t id\t two  words \t", b">a\xc2\xa0b", b"> \t"]),
                max_size=12),
       st.sampled_from([b"\n", b"\r\n"]))
def test_one_pass_scan_equals_the_checked_parser(pieces, newline):
    """The numba scan (well-formed text) and the NumPy parser (which names problems) agree on
    every input: the same table, or the same error. The headers cover the scan's own split of
    ASCII headers (blanks around and between the words, no id) and pyarrow's of the others
    (a no-break space is Unicode whitespace)."""
    from swdask import _fasta

    data = newline.join(pieces)

    def outcome(parse):
        try:
            return parse().to_pylist()
        except FastaError as exc:
            return str(exc)

    arr = np.frombuffer(data, np.uint8)
    checked = outcome(lambda: _fasta._parse_checked(arr, "f.fa", 1))
    assert outcome(lambda: _fasta._parse_numba(arr, "f.fa", 1)) == checked
    assert outcome(lambda: _fasta._parse_scanned(arr, "f.fa", 1)) == checked
    assert outcome(lambda: _fasta.parse_block(data, "f.fa")) == checked


# ------------------------------------------------ planning on threads, reading in this process


@pytest.mark.parametrize("blocksize", [257, 1000, 4096])
def test_planning_in_ranges_equals_one_scan(monkeypatch, blocksize):
    """The planning scan cut into ranges on threads gives the very partitions (starts, lines,
    record numbers) of one scan from the start."""
    from fsspec.implementations.local import LocalFileSystem

    from swdask import _fasta

    monkeypatch.setattr(_fasta, "_SCAN_CHUNK", 4096)  # ranges on a small file
    fs = LocalFileSystem()
    one = _fasta._plan_file(fs, str(DB), None, blocksize, 0, threads=1)
    several = _fasta._plan_file(fs, str(DB), None, blocksize, 0, threads=5)
    assert several == one and len(one) > 5


def test_planning_in_ranges_after_a_long_blank_opening(tmp_path, monkeypatch):
    from fsspec.implementations.local import LocalFileSystem

    from swdask import _fasta

    monkeypatch.setattr(_fasta, "_SCAN_CHUNK", 1024)
    text = "\n" * 5000 + DB.read_text()
    path = write(tmp_path / "blank.fasta", text)
    parts = _fasta._plan_file(LocalFileSystem(), str(path), None, 700, 0, threads=4)
    assert parts == _fasta._plan_file(LocalFileSystem(), str(path), None, 700, 0, threads=1)
    check_same(swdask.read_fasta(path, blocksize=700).compute(), reference(text))


def test_read_fasta_frame_equals_read_fasta(tmp_path, monkeypatch):
    """The in-process reader gives read_fasta's frame (columns, dtypes, index), and its
    errors name the same file and line, whichever thread met them."""
    from swdask import _fasta

    monkeypatch.setattr(_fasta, "_SCAN_CHUNK", 4096)
    expected = compute(swdask.read_fasta(DB))
    for blocksize in ("auto", 3000, None):
        frame = _fasta.read_fasta_frame(DB, blocksize, threads=4)
        pd.testing.assert_frame_equal(frame, expected)
    lines = DB.read_text().splitlines(keepends=True)
    bad = len(lines) - 3
    lines[bad] = "MKT\x01AAA\n"
    path = write(tmp_path / "bad.fasta", "".join(lines))
    with pytest.raises(FastaError) as one:
        compute(swdask.read_fasta(path, blocksize=None))
    with pytest.raises(FastaError) as threaded:
        _fasta.read_fasta_frame(path, 3000, threads=4)
    assert str(threaded.value) == str(one.value) and f"line {bad + 1}" in str(one.value)
    assert _fasta.read_fasta_frame(write(tmp_path / "empty.fasta", "")).empty


def test_read_fasta_frame_reads_compressed_files_once(tmp_path, three_files, monkeypatch):
    """Compressed files are not scanned before the in-process read (one decompression, not
    two), and the frame still equals read_fasta's: a gzipped file between plain ones, one
    alone, one empty, one of blank lines only; an error in a compressed file names the
    file and line as read_fasta does."""
    from swdask import _fasta

    folder, _ = three_files
    scanned = []
    original = _fasta._plan_file
    monkeypatch.setattr(_fasta, "_plan_file", lambda fs, p, compression, *rest: (
        scanned.append(compression), original(fs, p, compression, *rest))[1])
    for paths in (str(folder / "*.fasta*"), [str(folder / "b.fasta.gz")]):
        expected = compute(swdask.read_fasta(paths))
        scanned.clear()
        for blocksize in ("auto", 1000, None):
            pd.testing.assert_frame_equal(
                _fasta.read_fasta_frame(paths, blocksize, threads=3), expected)
        assert "gzip" not in scanned
    assert _fasta.read_fasta_frame(write(tmp_path / "empty.fa.gz", gzip.compress(b""))).empty
    assert _fasta.read_fasta_frame(
        write(tmp_path / "blank.fa.gz", gzip.compress(b"\n \n"))).empty
    lines = DB.read_text().splitlines(keepends=True)
    lines[7] = "MKT\x01AAA\n"
    path = write(tmp_path / "bad.fa.gz", gzip.compress("".join(lines).encode()))
    with pytest.raises(FastaError) as lazy:
        compute(swdask.read_fasta(path))
    with pytest.raises(FastaError) as eager:
        _fasta.read_fasta_frame(path)
    assert str(eager.value) == str(lazy.value) and "line 8" in str(lazy.value)


# ------------------------------------- fasta.cu under the host emulation (the GPU job's read)


def _emulation():
    from swdask.gpu._runtime import EmulationRuntime

    return EmulationRuntime()


def _gpu_read(data: bytes, chunk: int):
    """What encode_fasta_text (fasta.cu, in the host emulation, chunks of ``chunk`` bytes)
    makes of ``data``, in parse_block's terms: None, or the records as (id, description,
    codes) tuples."""
    from swdask._scoring import make_scoring
    from swdask.gpu import _encode

    saved = _encode._CHUNK
    _encode._CHUNK = chunk
    try:
        text = np.frombuffer(data, np.uint8)
        found = _encode.encode_fasta_text(text, "f.fa", make_scoring("BLOSUM62"), _emulation())
    finally:
        _encode._CHUNK = saved
    if found is None:
        return None
    encoded, headers = found
    assert encoded.valid.all() and len(encoded) == len(headers)
    assert encoded.offsets[0] == 0 and encoded.offsets[-1] == len(encoded.residues)
    frame = headers.take(np.arange(len(headers)))
    assert frame.index.tolist() == list(range(len(headers)))
    codes = [encoded.residues[encoded.offsets[k]:encoded.offsets[k + 1]].tolist()
             for k in range(len(headers))]
    return list(zip(frame["id"].tolist(), frame["description"].tolist(), codes))


def _reader(data: bytes):
    """parse_block's records of ``data`` with their codes under BLOSUM62, or None where it
    refuses the text or a residue is not a letter of BLOSUM62."""
    from swdask import _fasta
    from swdask._scoring import make_scoring
    from swdask._sequences import SequenceError, encode

    try:
        table = _fasta.parse_block(data, "f.fa").to_pylist()
        codes = encode([r["sequence"] for r in table], make_scoring("BLOSUM62"))
    except (FastaError, SequenceError):
        return None
    return [(r["id"], r["description"],
             codes.residues[codes.offsets[k]:codes.offsets[k + 1]].tolist())
            for k, r in enumerate(table)]


def _has_gxx() -> bool:
    from swdask.gpu._runtime import host_compiler

    return host_compiler() is not None


needs_gxx = pytest.mark.skipif(not _has_gxx(), reason="the host emulation needs g++")


@needs_gxx
@settings(max_examples=250, deadline=None)
@given(st.lists(st.sampled_from([b">", b">id desc", b">caf\xc3\xa9", b"ACGT", b"ac gt", b"\t*-",
                                 b"", b"\r", b"\x00", b"\xc3\xa9", b"MKV", b" ", b"> x",
                                 b">sp|P1|A  two  words ", b">  lead", b"-.*12", b"acgtNNN",
                                 b"MKVLAAGIVGLLLAWHDSSKQ" * 4, b">long " + b"w" * 90]),
                max_size=14),
       st.sampled_from([b"\n", b"\r\n"]), st.booleans(), st.sampled_from([1, 3, 7, 64]))
def test_gpu_read_equals_the_reader(pieces, newline, final_newline, chunk):
    """fasta.cu (chunks of 1 to 64 bytes, so records, lines and headers cross chunks) reads a
    text as parse_block does, its codes those of the CPU's encode, or leaves it to the reader
    (None); it takes every text of the plain form (no '\\r', tab, NUL or non-ASCII byte, no
    blank in a sequence line, every residue a BLOSUM62 letter)."""
    data = newline.join(pieces) + (newline if final_newline else b"")
    found = _gpu_read(data, chunk)
    expected = _reader(data)
    if found is not None:
        assert found == expected
    plain = expected is not None and newline == b"\n" and not any(
        byte in data for byte in (b"\r", b"\t", b"\x00", b"\xc3"))
    plain = plain and not any(not p.startswith(b">") and b" " in p for p in pieces)
    plain = plain and expected != [] and data.lstrip(b"\n").startswith(b">")
    if plain:
        assert found is not None, data


@needs_gxx
def test_gpu_read_of_real_proteins_and_long_lines():
    """A real database file: fasta.cu's records equal the reader's, in chunks of 4096 bytes
    (the default) and of 97; a sequence line and a header line far longer than a chunk (no
    thread looks back for its line's start, so no line is too long) read the same."""
    path = Path(__file__).parent / "data" / "proteins_db.fasta"
    data = path.read_bytes()
    expected = _reader(data)
    assert expected and _gpu_read(data, 4096) == expected
    assert _gpu_read(data, 97) == expected
    rng = np.random.default_rng(7)
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", np.uint8)
    long_line = rng.choice(letters, 20_000).tobytes()
    data = (b">first " + b"d" * 5_000 + b"\n" + long_line + b"\n>second\nMKV\n>third x\n"
            + long_line[:999])
    expected = _reader(data)
    assert [len(codes) for *_, codes in expected] == [20_000, 3, 999]
    assert _gpu_read(data, 64) == expected
    assert _gpu_read(data, 4096) == expected


@needs_gxx
@pytest.mark.parametrize("data", [
    b"", b"\n\n", b"MKV\n>a\nMKV\n", b" \n>a\nMKV\n", b">a\r\nMKV\r\n", b">a\nMK\tV\n",
    b">a\nMK V\n", b">a\nMKV \n", b">caf\xc3\xa9\nMKV\n", b">a\nMK\x01V\n", b">\nMKV\n",
    b">a\nMKV\n>  \nMKV\n", b">a\nMK-V\n", b">a\nMK1V\n", b">a\nMKV\n>b\nW>\n",
    b">a\nMKV\n" + b"W" * 300 + b"\x7f",
])
@pytest.mark.parametrize("chunk", [1, 5, 4096])
def test_gpu_read_leaves_the_rest_to_the_reader(data, chunk):
    """Text outside the plain form (no record, text before the first header, '\\r', a tab,
    a blank in a sequence line, non-ASCII, a control byte, a header without an id) and a
    residue that is no BLOSUM62 letter ('-', '1', a '>' inside a line) leave the file to the
    reader: None."""
    assert _gpu_read(data, chunk) is None


def _column_layouts():
    """Arrow columns as encode_device_layout takes them (host arrays, as the emulation's
    device arrays are): nulls, empty strings, a slice, bytes behind null slots."""
    behind = pa.Array.from_buffers(
        pa.large_string(), 9,
        [pa.py_buffer(np.packbits(np.array([1, 0, 1, 0, 1, 0, 1, 0, 1], dtype=bool),
                                  bitorder="little").tobytes()),
         pa.py_buffer(np.array([0, 3, 6, 9, 11, 13, 13, 15, 16, 17], dtype=np.int64).tobytes()),
         pa.py_buffer(b"MKT   AKQ12WWxy C")], null_count=4)
    assert behind.to_pylist() == ["MKT", None, "AKQ", None, "WW", None, "xy", None, "C"]
    mixed = pa.array([None, "", "MKTAYIAK", "", None, "mktayiak", "BZX", "W" * 300],
                     type=pa.large_string())
    return {"mixed": mixed, "sliced": mixed[2:7], "behind nulls": behind,
            "behind nulls, sliced": behind[1:8], "all null": pa.array([None, None], pa.string()),
            "empty": pa.array([], pa.large_string())}


@needs_gxx
@pytest.mark.parametrize("name", ["mixed", "sliced", "behind nulls", "behind nulls, sliced",
                                  "all null", "empty"])
def test_device_lookup_equals_the_cpu_encode(name):
    """encode_device_layout's lookup (fasta.cu's lookup_codes, in the host emulation) gives
    the CPU encode's codes, offsets and validity, bytes behind null slots dropped; a byte
    that is no residue calls raise_bad."""
    from swdask._scoring import make_scoring
    from swdask._sequences import arrow_layout, encode
    from swdask.gpu._encode import encode_device_layout

    scoring = make_scoring("BLOSUM62")
    column = _column_layouts()[name]
    data, offsets, valid = arrow_layout(column)
    got = encode_device_layout(data, offsets, valid, scoring,
                               raise_bad=lambda: pytest.fail("no bad byte here"),
                               runtime=_emulation())
    want = encode(column, scoring)
    np.testing.assert_array_equal(got.residues, want.residues)
    np.testing.assert_array_equal(got.offsets, want.offsets)
    np.testing.assert_array_equal(got.valid, want.valid)


@needs_gxx
def test_device_lookup_calls_raise_bad():
    """A byte that is no residue ('1' under BLOSUM62) calls raise_bad, whose error is the
    one raised; a null row covering it (dropped first) does not."""
    from swdask._scoring import make_scoring
    from swdask.gpu._encode import encode_device_layout

    class Bad(Exception):
        pass

    def raise_bad():
        raise Bad

    scoring = make_scoring("BLOSUM62")
    data, offsets = np.frombuffer(b"MKTA1", np.uint8), np.array([0, 2, 5], dtype=np.int64)
    with pytest.raises(Bad):
        encode_device_layout(data, offsets, np.ones(2, dtype=bool), scoring,
                             raise_bad=raise_bad, runtime=_emulation())
    got = encode_device_layout(data, offsets, np.array([True, False]), scoring,
                               raise_bad=raise_bad, runtime=_emulation())
    assert got.residues.tolist() == scoring.lookup[[77, 75]].tolist()
    assert got.offsets.tolist() == [0, 2, 2]


@needs_gxx
def test_null_bytes_kernel_finds_covered_nulls():
    """fasta.cu's null_bytes (the check of a column on the device, here in the host
    emulation) says whether a null row covers bytes, as NumPy does."""
    from swdask.gpu._encode import _nulls_cover_bytes, _nulls_cover_bytes_on_device

    rng = np.random.default_rng(11)
    runtime = _emulation()
    for rows in (0, 1, 2, 50, 700):
        for _ in range(4):
            lengths = rng.integers(0, 3, rows) * rng.integers(0, 2, rows)
            offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
            valid = rng.random(rows) < 0.8
            want = bool((~valid & (lengths > 0)).any())
            assert _nulls_cover_bytes_on_device(runtime, offsets, valid) == want
            assert _nulls_cover_bytes(runtime, offsets, valid) == want


def test_the_numba_scan_is_one_compiled_version_for_any_buffer():
    """Text from ``bytes`` (read-only) and from a file block (writable) go through one
    compiled version of the numba scan, the one a new worker loads as it readies itself
    (``parse_block_numba_warm_up``): a second would be compiled or loaded in the worker's
    first task. Both parse alike."""
    from swdask import _fasta

    text = b">a one\nMKV\nLL\n>b\nWW\n" * 3
    _fasta.parse_block_numba_warm_up()
    read_only = _fasta._parse_numba(np.frombuffer(text, dtype=np.uint8), "<ro>", 1)
    writable = _fasta._parse_numba(np.frombuffer(bytearray(text), dtype=np.uint8), "<rw>", 1)
    assert read_only.equals(writable)
    assert read_only.column("sequence").to_pylist() == ["MKVLL", "WW"] * 3
    scan, split_headers = _fasta._compiled_scan()
    assert len(scan.signatures) == 1 and len(split_headers.signatures) == 1
