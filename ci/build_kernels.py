#!/usr/bin/env python3
"""Build the kernels swdask ships compiled (swdask/gpu/prebuilt/), or check that they are
current.

    python ci/build_kernels.py           # rebuild every binary and the manifest (needs nvcc)
    python ci/build_kernels.py --check   # exit 1 if a binary is stale (no compiler needed)

Every variant of ``swdask.gpu._kernels.all_variants(cc)`` is compiled with nvcc, from the
same text and options NVRTC compiles at run time, into one cubin per (source file,
architecture of ``swdask.gpu._prebuilt.ARCHITECTURES``) and one PTX per source file for
``PTX_ARCHITECTURE``; each is compressed with xz. The manifest records each source's digest
and, per binary, the symbol of every variant (the C++ name's Itanium mangling, checked against
the binary's own symbols: each variant must match exactly one).

Why nvcc, and not NVRTC ahead of time: nvcc needs no GPU and no Python CUDA package on the
build machine and builds for any architecture; the two share the front end and ptxas, and the
GPU tests and the W1 check run on these binaries (ci/gpu_run.sh).
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swdask.gpu import _kernels, _prebuilt  # noqa: E402

_EXPRESSION = re.compile(r"(?:(\w+)::)?(\w+)(?:<(.*)>)?")


def mangled_prefix(expression: str) -> str:
    """The start of the Itanium-mangled symbol of a kernel named as swdask names its variants
    (``ns::kernel<type or int or bool, ...>``, ``kernel<...>`` or ``ns::kernel``): everything
    before the parameter types, which identifies the variant."""
    match = _EXPRESSION.fullmatch(expression.replace(" ", ""))
    if match is None:
        raise ValueError(f"cannot mangle {expression!r}")
    namespace, base, arguments = match.groups()

    def identifier(text: str) -> str:
        return f"{len(text)}{text}"

    template = ""
    if arguments is not None:
        encoded = []
        for argument in arguments.split(","):
            if argument in ("true", "false"):
                encoded.append(f"Lb{int(argument == 'true')}E")
            elif re.fullmatch(r"-?\d+", argument):
                encoded.append(f"Li{argument.replace('-', 'n')}E")
            else:  # a type of the kernel's own namespace: its first substitution, S_
                type_namespace, _, type_name = argument.rpartition("::")
                if not namespace or type_namespace != namespace:
                    raise ValueError(f"cannot mangle argument {argument!r} of {expression!r}")
                encoded.append(f"NS_{identifier(type_name)}E")
        template = "I" + "".join(encoded) + "E"
    if namespace:
        return f"_ZN{identifier(namespace)}{identifier(base)}{template}E"
    return f"_Z{identifier(base)}{template}"


def cubin_functions(image: bytes) -> list[str]:
    """Names of the function symbols of an ELF64 cubin (its symbol table)."""
    section_offset = struct.unpack_from("<Q", image, 0x28)[0]
    entry_size, count = struct.unpack_from("<HH", image, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", image, section_offset + k * entry_size)
                for k in range(count)]
    names = []
    for section in sections:
        if section[1] != 2:  # SHT_SYMTAB
            continue
        strings = sections[section[6]][4]
        for offset in range(section[4], section[4] + section[5], 24):
            name_at, info = struct.unpack_from("<IB", image, offset)
            if info & 0xF == 2:  # STT_FUNC
                end = image.index(b"\0", strings + name_at)
                names.append(image[strings + name_at:end].decode())
    return names


def ptx_entries(text: bytes) -> list[str]:
    return re.findall(r"\.entry\s+(\w+)\s*\(", text.decode())


def symbols_of(names: list[str], symbols: list[str], where: str) -> dict[str, str]:
    found = {}
    for name in names:
        prefix = mangled_prefix(name)
        matches = [s for s in symbols if s.startswith(prefix)]
        if len(matches) != 1:
            raise SystemExit(f"{where}: {name} matched {len(matches)} symbols ({prefix})")
        found[name] = matches[0]
    return found


def build_one(nvcc: str, source_name: str, target: str, names: list[str], out: Path) -> dict:
    ptx = target.startswith("compute_")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / source_name
        variants = "".join(f"static auto* swdask_variant_{k} = &{name};\n"
                           for k, name in enumerate(names))
        source.write_text(_kernels.source(source_name) + "\n" + variants)
        image_path = Path(tmp) / "image"
        command = [nvcc, *_kernels.COMPILE_OPTIONS, f"-arch={target}",
                   "-ptx" if ptx else "-cubin", "-w", str(source), "-o", str(image_path)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-4000:]}")
        image = image_path.read_bytes()
    symbols = (ptx_entries if ptx else cubin_functions)(image)
    found = symbols_of(names, symbols, f"{source_name} for {target}")
    (out / _prebuilt.binary_name(source_name, target)).write_bytes(
        lzma.compress(image, preset=9))
    print(f"{source_name} {target}: {len(names)} variants, {len(image):,} bytes", flush=True)
    return {"symbols": found}


def build(nvcc: str, jobs: int) -> None:
    out = _prebuilt.PREBUILT_DIR
    out.mkdir(exist_ok=True)
    for old in out.glob("*.xz"):
        old.unlink()
    work = [(source_name, target, names)
            for target, compute_capability in _prebuilt.targets()
            for source_name, names in _kernels.all_variants(compute_capability).items()]
    # the largest sources first, so that the pool does not end on one long compile
    work.sort(key=lambda item: -len(item[2]))
    with ThreadPoolExecutor(jobs) as pool:
        built = list(pool.map(lambda item: build_one(nvcc, *item, out), work))
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    sources: dict = {}
    for (source_name, target, _), binary in zip(work, built):
        entry = sources.setdefault(source_name, {
            "digest": _prebuilt.source_digest(source_name), "binaries": {}})
        entry["binaries"][target] = binary
    manifest = {"compiler": version.strip().splitlines()[-1],
                "options": list(_kernels.COMPILE_OPTIONS),
                "sources": sources}
    _prebuilt.MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    size = sum(path.stat().st_size for path in out.iterdir())
    print(f"{out}: {len(list(out.iterdir()))} files, {size:,} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only check that the shipped binaries match the sources")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="nvcc processes at once (default: the cores)")
    args = parser.parse_args()
    if args.check:
        problems = _prebuilt.problems()
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            raise SystemExit(1)
        print(f"the kernels in {_prebuilt.PREBUILT_DIR} match the sources")
        return
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise SystemExit("nvcc is not on PATH: install the CUDA toolkit to rebuild the kernels")
    build(nvcc, args.jobs)


if __name__ == "__main__":
    main()
