"""Kernels compiled ahead of time: the binaries shipped in ``prebuilt/`` and how the runtime
finds one.

Why: NVRTC builds a kernel variant the first time a process on a machine launches it, and
caches it on disk. On a fresh machine (a container, a CI runner, a batch job, a Dask worker on
a new node) the first job spent seconds compiling (docs/notes/gpu-search-job.md, warm and
cold). The peers ship compiled kernels; so does swdask.

* ``ci/build_kernels.py`` (the one command that rebuilds them) compiles every variant of
  :func:`swdask.gpu._kernels.all_variants` as the runtime would, one NVRTC program each, for
  each architecture of :data:`ARCHITECTURES`, plus PTX for :data:`PTX_ARCHITECTURE` that the
  driver compiles for newer GPUs. The images of one source file and architecture lie end to
  end in one file, compressed with xz (the standard library's ``lzma``). ``manifest.json``
  records, per source file, the digest of the text compiled (:func:`source_digest`) and, per
  binary and variant, where its image lies and its symbol.
* The runtime (:meth:`swdask.gpu._runtime.CudaRuntime.function`) asks :func:`load` first: a
  binary is used only where its source's digest equals the digest of the source in the
  package now (so an edited ``.cu`` file falls back to NVRTC instead of running stale code),
  the GPU can run it (a cubin of the same major architecture and the same or a lower minor,
  or the PTX for a newer GPU) and the variant is in it. Anything else, or an image the driver
  refuses (a driver older than the compiler that built it), compiles with NVRTC as before.
  The setting ``swdask.gpu.prebuilt: false`` compiles everything with NVRTC.
* :func:`problems` says what is stale (``tests/test_prebuilt.py`` and ``.ci/run`` fail on
  it): a source whose text changed since the build, a variant the engine can launch that no
  binary has, a binary missing.

Why one file per (source, architecture): the cubins compress about tenfold, the wheel stays
small, and a process decompresses only the files for its GPU, and loads only the variants it
launches.
"""
from __future__ import annotations

import hashlib
import json
import lzma
import threading
from functools import lru_cache
from pathlib import Path

from . import _kernels

PREBUILT_DIR = _kernels.SOURCE_DIR / "prebuilt"
MANIFEST = PREBUILT_DIR / "manifest.json"
#: Compute capabilities built as machine code (cubins): Ampere (A100; RTX 30), Ada (L4,
#: L40; RTX 40), Hopper (H100, H200), Blackwell (B200; RTX 50). A cubin also runs on later
#: minor versions of its major one (sm_80's on sm_87, sm_100's on sm_103).
ARCHITECTURES = (80, 86, 89, 90, 100, 120)
#: PTX built for this virtual architecture, which the driver compiles (and caches) for a GPU
#: newer than every cubin's major version. compute_100 rather than compute_120: PTX runs on
#: its own architecture and later ones, and this one reaches sm_110 as well.
PTX_ARCHITECTURE = 100

_lock = threading.Lock()


def source_digest(source_name: str) -> str:
    """SHA-256 of what a compile of ``source_name`` depends on: the compile options and the
    source text with its local headers inlined (:func:`swdask.gpu._kernels.source`)."""
    text = "\0".join(_kernels.COMPILE_OPTIONS) + "\0" + _kernels.source(source_name)
    return hashlib.sha256(text.encode()).hexdigest()


def binary_name(source_name: str, target: str) -> str:
    """The file of ``source_name`` built for ``target`` (``"sm_90"``, ``"compute_100"``)."""
    return f"{Path(source_name).stem}.{target}.xz"


@lru_cache(maxsize=1)
def manifest() -> dict:
    """The manifest of the shipped binaries (empty where none are shipped)."""
    try:
        return json.loads(MANIFEST.read_text())
    except FileNotFoundError:
        return {}


@lru_cache(maxsize=None)
def _current_digest(source_name: str) -> str:
    return source_digest(source_name)


def target_for(compute_capability: int, built=None) -> str | None:
    """The binary a GPU of ``compute_capability`` (e.g. 90) runs, among ``built`` targets
    (default: the manifest's): the cubin of its own architecture, else of the highest minor
    version below it of the same major one, else the PTX if the GPU is at least as new."""
    if built is None:
        built = {target for entry in manifest().get("sources", {}).values()
                 for target in entry.get("binaries", {})}
    major = compute_capability // 10
    cubins = [int(t[3:]) for t in built if t.startswith("sm_")]
    same_major = [cc for cc in cubins if cc // 10 == major and cc <= compute_capability]
    if same_major:
        return f"sm_{max(same_major)}"
    ptx = [int(t[8:]) for t in built if t.startswith("compute_")]
    usable = [cc for cc in ptx if cc <= compute_capability]
    return f"compute_{max(usable)}" if usable else None


def find(source_name: str, name: str,
         compute_capability: int) -> tuple[Path, int, int, str] | None:
    """(binary file, offset and size of the variant's image in it once decompressed, symbol)
    of variant ``name`` of ``source_name`` for such a GPU, or None where no shipped binary is
    current and holds it."""
    entry = manifest().get("sources", {}).get(source_name)
    if not entry or entry.get("digest") != _current_digest(source_name):
        return None
    target = target_for(compute_capability, entry.get("binaries", {}))
    if target is None:
        return None
    variant = entry["binaries"][target]["variants"].get(name)
    if variant is None:
        return None
    offset, size, symbol = variant
    return PREBUILT_DIR / binary_name(source_name, target), offset, size, symbol


_refused: set[tuple[int, Path]] = set()


@lru_cache(maxsize=None)
def _images(path: Path) -> bytes:
    """Every image of one binary file, decompressed (once per process)."""
    return lzma.decompress(path.read_bytes())


def load(cupy, device_id: int, source_name: str, name: str):
    """The shipped kernel ``name`` of ``source_name`` on device ``device_id`` (current), or
    None: not shipped for this GPU, out of date, or refused by the driver (remembered, so
    that each file is tried once per device)."""
    found = find(source_name, name, int(cupy.cuda.Device(device_id).compute_capability))
    if found is None:
        return None
    path, offset, size, symbol = found
    with _lock:
        if (device_id, path) in _refused:
            return None
        try:
            module = cupy.cuda.function.Module()
            module.load(_images(path)[offset:offset + size])
        except (OSError, lzma.LZMAError, cupy.cuda.driver.CUDADriverError):
            _refused.add((device_id, path))
            return None
    return LoadedKernel(cupy, module, module.get_function(symbol))


class LoadedKernel:
    """A kernel from a shipped binary, launched and configured as ``cupy.RawKernel`` is (the
    runtime launches both the same way)."""

    __slots__ = ("_driver", "module", "function")

    def __init__(self, cupy, module, function):
        self._driver = cupy.cuda.driver
        self.module = module  # keeps the module loaded while the kernel lives
        self.function = function

    def __call__(self, grid, block, args, *, shared_mem: int = 0, stream=None):
        self.function(grid, block, args, shared_mem=shared_mem, stream=stream)

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        return self._attribute("MAX_DYNAMIC_SHARED_SIZE_BYTES")

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value: int) -> None:
        self._driver.funcSetAttribute(
            self.function.ptr, self._driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            int(value))

    @property
    def attributes(self) -> dict[str, int]:
        """The kernel's resources, under the keys of ``cupy.RawKernel.attributes``."""
        keys = ("max_threads_per_block", "shared_size_bytes", "const_size_bytes",
                "local_size_bytes", "num_regs", "ptx_version", "binary_version")
        return {key: self._attribute(key.upper()) for key in keys}

    def _attribute(self, key: str) -> int:
        return self._driver.funcGetAttribute(
            getattr(self._driver, f"CU_FUNC_ATTRIBUTE_{key}"), self.function.ptr)


def targets() -> list[tuple[str, int]]:
    """Every binary built per source: (target, compute capability whose variants it holds)."""
    return ([(f"sm_{cc}", cc) for cc in ARCHITECTURES]
            + [(f"compute_{PTX_ARCHITECTURE}", PTX_ARCHITECTURE)])


def problems() -> list[str]:
    """What makes the shipped binaries stale against the sources in the package (empty when
    they are current): each line names the source or binary and how to fix it."""
    fix = "rebuild them: python ci/build_kernels.py (needs NVRTC)"
    sources = manifest().get("sources")
    if not sources:
        return [f"no prebuilt kernels in {PREBUILT_DIR} ({fix})"]
    found = []
    for source_name in _kernels.all_variants():
        entry = sources.get(source_name)
        if entry is None:
            found.append(f"{source_name}: not built ({fix})")
            continue
        if entry["digest"] != _current_digest(source_name):
            found.append(f"{source_name}: changed since its binaries were built ({fix})")
            continue
        for target, compute_capability in targets():
            binary = entry["binaries"].get(target)
            missing = sorted(set(_kernels.all_variants(compute_capability)[source_name])
                             - set(binary["variants"] if binary else ()))
            if binary is None:
                found.append(f"{source_name}: no {target} binary ({fix})")
            elif missing:
                found.append(f"{source_name} for {target}: {len(missing)} variants missing, "
                             f"e.g. {missing[0]} ({fix})")
            elif not (PREBUILT_DIR / binary_name(source_name, target)).is_file():
                found.append(f"{binary_name(source_name, target)}: missing ({fix})")
    return found
