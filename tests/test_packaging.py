"""The package as users get it: every file it opens at run time is package data, so a wheel
(not only an editable install of the source tree) holds it.

Under ``SWDASK_TEST_INSTALLED=1`` (``.ci/run``'s run against the built wheel) the installed
package is also compared with the source tree file by file."""
from __future__ import annotations

import fnmatch
import os
import tomllib
from pathlib import Path

import pytest

import swdask

from .conftest import REPOSITORY

SOURCE = REPOSITORY / "swdask"
#: the kinds of file the package reads at run time (kernel sources, their headers, settings,
#: the kernels compiled ahead and their manifest)
DATA_SUFFIXES = {".cu", ".cuh", ".h", ".yaml", ".xz", ".json"}


def _data_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and p.suffix in DATA_SUFFIXES}


def test_every_data_file_is_package_data():
    """Each data file under ``swdask/`` matches a ``package-data`` glob of the package that
    holds it (its nearest folder with an ``__init__.py``; the glob may name the folders
    between) in pyproject.toml; a header added without its glob fails here."""
    config = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]
    files = _data_files(SOURCE)
    assert files, "no data files found: is the source tree beside the tests?"
    missing = []
    for relative in sorted(files):
        folder = Path(relative).parent
        while folder != Path(".") and not (SOURCE / folder / "__init__.py").is_file():
            folder = folder.parent
        package = ".".join(("swdask",) + folder.parts)
        name = Path(relative).relative_to(folder).as_posix()
        if not any(fnmatch.fnmatch(name, pattern) for pattern in globs.get(package, [])):
            missing.append(relative)
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"


def test_every_opened_file_is_a_data_file():
    """The files the code opens by name (every kernel variant's source, the headers those
    include, the host emulation's header, the settings' defaults) are of the kinds above, so
    the first test covers them, and exist beside the code that opens them."""
    from swdask import _settings
    from swdask.gpu import _kernels, _prebuilt

    opened = {"host_emulation.h"} | set(_kernels.all_variants())
    for name in list(opened):
        opened |= set(_kernels._INCLUDE.findall((_kernels.SOURCE_DIR / name).read_text()))
    opened = {name for name in opened if (_kernels.SOURCE_DIR / name).exists()}
    assert {"host_emulation.h", "inter_task.cu", "sw_common.cuh"} <= opened
    for name in opened:
        assert Path(name).suffix in DATA_SUFFIXES, name
    assert Path(_settings._DEFAULTS_FILE).suffix in DATA_SUFFIXES
    assert Path(_settings._DEFAULTS_FILE).is_file()
    binaries = [_prebuilt.MANIFEST] + [
        _prebuilt.PREBUILT_DIR / _prebuilt.binary_name(source_name, target)
        for source_name in _kernels.all_variants() for target, _ in _prebuilt.targets()]
    for path in binaries:
        assert path.suffix in DATA_SUFFIXES and path.is_file(), path


@pytest.mark.skipif(os.environ.get("SWDASK_TEST_INSTALLED") != "1",
                    reason="compares the installed wheel with the sources (SWDASK_TEST_INSTALLED=1)")
def test_installed_package_holds_every_data_file():
    installed = Path(swdask.__file__).resolve().parent
    assert installed != SOURCE.resolve()
    missing = sorted(_data_files(SOURCE) - _data_files(installed))
    assert not missing, f"the installed package lacks {missing}"
