"""benchmarks/results/README.md, the index of the measured results, is current: it is what
``benchmarks/results_index.py`` writes from the JSON files now in ``benchmarks/results/``, so
a result added, moved or removed without regenerating the index fails here; and no result
lies loose beside the index."""
from __future__ import annotations

import importlib.util
import json

import pytest

from .conftest import REPOSITORY

SCRIPT = REPOSITORY / "benchmarks" / "results_index.py"

if not SCRIPT.is_file():
    pytest.skip("the benchmarks are not beside the tests (an installed copy)",
                allow_module_level=True)


@pytest.fixture()
def index():
    spec = importlib.util.spec_from_file_location("results_index", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_index_is_current(index):
    assert index.INDEX.read_text() == index.render(), \
        "benchmarks/results/README.md is stale: run python benchmarks/results_index.py"


def test_no_loose_result_files(index):
    loose = [p.name for p in index.RESULTS.iterdir() if p.is_file() and p.name != "README.md"]
    assert not loose, f"move these into a workload folder: {loose}"
    folders = {p.name for p in index.RESULTS.iterdir() if p.is_dir()}
    assert folders <= set(index.WORKLOADS), folders - set(index.WORKLOADS)


def test_index_sees_a_new_json_and_a_loose_file(index, tmp_path, monkeypatch):
    """The check can fail: a JSON added to a workload folder changes the index, and a file at
    the top level or a folder without a description stops it."""
    results = tmp_path / "results"
    (results / "w1-kernel").mkdir(parents=True)
    monkeypatch.setattr(index, "RESULTS", results)
    before = index.render()
    record = {"workload": "W1", "mode": "kernel", "positions": "end", "device": "NVIDIA H100",
              "date": "2026-01-02", "commit": "abcdef0", "gcups_total": 4461.0}
    (results / "w1-kernel" / "W1-x.json").write_text(json.dumps(record))
    after = index.render()
    assert after != before
    assert "| W1 | H100 | 2026-01-02 | abcdef0 | 4.461 TCUPS (kernel, positions end) |" in after
    (results / "loose.json").write_text("{}")
    with pytest.raises(SystemExit, match="loose"):
        index.render()
    (results / "loose.json").unlink()
    (results / "new-workload").mkdir()
    (results / "new-workload" / "a.json").write_text("{}")
    with pytest.raises(SystemExit, match="no description"):
        index.render()


def test_headlines_read_the_records_own_figures(index):
    search = {"workload": "search-W1", "backend": "gpu", "gpus": 1, "wall_seconds": 3.3299,
              "kernel_tcups": 4.4607}
    assert index.headline(search) == ("search-W1 job 3.33 s, --backend gpu; kernel alone "
                                      "4.461 TCUPS")
    several = {"workload": "search-1000", "backend": "cudf", "gpus": 2, "wall_seconds": 12.6,
               "runner": "recipe"}
    assert index.headline(several) == "search-1000 job 12.60 s, --backend cudf on 2 GPUs (recipe)"
    cpu = {"workload": "search-cpu-10", "backend": "cpu", "wall_seconds": 1.18,
           "ssearch36_wall_seconds": 3.08}
    assert index.headline(cpu) == "search-cpu-10 job 1.18 s; ssearch36 3.08 s"
    startup = {"workload": "startup-W3", "backend": "cpu", "cold": True, "wall_seconds": 9.5,
               "phases": {"first_search": 6.0, "second_search": 1.5}, "first_over_second": 4.0}
    assert index.headline(startup) == ("startup-W3 cold: first search 6.00 s, second 1.50 s "
                                       "(4.00x); whole process 9.50 s")
    assert index.headline({"something": 1}) == "see the file"
