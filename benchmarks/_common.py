"""What the benchmark scripts share: reading FASTA, naming the device, timing on the GPU,
compiling kernel variants ahead, and writing result JSON stamped with device, date and commit.

The scripts run as ``python3 benchmarks/<script>.py``, so this folder is on ``sys.path`` and
``from _common import ...`` needs nothing more. swdask itself must be importable: installed
(``pip install -e .``) or on ``PYTHONPATH`` (``ci/gpu_run.sh`` puts the checkout there).

Every script is named ``bench_<workload or subject>_<what it measures>``, ending in ``_gpu``
where it needs a GPU and ``_cpu`` where it compares CPU code only (``bench_w1_gpu.py``,
``bench_w2_traceback_gpu.py``, ``bench_search_job.py``); a module that is no script starts
with ``_``. Of swdask the scripts import ``swdask`` and ``swdask.lowlevel`` only: what a
script needs of the engine beyond them goes into ``swdask.lowlevel``, documented
(``tests/test_benchmarks_api.py`` checks both rules).

Importing this module is cheap (no swdask, pandas or CuPy until a function needs them):
``ci/steps/w2.sh`` imports ``bench_w2_gpu`` only to map set names to file names.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# ------------------------------------------------------------------------------- FASTA


def read_fasta(path):
    """The whole file as one pandas DataFrame (``id``: the header's first word,
    ``description``, ``sequence``; a RangeIndex), read by the public ``swdask.read_fasta``
    (vectorised: sp500k's 231 MB in a few seconds). ``sequence`` has pandas' default string
    dtype (``"str"``, pyarrow-backed, no copy), what ``pd.Series(list_of_str)`` gives, so a
    benchmark aligning it times the same column as one built from a list."""
    import swdask

    frame = swdask.read_fasta(str(path), blocksize=None).compute()
    frame["sequence"] = frame["sequence"].astype("str")
    return frame


def read_sequences(path) -> tuple[list[str], list[str]]:
    """``(ids, sequences)`` of a FASTA file as Python lists (query files, small databases)."""
    frame = read_fasta(path)
    return frame["id"].tolist(), frame["sequence"].tolist()


def sample_proteins(path, count: int, seed: int):
    """``count`` records of a FASTA file drawn without replacement (NumPy's
    ``default_rng(seed)``), in file order, as :func:`read_fasta` gives them: the search
    benchmarks' ``search-1000`` queries (1,000 of mmseqs2's DB.fasta.gz, seed 10)."""
    import numpy as np

    pool = read_fasta(path)
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(len(pool), size=min(count, len(pool)), replace=False))
    return pool.iloc[chosen].reset_index(drop=True)


def short_name(header: str) -> str:
    """A CUDASW++ query's accession (``gi|1|sp|P02232.2|LGB1_VICFA`` -> ``P02232``)."""
    parts = header.split("|")
    return parts[3].split(".")[0] if len(parts) > 3 else (parts[1] if len(parts) > 1 else header)


def nearest(sequences, length: int) -> int:
    """Index of the sequence whose length is closest to ``length`` (the first such)."""
    return min(range(len(sequences)), key=lambda k: abs(len(sequences[k]) - length))


def take_rows(encoded, rows):
    """Rows ``rows`` of host-side ``swdask.lowlevel.EncodedSequences`` as a column of their
    own (every row valid)."""
    import numpy as np

    from swdask.lowlevel import EncodedSequences

    pieces = [encoded.residues[encoded.offsets[r]:encoded.offsets[r + 1]] for r in rows]
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in pieces])]).astype(np.int64)
    residues = np.concatenate(pieces) if pieces else encoded.residues[:0]
    return EncodedSequences(residues, offsets, np.ones(len(rows), dtype=bool))


# ------------------------------------------------------------------------------ device


def gpu_properties() -> dict | None:
    """The current CUDA device's properties (``name`` as ``str``), or ``None`` without CuPy
    or a GPU."""
    try:
        import cupy

        props = dict(cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id))
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: not a GPU machine
        return None
    if isinstance(props.get("name"), bytes):
        props["name"] = props["name"].decode()
    return props


def cpu_model() -> str:
    """The CPU's model name (``lscpu``), else what ``platform`` knows."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> dict:
    """The CPU's family and model numbers and its SIMD flags (AVX2, AVX-512 ...), from
    /proc/cpuinfo where there is one: what tells two draws of one model name apart."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor's block
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return {"cpu_family": fields.get("cpu family"), "cpu_model": fields.get("model"),
            "cpu_flags": sorted(f for f in fields.get("flags", "").split()
                                if f.startswith(("avx", "sse4", "fma")))}


def device_name() -> str:
    """The GPU's name where CuPy sees one, else the CPU's model."""
    props = gpu_properties()
    return str(props["name"]) if props else cpu_model()


def slug(name: str) -> str:
    """A device name as a file-name part: ``"NVIDIA H200"`` -> ``"nvidia-h200"``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


# ------------------------------------------------------------------------ date, commit


def today() -> str:
    return dt.date.today().isoformat()


def git_commit() -> str:
    """The commit measured: ``$SWDASK_COMMIT`` (the GPU machine gets no ``.git``), else the
    checkout's HEAD, else ``"unknown"``."""
    if os.environ.get("SWDASK_COMMIT"):
        return os.environ["SWDASK_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def git_dirty() -> bool:
    """Whether the package's sources differ from the commit (``git status -- swdask``)."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--", "swdask"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        return bool(out.strip())
    except (OSError, subprocess.CalledProcessError):
        return False


def add_commit_argument(parser) -> None:
    """``--commit SHA`` (default: :func:`git_commit`), written into the result JSON."""
    parser.add_argument("--commit", default=None,
                        help="commit measured (default: $SWDASK_COMMIT, else git HEAD)")


def stamp(commit: str | None = None, *, device: str | None = None,
          date: str | None = None) -> dict:
    """The fields every result JSON carries: ``device``, ``date``, ``commit``."""
    return {"device": device or device_name(), "date": date or today(),
            "commit": commit or git_commit()}


def result_path(out, name: str, device: str, date: str, tag: str = "") -> Path:
    """``<out>/<name>-<device slug><tag>-<date>.json`` (the folder is created)."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}-{slug(device)}{tag}-{date}.json"


def write_json(path, record, indent: int = 1) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=indent) + "\n")
    return path


def write_result(out, name: str, record: dict, tag: str = "", indent: int = 1) -> Path:
    """Write ``record`` (which holds ``device`` and ``date``, see :func:`stamp`) as
    :func:`result_path` names it; returns the path."""
    return write_json(result_path(out, name, record["device"], record["date"], tag), record,
                      indent)


# ------------------------------------------------------------------------------ timing


def synchronize() -> None:
    """Wait for the GPU's queued work (nothing to wait for where CuPy was never imported)."""
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        cupy.cuda.Device().synchronize()


def timed(fn):
    """``(seconds, fn())``: wall clock with the device synchronised before and after."""
    synchronize()
    start = time.perf_counter()
    out = fn()
    synchronize()
    return time.perf_counter() - start, out


def run_process(command, stdout=None, env=None, cwd=None) -> tuple[float, str]:
    """Run ``command`` as a new process (a user's whole job): ``(wall seconds, stderr)``;
    stdout goes to ``stdout`` (a file) or nowhere; a failure raises with its stderr."""
    start = time.perf_counter()
    done = subprocess.run([str(c) for c in command], stdout=stdout or subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed:\n{done.stderr[-3000:]}")
    return seconds, done.stderr


def command_runs(command, repeats: int, label: str, parse) -> list[dict]:
    """``command`` run ``repeats + 1`` times as new processes, the first a warm-up (numba's
    and the kernels' caches), not counted: each counted run's wall clock and the phases
    ``parse(stderr)`` and ``parse(stderr, in_tasks=True)`` read from its ``-v`` lines
    (``bench_w5_long_gpu.command_phases``), each run printed as it ends."""
    runs = []
    for repeat in range(repeats + 1):
        seconds, stderr = run_process(command)
        phases, inside = parse(stderr), parse(stderr, in_tasks=True)
        if repeat:
            runs.append({"wall_seconds": round(seconds, 3), "phases": phases,
                         "in_tasks": inside})
        print(f"{label} run {repeat}: {seconds:.2f} s, {phases}, {inside}", flush=True)
    return runs


def timed_repeats(fn, repeats: int):
    """``(seconds of each of repeats calls, the last call's result)``, as :func:`timed`."""
    times, out = [], None
    for _ in range(repeats):
        seconds, out = timed(fn)
        times.append(seconds)
    return times, out


# ------------------------------------------------------------------ kernel compilation

def engine_variants(compute_capability: int, sources=None) -> list[tuple[str, str]]:
    """Every kernel swdask can launch on such a GPU (``swdask.lowlevel.kernel_variants``), as
    (source file, name expression); only those of ``sources`` (file names) when given."""
    from swdask.lowlevel import kernel_variants

    return [(source, name) for source, names in
            kernel_variants(compute_capability).items()
            if sources is None or source in sources for name in names]


def pair_variants(forced) -> list[tuple[str, str]]:
    """The row-wise pairs kernels' instances for ``forced`` ((family, shape): family
    "inter", "intra" or "long"), both scorings, both passes (``swdask.lowlevel.pairs_kernel``)."""
    from swdask.lowlevel import pairs_kernel

    return [pairs_kernel(family, shape, kind, rev)
            for family, shape in forced for kind in (0, 1) for rev in (False, True)]


def _compile_some(variants) -> list[str]:
    """In a pool process: compile ``variants`` through the GPU runtime, as the engine does
    (so CuPy's disk cache, keyed by source text and options, serves the engine later); the
    failures, described."""
    from swdask.lowlevel import get_backend

    runtime = get_backend("gpu").runtime
    failed = []
    for source, name in variants:
        try:
            runtime.function(source, name)
        except Exception as exc:  # noqa: BLE001 - report it, compile the others
            failed.append(f"{source} {name}: {exc!r}"[:400])
    return failed


def compile_kernels(variants, processes: int = 16) -> tuple[int, list[str]]:
    """Compile (source, name) variants with NVRTC, ``processes`` at once (spawned processes:
    one NVRTC compile uses one core); ``(compiled, failures)``."""
    import multiprocessing as mp

    variants = sorted(set(variants))
    if not variants:
        return 0, []
    processes = max(1, min(processes, len(variants)))
    with mp.get_context("spawn").Pool(processes) as pool:
        parts = pool.map(_compile_some, [variants[k::processes] for k in range(processes)])
    failed = [line for part in parts for line in part]
    return len(variants) - len(failed), failed
