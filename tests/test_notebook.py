"""examples/etl.ipynb runs top to bottom (through ci/run_notebook.py: nbclient, a fresh kernel,
a temporary working directory holding a copy of examples/data) and its products are right: on
the CPU with SWDASK_BACKEND=pandas, and with SWDASK_BACKEND=cudf where cuDF, dask-cudf,
dask-cuda and a GPU are present (marked gpu).

The hits it writes are checked against a computation that does not use swdask's ranking or
header parsing: parasail scores of every database protein (ranked by score, ties by database
order), positions checked by rescoring the aligned segments globally, and the metadata parsed
here word by word from the FASTA headers.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pandas as pd
import pytest

from .conftest import Scheme, global_score, parasail_score

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "etl.ipynb"
EXAMPLE_DATA = ROOT / "examples" / "data"
TOP = 10  # the notebook's TOP


def _records(path: Path) -> list[dict]:
    """id, description and sequence of each record of a FASTA file, in file order."""
    records = []
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            header = line[1:].strip().split(None, 1)
            records.append({"id": header[0], "description": header[1] if len(header) > 1
                            else "", "sequence": []})
        elif line.strip():
            records[-1]["sequence"].append(line.strip())
    for record in records:
        record["sequence"] = "".join(record["sequence"])
    return records


def _uniprot_fields(description: str) -> dict:
    """protein, organism and gene of a UniProt header, read word by word: the protein name runs
    up to the word "OS=...", the organism from there up to the next "XX=" word, the gene is
    the word "GN=..." (None without one)."""
    words = description.split(" ")
    os_at = next(k for k, word in enumerate(words) if word.startswith("OS="))
    organism = [words[os_at][3:]]
    for word in words[os_at + 1:]:
        if re.fullmatch(r"[A-Z]{2}=.*", word):
            break
        organism.append(word)
    gene = next((word[3:] for word in words[os_at + 1:] if word.startswith("GN=")), None)
    return {"protein": " ".join(words[:os_at]), "organism": " ".join(organism), "gene": gene}


def _run_notebook_script():
    """ci/run_notebook.py as a module (ci/ is not a package)."""
    spec = importlib.util.spec_from_file_location("run_notebook", ROOT / "ci" / "run_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _skip_without_gpu_dataframes():
    for name in ("cudf", "dask_cudf", "dask_cuda"):
        pytest.importorskip(name)
    from swdask._cluster import gpu_count

    if gpu_count() == 0:
        pytest.skip("dask_cuda sees no GPU")


@pytest.fixture(scope="module", params=["pandas", pytest.param("cudf", marks=pytest.mark.gpu)])
def executed(request, tmp_path_factory, monkeypatch_module):
    """The backend, the notebook after a run in a temporary directory, and that directory."""
    backend = request.param
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    if backend == "cudf":
        _skip_without_gpu_dataframes()
    workdir = tmp_path_factory.mktemp(f"etl-{backend}")
    out = workdir / "executed.ipynb"
    monkeypatch_module.setenv("SWDASK_BACKEND", backend)
    status = _run_notebook_script().main([str(NOTEBOOK), "--out", str(out), "--workdir",
                                          str(workdir), "--data", str(EXAMPLE_DATA)])
    assert status == 0, "a cell failed (its source and error are printed above)"
    return backend, nbformat.read(out, as_version=4), workdir


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _outputs(notebook, kind: str) -> list:
    found = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            if kind == "text" and output.get("output_type") == "stream":
                found.append(output["text"])
            elif kind != "text" and kind in output.get("data", {}):
                found.append(output["data"][kind])
    return found


def test_hits_parquet_equals_an_independent_ranking(executed):
    _, _, workdir = executed
    hits = pd.read_parquet(workdir / "hits.parquet")
    database = _records(EXAMPLE_DATA / "db.fasta")
    first_query = _records(EXAMPLE_DATA / "queries.fasta")[0]
    query_id, query = first_query["id"], first_query["sequence"]
    scheme = Scheme()  # the notebook's scoring: BLOSUM62, gap 11 + (k-1) x 1
    scores = [parasail_score(query, record["sequence"], scheme) for record in database]
    ranked = sorted((k for k, score in enumerate(scores) if score > 0),
                    key=lambda k: (-scores[k], k))[:TOP]

    assert list(hits.columns) == ["query_id", "rank", "id", "score", "query_start", "query_end",
                                  "target_start", "target_end", "protein", "organism", "gene"]
    assert len(hits) == TOP
    assert hits["query_id"].tolist() == [query_id] * TOP
    assert hits["rank"].tolist() == list(range(1, TOP + 1))
    assert hits["id"].tolist() == [database[k]["id"] for k in ranked]
    assert hits["score"].tolist() == [scores[k] for k in ranked]
    for row, k in zip(hits.itertuples(), ranked):
        target = database[k]["sequence"]
        assert 0 <= row.query_start < row.query_end <= len(query)
        assert 0 <= row.target_start < row.target_end <= len(target)
        segments = (query[row.query_start:row.query_end],
                    target[row.target_start:row.target_end])
        assert global_score(*segments, scheme) == row.score, row.id
        expected = _uniprot_fields(database[k]["description"])
        assert row.protein == expected["protein"], row.id
        assert row.organism == expected["organism"], row.id
        assert (None if pd.isna(row.gene) else row.gene) == expected["gene"], row.id


def test_plot_progress_dashboard_and_cells(executed):
    backend, notebook, workdir = executed
    plot = workdir / "score_distribution.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert _outputs(notebook, "image/png"), "the plot is not shown inline"
    text = "".join(_outputs(notebook, "text"))
    assert f"backend: {backend}\n" in text
    cluster = "LocalCUDACluster" if backend == "cudf" else "LocalCluster"
    assert f"started a {cluster} of " in text
    if backend == "pandas" or importlib.util.find_spec("bokeh") is not None:
        assert re.search(r"dashboard: http://\S+", text), "no dashboard link printed"
    else:  # the GPU machine carries no bokeh: the notebook says so instead of a dead link
        assert "no dashboard (it needs bokeh" in text
    frames = "cudf" if backend == "cudf" else "pandas"
    assert f"partitions of {frames} DataFrames" in text
    widgets = _outputs(notebook, "application/vnd.jupyter.widget-view+json")
    assert widgets or "100% Completed" in text, "no progress bar"
    for cell in notebook.cells:  # one output per stream, no redraws, no warnings
        streams = [o for o in cell.get("outputs", []) if o.get("output_type") == "stream"]
        assert len({o["name"] for o in streams}) == len(streams), cell.source
        assert not any("\r" in o["text"] or "Warning" in o["text"] for o in streams), \
            cell.source
    if not widgets:
        assert text.count("% Completed") == 1, "the progress bar is not one line"
    # the cells metric the sw-align tasks reported: |query| x every database residue
    query = _records(EXAMPLE_DATA / "queries.fasta")[0]["sequence"]
    residues = sum(len(record["sequence"]) for record in _records(EXAMPLE_DATA / "db.fasta"))
    assert f"sw-align: {len(query) * residues:,} cells in " in text


def test_run_notebook_reports_the_failing_cell(tmp_path, capsys):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import os\nprint(os.environ['SWDASK_BACKEND'], os.getcwd())"),
        nbformat.v4.new_code_cell("raise ValueError('cell two fails')"),
        nbformat.v4.new_code_cell("print('never runs')"),
    ])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    source, out, workdir = tmp_path / "fails.ipynb", tmp_path / "out" / "ran.ipynb", tmp_path / "wd"
    nbformat.write(notebook, source)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SWDASK_BACKEND", "some-backend")
        status = _run_notebook_script().main([str(source), "--out", str(out), "--workdir",
                                              str(workdir), "--data", "none"])
    assert status == 1
    assert "raise ValueError('cell two fails')" in capsys.readouterr().err
    ran = nbformat.read(out, as_version=4)  # written up to the failure
    first = "".join(o.get("text", "") for o in ran.cells[0].outputs)
    assert first.split() == ["some-backend", str(workdir)]
    assert any(o.get("ename") == "ValueError" for o in ran.cells[1].outputs)
    assert not ran.cells[2].outputs
