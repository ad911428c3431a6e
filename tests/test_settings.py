"""swdask's settings: Dask's configuration under ``swdask.``, defaults from the shipped YAML,
set the Dask way (environment, ``dask.config.set``), with the old ``SWDASK_*`` names honoured."""
from __future__ import annotations

import os
import subprocess
import sys

import dask
import pytest
import yaml

from swdask import _settings


def _read_in_fresh_process(key: str, env: dict) -> str:
    code = f"import swdask._settings as s; print(repr(s.get({key!r})))"
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("SWDASK_", "DASK_SWDASK"))}
    done = subprocess.run([sys.executable, "-c", code], env={**clean, **env},
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.strip()


def test_every_shipped_default_is_in_the_yaml_and_readable():
    with open(_settings._DEFAULTS_FILE) as file:
        shipped = yaml.safe_load(file)["swdask"]
    for section, values in shipped.items():
        for name, value in values.items():
            assert _settings.get(f"{section}.{name}") == value
    assert _settings.get("gpu.buckets") is None  # the measured ones, per lane type


def test_dask_config_set_overrides_and_restores():
    before = _settings.get_int("gpu.chunk-bytes")
    with dask.config.set({"swdask.gpu.chunk-bytes": "2e6"}):
        assert _settings.get_int("gpu.chunk-bytes") == 2_000_000
    assert _settings.get_int("gpu.chunk-bytes") == before


def test_environment_the_dask_way_and_the_old_names():
    assert _read_in_fresh_process(
        "gpu.chunk-bytes", {"DASK_SWDASK__GPU__CHUNK_BYTES": "12345"}) == "12345"
    assert _read_in_fresh_process("gpu.chunk-bytes", {"SWDASK_GPU_CHUNK_BYTES": "777"}) == "777"
    assert _read_in_fresh_process("gpu.runtime",
                                  {"SWDASK_GPU_BACKEND": "emulation"}) == "'emulation'"
    # the Dask name wins over the old one
    assert _read_in_fresh_process("gpu.chunk-bytes", {"SWDASK_GPU_CHUNK_BYTES": "777",
                                                      "DASK_SWDASK__GPU__CHUNK_BYTES": "5"}) == "5"
    # buckets stay text (yaml would read "4" as a number)
    assert _read_in_fresh_process("gpu.buckets", {"SWDASK_GPU_BUCKETS": "8"}) == "'8'"


def test_from_environment_reads_the_variables_without_dask(monkeypatch):
    """What ``get_runtime`` decides on before Dask is imported: the Dask variable, else the
    old name, else None; Dask's own configuration is not seen."""
    for name in [n for n in os.environ if n.startswith(("SWDASK_", "DASK_SWDASK"))]:
        monkeypatch.delenv(name)
    assert _settings.from_environment("gpu.runtime") is None
    with dask.config.set({"swdask.gpu.runtime": "emulation"}):
        assert _settings.from_environment("gpu.runtime") is None
    monkeypatch.setenv("SWDASK_GPU_BACKEND", "emulation")
    assert _settings.from_environment("gpu.runtime") == "emulation"
    monkeypatch.setenv("DASK_SWDASK__GPU__RUNTIME", "cuda")  # the Dask name wins
    assert _settings.from_environment("gpu.runtime") == "cuda"
    monkeypatch.setenv("DASK_SWDASK__GPU__CHUNK_BYTES", " 12345 ")
    assert _settings.from_environment("gpu.chunk-bytes") == "12345"


def test_a_bad_number_names_the_setting():
    with dask.config.set({"swdask.gpu.chunk-bytes": "lots"}):
        with pytest.raises(ValueError, match="swdask.gpu.chunk-bytes"):
            _settings.get_int("gpu.chunk-bytes")


def test_an_unknown_runtime_names_the_setting():
    from swdask.gpu import _runtime

    with dask.config.set({"swdask.gpu.runtime": "opencl"}):
        with pytest.raises(ValueError, match="swdask.gpu.runtime"):
            _runtime.get_runtime()


def test_import_swdask_leaves_dask_until_a_setting_is_read():
    """``import swdask`` does not import Dask (a CPU search reads no setting); whenever Dask
    is imported afterwards, by the user or by the first read of a setting, swdask's
    namespace is in ``dask.config`` with its defaults and the old ``SWDASK_*`` names."""
    code = ("import sys, swdask; print('dask' in sys.modules); import dask; "
            "print(dask.config.get('swdask.gpu.long-row-min')); "
            "print(dask.config.get('swdask.gpu.chunk-bytes'))")
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("SWDASK_", "DASK_SWDASK"))}
    done = subprocess.run([sys.executable, "-c", code],
                          env={**clean, "SWDASK_GPU_CHUNK_BYTES": "777"},
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False", "12000", "777"]
    code = ("import sys, swdask; from swdask import _settings; "
            "print(_settings.get('traceback.max-cells') is not None, 'dask' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.split() == ["True", "True"]


def test_yes_no_settings_read_text_from_the_environment_as_booleans():
    """``get_bool``: the environment gives text ("false" stays a string through Dask's
    parsing), YAML and ``dask.config.set`` give booleans; both read the same."""
    assert _settings.get_bool("gpu.query-lanes") is True  # the YAML default
    for text, expected in [("false", False), ("False", False), ("0", False), ("off", False),
                           ("no", False), ("", False), ("true", True), ("1", True),
                           ("yes", True)]:
        with dask.config.set({"swdask.gpu.query-lanes": text}):
            assert _settings.get_bool("gpu.query-lanes") is expected, text
    for value in (False, True):
        with dask.config.set({"swdask.gpu.query-lanes": value}):
            assert _settings.get_bool("gpu.query-lanes") is value
