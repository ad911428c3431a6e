"""``swdask info``: what is installed, the GPUs seen, and which engines will run.

A report for users and for bug reports: versions read from the installed distributions'
metadata (``importlib.metadata``), the GPUs CuPy sees (only when CuPy is installed), and for
each engine whether it runs here and, if not, what to install; cuDF is imported to be sure
(only where it is installed and a GPU is seen).
"""
from __future__ import annotations

import platform
import sys
from importlib import metadata

#: Distributions reported, by role.
_PACKAGES = {
    "core": ("numpy", "pandas", "pyarrow", "numba", "dask", "distributed", "biopython",
             "fsspec"),
    "gpu": ("cupy-cuda13x", "cupy-cuda12x", "cupy"),
    "cudf": ("cudf-cu13", "cudf-cu12", "cudf", "dask-cudf-cu13", "dask-cudf-cu12",
             "dask-cudf", "dask-cuda"),
}


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _gpus() -> tuple[list[str], str | None]:
    """Names of the GPUs CuPy sees, and why there are none (or None)."""
    if not any(_version(n) for n in _PACKAGES["gpu"]):
        return [], "CuPy is not installed (pip install 'swdask[gpu]')"
    try:
        import cupy

        count = int(cupy.cuda.runtime.getDeviceCount())
        names = []
        for device in range(count):
            name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        return names, None if names else "CuPy sees no CUDA GPU"
    except Exception as exc:  # noqa: BLE001 - no driver, no device: said in the report
        return [], f"CuPy cannot reach a GPU ({type(exc).__name__}: {exc})"


def _imports(*modules: str) -> str | None:
    """Why ``modules`` cannot be imported (None when they can). Installed is not enough: on
    the GPU machine a cuDF whose own dependencies were missing (numba-cuda) was installed and
    failed at import."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - any failure is what the report says
            return f"{module} is installed but fails to import ({type(exc).__name__}: {exc})"
    return None


def report() -> str:
    """The text ``swdask info`` prints."""
    from . import __version__

    lines = [f"swdask {__version__} (Python {platform.python_version()}, "
             f"{platform.system()} {platform.machine()})", "", "packages:"]
    for role, names in _PACKAGES.items():
        for name in names:
            version = _version(name)
            if version or role == "core":
                lines.append(f"  {name:<16} {version or 'MISSING'}")
    gpus, why = _gpus()
    lines += ["", "GPUs:" + ("" if gpus else f" none ({why})")]
    lines += [f"  {k}: {name}" for k, name in enumerate(gpus)]
    has_cudf = (any(_version(n) for n in ("cudf-cu13", "cudf-cu12", "cudf"))
                and any(_version(n) for n in ("dask-cudf-cu13", "dask-cudf-cu12", "dask-cudf")))
    broken = _imports("cudf", "dask_cudf") if gpus and has_cudf else None
    engines = [
        ("cpu", True, "numba kernels on every core"),
        ("gpu", bool(gpus), "CUDA kernels on pandas columns" if gpus else why),
        ("cudf", bool(gpus) and has_cudf and not broken,
         broken or ("sequences as cuDF columns in GPU memory" if gpus and has_cudf else
                    "needs a GPU and cuDF + dask-cudf (pip install 'swdask[cudf]')")),
        ("GPU cluster", bool(gpus) and bool(_version("dask-cuda")),
         "swdask.cluster(gpu=True): one worker per GPU" if gpus and _version("dask-cuda")
         else "needs a GPU and dask-cuda (pip install 'swdask[cudf]')"),
    ]
    lines += ["", "engines:"]
    lines += [f"  {name:<12} {'yes' if ok else 'no '}  {text}" for name, ok, text in engines]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(report())
    sys.exit(0)
