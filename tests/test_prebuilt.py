"""The kernels compiled ahead of time (swdask/gpu/prebuilt/, swdask.gpu._prebuilt).

* The shipped binaries are current: each source's digest equals the manifest's, and every
  variant the engine can launch on each built architecture is in its binary, whose file holds
  the recorded symbol (no GPU, no compiler needed).
* The runtime's choice: the cubin of the GPU's own architecture or of a lower minor version
  of its major one, else the PTX for a newer GPU, else none (NVRTC); an edited source, an
  unknown variant or a missing manifest give none.
* On a GPU: every variant the device can launch loads from the binaries without compiling,
  uses the resources NVRTC's compile of it uses, and the setting ``swdask.gpu.prebuilt:
  false`` compiles with NVRTC instead. (The other GPU tests run on the shipped binaries:
  the runtime loads them by default.)
"""
from __future__ import annotations

import lzma

import dask.config
import pytest

from swdask.gpu import _kernels, _prebuilt


def test_shipped_binaries_match_the_sources():
    assert _prebuilt.problems() == []


def test_each_binary_holds_its_variants_images():
    """Every variant's image is where the manifest says, end to end in its file: a cubin (an
    ELF file naming the variant's symbol) or PTX (with the symbol's entry, ending in NUL)."""
    sources = _prebuilt.manifest()["sources"]
    assert sorted(sources) == sorted(_kernels.all_variants())
    for source_name, entry in sources.items():
        assert sorted(entry["binaries"]) == sorted(t for t, _ in _prebuilt.targets())
        for target, binary in entry["binaries"].items():
            images = lzma.decompress(
                (_prebuilt.PREBUILT_DIR / _prebuilt.binary_name(source_name, target)).read_bytes())
            spans = sorted(binary["variants"].values())
            assert spans[0][0] == 0 and sum(size for _, size, _ in spans) == len(images)
            assert all(a[0] + a[1] == b[0] for a, b in zip(spans, spans[1:]))
            assert len({symbol for *_, symbol in spans}) == len(spans)
            for offset, size, symbol in spans:
                image = images[offset:offset + size]
                if target.startswith("compute_"):
                    assert image.endswith(b"\0") and f".entry {symbol}(".encode() in image
                else:
                    assert image.startswith(b"\x7fELF") and symbol.encode() + b"\0" in image


@pytest.mark.parametrize("compute_capability, target", [
    (90, "sm_90"), (80, "sm_80"), (87, "sm_86"), (89, "sm_89"), (103, "sm_100"),
    (121, "sm_120"), (110, "compute_100"), (130, "compute_100"), (75, None), (70, None)])
def test_the_binary_a_gpu_runs(compute_capability, target):
    built = {t for t, _ in _prebuilt.targets()}
    assert _prebuilt.target_for(compute_capability, built) == target


def test_find_gives_a_current_binarys_symbol():
    name = _kernels.forward_name(2, 8, 16)
    path, offset, size, symbol = _prebuilt.find("inter_task.cu", name, 90)
    assert path == _prebuilt.PREBUILT_DIR / "inter_task.sm_90.xz" and path.is_file()
    assert offset >= 0 and size > 0
    assert symbol.startswith("_ZN6swdask16sw_inter_forwardINS_7Lanes16ELi8ELi16E")
    # a variant of sm_90 alone (query lanes) is in no sm_80 binary; sm_87 runs sm_86's
    assert _prebuilt.find("inter_task.cu", _kernels.forward_name(2, 8, 16, True), 80) is None
    assert _prebuilt.find("inter_task.cu", name, 87)[0].name == "inter_task.sm_86.xz"
    assert _prebuilt.find("inter_task.cu", "swdask::sw_inter_forward<X, 1, 1>", 90) is None
    assert _prebuilt.find("inter_task.cu", name, 75) is None


def test_an_edited_source_is_compiled_again(monkeypatch):
    """A source whose text no longer matches its binaries' digest falls back to NVRTC, and
    the check names it with the command that rebuilds."""
    real = _prebuilt._current_digest
    monkeypatch.setattr(_prebuilt, "_current_digest", lambda source_name: (
        "0" * 64 if source_name == "reverse.cu" else real(source_name)))
    assert _prebuilt.find("reverse.cu", _kernels.reverse_name(), 90) is None
    assert _prebuilt.find("traceback.cu", _kernels.TRACEBACK_NAMES[0], 90) is not None
    problems = _prebuilt.problems()
    assert len(problems) == 1 and problems[0].startswith("reverse.cu: changed")
    assert "ci/build_kernels.py" in problems[0]


def test_a_variant_not_built_is_reported(monkeypatch):
    real = _kernels.all_variants

    def more(compute_capability=90):
        variants = real(compute_capability)
        variants["reverse.cu"] = variants["reverse.cu"] + [_kernels.reverse_name(16, 8)]
        return variants

    monkeypatch.setattr(_kernels, "all_variants", more)
    problems = _prebuilt.problems()
    assert problems and all("reverse.cu for " in line and "1 variants missing" in line
                            for line in problems)


def test_no_manifest_means_nvrtc(monkeypatch):
    monkeypatch.setattr(_prebuilt, "manifest", lambda: {})
    assert _prebuilt.find("reverse.cu", _kernels.reverse_name(), 90) is None
    assert "no prebuilt kernels" in _prebuilt.problems()[0]


# ------------------------------------------------------------------------------------- GPU

def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and a CUDA GPU")
def test_every_variant_loads_without_compiling():
    from swdask.gpu import _runtime

    runtime = _runtime.get_runtime()
    cupy = runtime.xp
    device = cupy.cuda.Device().id
    compute_capability = runtime.compute_capability
    for source_name, names in _kernels.all_variants(compute_capability).items():
        for name in names:
            kernel = _prebuilt.load(cupy, device, source_name, name)
            assert isinstance(kernel, _prebuilt.LoadedKernel), (source_name, name)
            assert kernel.attributes["num_regs"] > 0
            assert _runtime._cupy_function(device, source_name, name) is not None
    # the fallback's compile of a variant uses the same resources as the shipped image
    # (registers, local and shared memory: the code of the same compiler and options)
    resources = ("num_regs", "local_size_bytes", "shared_size_bytes", "const_size_bytes")
    for source_name, name in [("reverse.cu", _kernels.reverse_name()),
                              ("inter_task.cu", _kernels.forward_name(2, 8, 16, True)),
                              ("pairs_inter.cu", _kernels.pairs_name("inter", (8, 16), 1, False))]:
        module = cupy.RawModule(code=_kernels.source(source_name),
                                options=_kernels.COMPILE_OPTIONS, name_expressions=(name,))
        compiled = module.get_function(name).attributes
        shipped = _prebuilt.load(cupy, device, source_name, name).attributes
        assert {k: compiled[k] for k in resources} == {k: shipped[k] for k in resources}, name
    source_name, name = "reverse.cu", _kernels.reverse_name()
    _runtime._cupy_function.cache_clear()
    try:
        assert isinstance(_runtime._cupy_function(device, source_name, name),
                          _prebuilt.LoadedKernel)
        _runtime._cupy_function.cache_clear()
        with dask.config.set({"swdask.gpu.prebuilt": False}):
            compiled = _runtime._cupy_function(device, source_name, name)
        assert not isinstance(compiled, _prebuilt.LoadedKernel)
    finally:
        _runtime._cupy_function.cache_clear()
