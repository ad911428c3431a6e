"""swdask's tuning settings, in one place, read through Dask's configuration (``dask.config``).

Why Dask's: swdask runs inside Dask jobs, whose users already set worker options there (YAML
files, ``dask.config.set``, ``DASK_*`` environment variables, forwarded to the workers a
``LocalCluster`` starts), so swdask's knobs live in the same system under a ``swdask``
namespace rather than in a configuration scheme of its own. The defaults ship in
``swdask.yaml`` beside this module; docs/settings.md, generated from it, documents every
key.

Environment variables work the Dask way: ``DASK_SWDASK__GPU__CHUNK_BYTES=1073741824`` sets
``swdask.gpu.chunk-bytes`` (Dask reads them when it is imported; call
``dask.config.refresh()`` after changing them in a running process). The ``SWDASK_*`` names of
earlier releases (``SWDASK_GPU_CHUNK_BYTES`` and friends) are still honoured: they are read
here, once, with the defaults, and nowhere else in the package.

Dask is imported when a setting is first read (or when anything else imports it: then the
defaults go in at once, :func:`load_defaults` through ``swdask/__init__.py``'s import hook),
not by ``import swdask``: a search on the CPU in this process reads none, and Dask's import
was a large share of ``import swdask`` (docs/notes/cpu-search-job.md).

This module is the bottom floor: it imports nothing of swdask.
"""
from __future__ import annotations

import importlib
import os
import threading
from pathlib import Path

_DEFAULTS_FILE = Path(__file__).with_name("swdask.yaml")
_LOADED = threading.Event()
_LOADING = threading.Lock()

#: Environment variables of earlier releases -> the setting each one sets.
LEGACY_ENVIRONMENT = {
    "SWDASK_GPU_BACKEND": "gpu.runtime",
    "SWDASK_GPU_MEMORY_BYTES": "gpu.memory-bytes",
    "SWDASK_GPU_CHUNK_BYTES": "gpu.chunk-bytes",
    "SWDASK_GPU_CACHE_BYTES": "gpu.cache-bytes",
    "SWDASK_GPU_LONG_ROW_MIN": "gpu.long-row-min",
    "SWDASK_GPU_BUCKETS": "gpu.buckets",
    "SWDASK_GPU_SHAPE": "gpu.shape",
    "SWDASK_EMULATION_BLOCK": "emulation.block-threads",
    "SWDASK_EMULATION_FREE_BYTES": "emulation.free-bytes",
    "SWDASK_EMULATION_CACHE": "emulation.cache-dir",
}


def _nested(dotted: dict) -> dict:
    """``{"swdask.gpu.chunk-bytes": v}`` as the nested mapping Dask's defaults take."""
    out: dict = {}
    for key, value in dotted.items():
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def load_defaults() -> None:
    """Put swdask's defaults (and the old ``SWDASK_*`` variables) into ``dask.config``, once
    per process (importing Dask if nothing has yet)."""
    if _LOADED.is_set():
        return
    # imported before the lock is taken: a thread importing Dask runs this at the end of
    # that import (the hook), and must not wait for a thread that waits for the import;
    # by module name, as the hook runs before `dask.config` is an attribute of `dask`
    config = importlib.import_module("dask.config")
    import yaml

    with _LOADING:
        if _LOADED.is_set():
            return
        with open(_DEFAULTS_FILE) as file:
            config.update_defaults(yaml.safe_load(file))
        legacy = {}
        for variable, key in LEGACY_ENVIRONMENT.items():
            value = os.environ.get(variable, "").strip()
            if value:
                legacy[f"swdask.{key}"] = value if key == "gpu.buckets" else \
                    yaml.safe_load(value)
        if legacy:
            # as defaults: a value set the Dask way (DASK_SWDASK__..., YAML,
            # dask.config.set) wins
            config.update_defaults(_nested(legacy))
        _LOADED.set()


def get(key: str):
    """The value of setting ``key`` (``"gpu.chunk-bytes"``: the part after ``swdask.``)."""
    load_defaults()
    return importlib.import_module("dask.config").get(f"swdask.{key}")


def from_environment(key: str):
    """What the environment says of setting ``key`` without importing Dask: its Dask variable
    (``DASK_SWDASK__GPU__RUNTIME`` for ``"gpu.runtime"``), else its name of earlier releases,
    else None. Dask's YAML files and ``dask.config.set`` are not seen: for a decision that
    must not wait for Dask's import (``swdask.gpu._runtime.get_runtime`` starting the
    driver), where :func:`get` gives the setting itself."""
    variable = "DASK_SWDASK__" + "__".join(part.upper().replace("-", "_")
                                           for part in key.split("."))
    value = os.environ.get(variable, "").strip()
    if not value:
        value = next((os.environ.get(old, "").strip()
                      for old, target in LEGACY_ENVIRONMENT.items() if target == key), "")
    return value or None


def get_bool(key: str) -> bool:
    """A yes/no setting: YAML's and Python's booleans as they are; a string (the environment
    gives ``"false"`` as text) is false for false, no, off, 0 or nothing, else true."""
    value = get(key)
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "no", "off", "0", "")
    return bool(value)


def get_int(key: str) -> int | None:
    """A whole-number setting (``None`` when unset); ``"1e9"`` and ``1e9`` read as numbers."""
    value = get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return int(float(value))
    except (TypeError, ValueError):
        raise ValueError(f"setting swdask.{key} must be a whole number, got {value!r}") from None
