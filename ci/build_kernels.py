#!/usr/bin/env python3
"""Build the kernels swdask ships compiled (swdask/gpu/prebuilt/), or check that they are
current.

    python ci/build_kernels.py           # rebuild every binary and the manifest (needs NVRTC)
    python ci/build_kernels.py --check   # exit 1 if a binary is stale (no compiler needed)

Each variant of ``swdask.gpu._kernels.all_variants(cc)`` is compiled exactly as the runtime
compiles it when no binary is shipped: one NVRTC program per variant, the same source text,
the same options (:data:`swdask.gpu._kernels.COMPILE_OPTIONS` plus those CuPy adds,
:data:`CUPY_OPTIONS`) and one name expression, for each architecture of
``swdask.gpu._prebuilt.ARCHITECTURES`` (a cubin) and for ``PTX_ARCHITECTURE`` (PTX). The
images of one source and target are concatenated into one file, compressed with xz; the
manifest records each source's digest and, per variant, where its image lies and its symbol
(NVRTC's lowered name).

NVRTC is CUDA's runtime compiler, a library that needs no GPU: ``pip install
nvidia-cuda-nvrtc`` (the version the ``gpu`` extra's CuPy loads, so that the binaries equal
what the fallback compiles), or pass ``--nvrtc PATH/libnvrtc.so``. Why not nvcc: on an H200,
nvcc 13.0.88's build of the query-lane kernels (the many-queries search) differed from
NVRTC 13.0's in registers and spills, and the 200-query scan of sp500k took 4.84-4.93 s on
nvcc's binaries against 4.08-4.09 s on NVRTC's (docs/notes/gpu-search-job.md, kernels
compiled ahead).
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import json
import lzma
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swdask.gpu import _kernels, _prebuilt  # noqa: E402

#: The options CuPy's RawModule adds to a compile with NVRTC (cupy.cuda.compiler): flush
#: denormals (no effect on the integer kernels) and device code by default.
CUPY_OPTIONS = ("-ftz=true", "--device-as-default-execution-space")


class Nvrtc:
    """The few NVRTC calls the build needs, through ctypes (the library is all the build
    needs; CuPy's wrappers would need CuPy, which needs a GPU driver to import)."""

    def __init__(self, path: str):
        # NVRTC opens its builtins library by name; one beside it (a wheel's folder, not on
        # the loader's path) is loaded first so that the name resolves
        for builtins in sorted(glob.glob(os.path.join(os.path.dirname(path),
                                                      "libnvrtc-builtins.so.*"))):
            if ".alt." not in builtins:
                ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
        self.library = ctypes.CDLL(path)
        self.library.nvrtcGetErrorString.restype = ctypes.c_char_p
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self.library.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)))
        self.version = (major.value, minor.value)

    def _check(self, status: int, program=None) -> None:
        if status != 0:
            message = self.library.nvrtcGetErrorString(status).decode()
            if program is not None:
                size = ctypes.c_size_t()
                self.library.nvrtcGetProgramLogSize(program, ctypes.byref(size))
                log = ctypes.create_string_buffer(size.value)
                self.library.nvrtcGetProgramLog(program, log)
                message += "\n" + log.value.decode(errors="replace")[-4000:]
            raise RuntimeError(message)

    def compile(self, text: str, name: str, options: list[str], ptx: bool) -> tuple[bytes, str]:
        """(cubin or PTX, lowered name) of the one variant ``name`` of ``text``."""
        program = ctypes.c_void_p()
        self._check(self.library.nvrtcCreateProgram(
            ctypes.byref(program), text.encode(), b"kern.cu", 0, None, None))
        try:
            self._check(self.library.nvrtcAddNameExpression(program, name.encode()))
            encoded = [option.encode() for option in options]
            self._check(self.library.nvrtcCompileProgram(
                program, len(encoded), (ctypes.c_char_p * len(encoded))(*encoded)), program)
            size = ctypes.c_size_t()
            get_size, get = ((self.library.nvrtcGetPTXSize, self.library.nvrtcGetPTX) if ptx
                             else (self.library.nvrtcGetCUBINSize, self.library.nvrtcGetCUBIN))
            self._check(get_size(program, ctypes.byref(size)))
            image = ctypes.create_string_buffer(size.value)
            self._check(get(program, image))
            lowered = ctypes.c_char_p()
            self._check(self.library.nvrtcGetLoweredName(program, name.encode(),
                                                         ctypes.byref(lowered)))
            symbol = lowered.value.decode()
        finally:
            self.library.nvrtcDestroyProgram(ctypes.byref(program))
        return image.raw, symbol


def find_nvrtc() -> str | None:
    """libnvrtc from the ``nvidia-cuda-nvrtc`` wheel on sys.path, else the CUDA toolkit's."""
    for folder in sys.path:
        found = sorted(glob.glob(os.path.join(folder, "nvidia", "cu*", "lib", "libnvrtc.so.*")))
        if found:
            return found[0]
    found = sorted(glob.glob("/usr/local/cuda/lib64/libnvrtc.so.*"))
    return found[0] if found else None


def build(nvrtc: Nvrtc, jobs: int) -> None:
    out = _prebuilt.PREBUILT_DIR
    out.mkdir(exist_ok=True)
    work = [(source_name, target, name)
            for target, compute_capability in _prebuilt.targets()
            for source_name, names in _kernels.all_variants(compute_capability).items()
            for name in names]

    def one(item):
        source_name, target, name = item
        options = [*_kernels.COMPILE_OPTIONS, *CUPY_OPTIONS, f"-arch={target}"]
        ptx = target.startswith("compute_")
        # (NVRTC's PTX ends with the NUL the driver reads it up to)
        return nvrtc.compile(_kernels.source(source_name), name, options, ptx)

    with ThreadPoolExecutor(jobs) as pool:
        built = list(pool.map(one, work))
    sources: dict = {}
    images: dict = {}
    for (source_name, target, name), (image, symbol) in zip(work, built):
        entry = sources.setdefault(source_name, {
            "digest": _prebuilt.source_digest(source_name), "binaries": {}})
        variants = entry["binaries"].setdefault(target, {"variants": {}})["variants"]
        blob = images.setdefault((source_name, target), bytearray())
        variants[name] = [len(blob), len(image), symbol]
        blob += image
    for old in out.glob("*.xz"):
        old.unlink()
    for (source_name, target), blob in images.items():
        (out / _prebuilt.binary_name(source_name, target)).write_bytes(
            lzma.compress(bytes(blob), preset=9))
        print(f"{source_name} {target}: {len(sources[source_name]['binaries'][target]['variants'])}"
              f" variants, {len(blob):,} bytes", flush=True)
    manifest = {"compiler": "NVRTC {}.{}".format(*nvrtc.version),
                "options": [*_kernels.COMPILE_OPTIONS, *CUPY_OPTIONS],
                "sources": sources}
    _prebuilt.MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    size = sum(path.stat().st_size for path in out.iterdir())
    print(f"{out}: {len(list(out.iterdir()))} files, {size:,} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only check that the shipped binaries match the sources")
    parser.add_argument("--nvrtc", help="path of libnvrtc.so (default: found on sys.path)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="compiles at once (default: the cores)")
    args = parser.parse_args()
    if args.check:
        problems = _prebuilt.problems()
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            raise SystemExit(1)
        print(f"the kernels in {_prebuilt.PREBUILT_DIR} match the sources")
        return
    path = args.nvrtc or find_nvrtc()
    if path is None:
        raise SystemExit("NVRTC not found: pip install nvidia-cuda-nvrtc (the version CuPy "
                         "loads), or pass --nvrtc PATH/libnvrtc.so")
    build(Nvrtc(path), args.jobs)


if __name__ == "__main__":
    main()
