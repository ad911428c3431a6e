"""Encoding on the GPU (``swdask.gpu.encode_on_device``) equals the CPU ``encode``.

Marked ``gpu``: skipped where CuPy or a CUDA GPU is missing. Codes, offsets and validity are
compared element by element with :func:`swdask._sequences.encode` on nulls, empty strings,
sliced Arrow arrays, bytes behind null slots, lowercase and unknown letters; a column the
CPU rejects must raise the same error text on the GPU path; and ``align``/``align_pairs``
with ``backend="gpu"`` (which encode on the GPU) equal the CPU engine on real proteins.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import swdask
from swdask._scoring import make_scoring
from swdask._sequences import SequenceError, encode

pytestmark = pytest.mark.gpu

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

from swdask.gpu._encode import encode_on_device  # noqa: E402


@pytest.fixture(autouse=True)
def _real_runtime(setting):
    """The CUDA runtime, whatever the environment says (not the host emulation)."""
    setting("gpu.runtime", "cuda")


def read_fasta(path) -> list[str]:
    import gzip

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


def _with_bytes_behind_nulls() -> pa.Array:
    """Arrow lets a null slot cover bytes: here spaces and digits, which raise if read."""
    data = pa.py_buffer(b"MKT   AKQ12WWxy C")
    offsets = np.array([0, 3, 6, 9, 11, 13, 13, 15, 16, 17], dtype=np.int64)
    valid = np.array([1, 0, 1, 0, 1, 0, 1, 0, 1], dtype=bool)
    validity = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    array = pa.Array.from_buffers(pa.large_string(), len(valid),
                                  [validity, pa.py_buffer(offsets.tobytes()), data],
                                  null_count=int((~valid).sum()))
    assert array.to_pylist() == ["MKT", None, "AKQ", None, "WW", None, "xy", None, "C"]
    return array


def _columns():
    rng = np.random.default_rng(5)
    proteins = read_fasta(DATA / "proteins_db.fasta")[:60]
    mixed = [None, "", "MKTAYIAK", "", None, "mktayiak", "MkTaYiAk", "BZXJUO", "bzxjuo"]
    mixed += ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWYBZX"), int(rng.integers(0, 50))))
              for _ in range(40)]
    arrow = pa.array(mixed + proteins, type=pa.large_string())
    behind = _with_bytes_behind_nulls()
    return {
        "list with nulls and empties": mixed,
        "pandas pyarrow strings": pd.Series(mixed + proteins, dtype="string[pyarrow]"),
        "pandas object": pd.Series(mixed, dtype=object),
        "arrow string (32-bit offsets)": pa.array(mixed, type=pa.string()),
        "arrow sliced": arrow[7:80],
        "arrow sliced to one row": arrow[5:6],
        "arrow sliced to nothing": arrow[10:10],
        "chunked arrow": pa.chunked_array([arrow[:30], arrow[30:]]),
        "bytes behind nulls": behind,
        "bytes behind nulls, sliced": behind[1:8],
        "bytes behind nulls, sliced from a null": behind[3:6],
        "all null": [None, None, None],
        "all empty": ["", "", ""],
        "empty column": [],
    }


COLUMNS = _columns()


def _same(got, want):
    assert isinstance(got.residues, cupy.ndarray) and isinstance(got.offsets, cupy.ndarray)
    assert got.residues.dtype == np.uint8 and got.offsets.dtype == np.int64
    np.testing.assert_array_equal(cupy.asnumpy(got.residues), want.residues)
    np.testing.assert_array_equal(cupy.asnumpy(got.offsets), want.offsets)
    np.testing.assert_array_equal(np.asarray(got.valid, dtype=bool), want.valid)
    assert len(got) == len(want)


@pytest.mark.parametrize("name", list(COLUMNS))
@pytest.mark.parametrize("scheme", ["BLOSUM62", "dna"])
def test_codes_offsets_valid_equal_the_cpu(name, scheme):
    scoring = (make_scoring("BLOSUM62") if scheme == "BLOSUM62"
               else make_scoring(None, gap_open=5, gap_extend=2, match=2, mismatch=-3))
    values = COLUMNS[name]
    try:
        want = encode(values, scoring)
    except SequenceError as exc:  # e.g. '*' is no DNA letter: the same error, then
        assert _error_text(encode_on_device, values, scoring) == str(exc)
        return
    _same(encode_on_device(values, scoring), want)


@pytest.mark.parametrize("name", list(COLUMNS))
def test_device_layout_equals_the_cpu(name):
    """A column whose offsets and validity are on the device too (as a cuDF column's are):
    the null check runs as fasta.cu's null_bytes kernel, and the codes equal the CPU's."""
    from swdask._sequences import arrow_layout
    from swdask.gpu._encode import encode_device_layout

    scoring = make_scoring("BLOSUM62")
    values = COLUMNS[name]
    try:
        want = encode(values, scoring)
    except SequenceError:
        return
    data, offsets, valid = arrow_layout(values)
    got = encode_device_layout(cupy.asarray(data), cupy.asarray(offsets), cupy.asarray(valid),
                               scoring, raise_bad=lambda: pytest.fail("no bad byte here"))
    np.testing.assert_array_equal(cupy.asnumpy(got.residues), want.residues)
    np.testing.assert_array_equal(cupy.asnumpy(got.offsets), want.offsets)


def test_dna_letters_and_lowercase():
    scoring = make_scoring(None, gap_open=5, gap_extend=2, match=2, mismatch=-3)
    values = ["ACGTN", "acgtn", "ACGU", "acgu", "RYKM", None, ""]
    got = encode_on_device(values, scoring)
    _same(got, encode(values, scoring))
    assert int(cupy.asnumpy(got.residues).max()) < len(scoring.alphabet)


def _error_text(function, *args, **kwargs) -> str:
    with pytest.raises(SequenceError) as info:
        function(*args, **kwargs)
    return str(info.value)


@pytest.mark.parametrize("values, on_unknown", [
    (["MKTAYIAK", "MKT AYIAK"], "substitute"),           # whitespace
    (["MKTAYIAK", None, "MK-TA"], "substitute"),         # a gap character
    (["MKT", "MKTÄYIAK"], "substitute"),                 # non-ASCII
    (["MKT", "MK1T"], "raise"),                          # a digit
    (["MKTAYIAK", "", "MKJTAYIAK"], "raise"),            # an unknown letter
    (["MKT", "mkjt"], "raise"),                          # lowercase unknown letter
    (["MKT", 42, "MKT"], "substitute"),                  # not a string
])
def test_errors_are_the_cpu_errors(values, on_unknown):
    scoring = make_scoring("BLOSUM62", on_unknown=on_unknown)
    labels = pd.Index([f"row{k}" for k in range(len(values))])
    want = _error_text(encode, values, scoring, labels=labels, what="target row")
    got = _error_text(encode_on_device, values, scoring, labels=labels, what="target row")
    assert got == want
    assert "row" in got


def test_error_behind_a_slice_names_the_sliced_row():
    array = pa.array(["MKT", "MK T", "MKT", "MKJ"], type=pa.large_string())[2:]
    scoring = make_scoring("BLOSUM62", on_unknown="raise")
    want = _error_text(encode, array, scoring)
    assert _error_text(encode_on_device, array, scoring) == want
    assert "'J'" in want


def _targets():
    path = Path(os.environ.get("SWDASK_MMSEQS_DB",
                               "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz"))
    db = read_fasta(path)[:3000] if path.exists() else read_fasta(DATA / "proteins_db.fasta")
    db = db + [None, "", db[0].lower(), db[1][:40] + "BZJ" + db[1][40:]]
    return pd.Series(db, index=[f"t{k}" for k in range(len(db))], dtype="string[pyarrow]")


@pytest.mark.parametrize("positions", [True, "end", False])
def test_align_on_gpu_equals_cpu(positions):
    series = _targets()
    for query in read_fasta(DATA / "proteins_query.fasta")[:3]:
        got = swdask.align(query, series, positions=positions, backend="gpu")
        want = swdask.align(query, series, positions=positions, backend="cpu")
        pd.testing.assert_frame_equal(got, want)
    part = series.iloc[1000:1600]  # a slice of the column: Arrow offset not 0
    got = swdask.align(query, part, backend="gpu")
    pd.testing.assert_frame_equal(got, swdask.align(query, part, backend="cpu"))


def test_align_on_gpu_raises_the_cpu_error():
    series = pd.Series(["MKTAYIAK", None, "MKTA YIAK"], index=["a", "b", "c"])
    want = _error_text(swdask.align, "MKTAYIAK", series, backend="cpu")
    assert _error_text(swdask.align, "MKTAYIAK", series, backend="gpu") == want
    assert "'c'" in want


def test_align_pairs_on_gpu_equals_cpu():
    series = _targets()
    rng = np.random.default_rng(9)
    queries = pd.Series(series.sample(frac=1.0, random_state=3).to_numpy(),
                        index=series.index, dtype="string[pyarrow]")
    queries.iloc[rng.integers(0, len(queries), 10)] = None
    for positions in (True, "end"):
        got = swdask.align_pairs(queries, series, positions=positions, backend="gpu")
        want = swdask.align_pairs(queries, series, positions=positions, backend="cpu")
        pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize("name", ["proteins_db.fasta", "proteins_query.fasta"])
def test_fasta_text_parsed_on_the_gpu_equals_the_reader(name, tmp_path):
    """A FASTA file parsed and encoded on the GPU (the one-GPU search job's read) gives the
    codes, offsets and validity of the reader's frame encoded on the CPU, and the ids and
    descriptions of any records asked for; text outside the plain form (a tab in a sequence
    line) and a byte no residue ('-') leave the file to the reader (None)."""
    from swdask._fasta import read_fasta_frame, whole_plain_text
    from swdask.gpu._encode import encode_fasta_text

    scoring = make_scoring("BLOSUM62")
    path, text = whole_plain_text(str(DATA / name))
    encoded, headers = encode_fasta_text(text, path, scoring)
    frame = read_fasta_frame(path, threads=1)
    want = encode(frame["sequence"], scoring)
    assert isinstance(encoded.residues, cupy.ndarray)
    np.testing.assert_array_equal(encoded.residues.get(), want.residues)
    np.testing.assert_array_equal(cupy.asnumpy(encoded.offsets), want.offsets)
    np.testing.assert_array_equal(np.asarray(encoded.valid), want.valid)
    rows = np.array([len(frame) - 1, 0, len(frame) // 2])
    pd.testing.assert_frame_equal(headers.take(rows), frame[["id", "description"]].iloc[rows])
    lines = text.tobytes().split(b"\n")
    for bad in (b"\t", b"-"):
        changed = tmp_path / "changed.fasta"
        changed.write_bytes(b"\n".join(lines[:2] + [lines[2][:5] + bad + lines[2][5:]]
                                       + lines[3:]))
        assert encode_fasta_text(whole_plain_text(str(changed))[1], str(changed),
                                 scoring) is None


#: Run in a new process (CuPy's kernels are cached per process): the FASTA parse and the
#: lookup, with every CuPy compile counted after fasta.cu's own kernels are loaded.
_COUNT_COMPILES = r"""
import sys

import cupy
import cupy.cuda.compiler as compiler
import numpy as np

from swdask._fasta import whole_plain_text
from swdask._scoring import make_scoring
from swdask.gpu import _encode, _kernels
from swdask.gpu._runtime import get_runtime

runtime = get_runtime()
for name in _kernels.FASTA_NAMES:
    runtime.function("fasta.cu", name)
compiled = []
original = compiler._compile_with_cache_cuda


def counted(source, *args, **kwargs):
    compiled.append(source)
    return original(source, *args, **kwargs)


compiler._compile_with_cache_cuda = counted
scoring = make_scoring("BLOSUM62")
path, text = whole_plain_text(sys.argv[1])
encoded, headers = _encode.encode_fasta_text(text, path, scoring, runtime)
assert len(encoded) == len(headers) > 0
_encode.encode_on_device(["MKT", None, "AKQ", ""], scoring, runtime=runtime)
data = cupy.asarray(np.frombuffer(b"MKT   AKQ", np.uint8))
offsets = cupy.asarray(np.array([0, 3, 6, 9], dtype=np.int64))
valid = cupy.asarray(np.array([True, False, True]))
got = _encode.encode_device_layout(data, offsets, valid, scoring, raise_bad=None,
                                   runtime=runtime)
assert cupy.asnumpy(got.offsets).tolist() == [0, 3, 3, 6]
print("compiled", len(compiled))
"""


def test_parse_and_lookup_compile_no_cupy_kernel():
    """The one-GPU job's FASTA parse and the lookup of a column (host or device layout, bytes
    behind a null) launch fasta.cu's kernels and CuPy operations that compile nothing: on a
    fresh machine CuPy compiled each of its kernels with NVRTC (issue 45)."""
    import subprocess
    import sys

    import cupy.cuda.compiler as compiler

    if not hasattr(compiler, "_compile_with_cache_cuda"):
        pytest.skip("this CuPy compiles through another function")
    result = subprocess.run([sys.executable, "-c", _COUNT_COMPILES,
                             str(DATA / "proteins_db.fasta")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "compiled 0" in result.stdout, result.stdout + result.stderr[-2000:]


@pytest.mark.parametrize("size", [0, 1000, (32 << 20) + 12_345, (48 << 20)])
@pytest.mark.parametrize("dtype", [np.uint8, np.int64])
def test_upload_equals_the_host_array(size, dtype):
    """``CudaRuntime.upload`` (large arrays through pinned chunks, the last one partial or
    whole) gives back the host array, whatever its dtype, and no chunk is left in flight:
    the host array may change at once."""
    from swdask.gpu._runtime import get_runtime

    runtime = get_runtime()
    count = size // np.dtype(dtype).itemsize
    host = np.random.default_rng(size).integers(0, 120, count).astype(dtype)
    device = runtime.upload(host)
    expected = host.copy()
    host[:] = 0
    assert device.dtype == expected.dtype and device.shape == expected.shape
    assert np.array_equal(cupy.asnumpy(device), expected)


def test_staged_upload_in_parts(monkeypatch):
    """A staged upload in three parts, through buffers far smaller than a part (each buffer
    refilled only after its copy is done): after a part's event the device holds that
    part's bytes, a part with no bytes has no event, and once the upload is closed the host
    arrays may change. A range outside its array is refused before anything is copied."""
    from swdask.gpu import _runtime

    monkeypatch.setattr(_runtime, "_STAGE_BYTES", 1000)
    runtime = _runtime.get_runtime()
    rng = np.random.default_rng(3)
    letters = rng.integers(0, 256, 100_003).astype(np.uint8)
    numbers = rng.integers(-(1 << 40), 1 << 40, 5_000)
    want = [letters.copy(), numbers.copy()]
    parts = [[(0, 50_000), (0, 8_000)], [(7, 7), (0, 0)],
             [(50_000, letters.size), (8_000, numbers.nbytes)]]
    with runtime.staged_upload([letters, numbers], parts) as staged:
        staged.ready(0).synchronize()
        assert np.array_equal(cupy.asnumpy(staged.device[0][:50_000]), want[0][:50_000])
        assert np.array_equal(cupy.asnumpy(staged.device[1][:1_000]), want[1][:1_000])
        assert staged.ready(1) is None
    letters[:] = 0
    numbers[:] = 0
    for device, expected in zip(staged.device, want):
        assert device.dtype == expected.dtype and device.shape == expected.shape
        assert np.array_equal(cupy.asnumpy(device), expected)
    with pytest.raises(ValueError, match="outside its array of 40000 bytes"):
        runtime.staged_upload([letters, numbers], [[(0, 10), (0, 40_001)]])
