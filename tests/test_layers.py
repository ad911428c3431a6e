"""The package's shape: its import graph (read from its own ``import`` statements, those inside
functions included) has no cycle and keeps the floors in order; settings are read in one place;
the accessors show their parameters."""
from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import dask.dataframe as dd
import pandas as pd
import pytest

import swdask

PACKAGE = Path(swdask.__file__).parent

#: Modules that may never import the floors above the kernels.
KERNEL_FLOORS = ("swdask._cpu", "swdask._cpu_modes", "swdask._simd", "swdask.gpu")
#: The floors above the kernels (engine and up).
UPPER = ("swdask._engine", "swdask._api", "swdask._accessor", "swdask._dask", "swdask._cudf",
         "swdask._search", "swdask.cli", "swdask.lowlevel", "swdask._options",
         "swdask._many_queries", "swdask._traceback", "swdask._aligned", "swdask._local_gpus",
         "swdask._runners", "swdask._long", "swdask._long_job", "swdask._pairs_job",
         "swdask._all_vs_all", "swdask._alternatives")
#: The bottom floor: imports nothing of swdask but itself.
BOTTOM = ("swdask._settings", "swdask._results", "swdask._timing", "swdask._imports",
          "swdask._dust", "swdask._seg")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The swdask modules ``path`` imports (absolute names), at any depth of its code."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("swdask"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if not module.startswith("swdask"):
                continue
            for alias in node.names:  # "from . import _cpu" names a module
                candidate = f"{module}.{alias.name}"
                found.add(candidate if _exists(candidate) else module)
    return {m for m in found if m != name}


def _exists(module: str) -> bool:
    relative = Path(*module.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").exists() or (PACKAGE / relative).is_dir()


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in PACKAGE.rglob("*.py")}


def test_import_graph_has_no_cycle():
    graph = _graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_floors_import_downwards_only():
    graph = _graph()
    assert graph, "no modules found"
    for module, imported in graph.items():
        if module.startswith(KERNEL_FLOORS):
            bad = {m for m in imported if m.startswith(UPPER)}
            assert not bad, f"{module} (a kernel floor) imports {sorted(bad)}"
        if module in BOTTOM:
            assert not imported, f"{module} (the bottom floor) imports {sorted(imported)}"


def test_settings_are_read_in_one_place():
    """No ``SWDASK_*`` environment variable is read outside ``_settings.py``."""
    pattern = re.compile(r"environ[^\n]*SWDASK_|getenv\([^\n]*SWDASK_")
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_settings.py":
            continue
        assert not pattern.search(path.read_text()), path


OPTION_NAMES = ["matrix", "gap_open", "gap_extend", "match", "mismatch", "on_unknown",
                "positions", "backend", "aligned_strings", "strand", "mask", "mode"]


@pytest.mark.parametrize("method", [
    pd.Series.sw.align, pd.DataFrame.sw.align, pd.DataFrame.sw.align_pairs,
    dd.Series.sw.align, dd.DataFrame.sw.align, dd.DataFrame.sw.align_pairs,
    pd.Series.sw.search, pd.DataFrame.sw.search, dd.Series.sw.search, dd.DataFrame.sw.search,
    swdask.align, swdask.align_pairs,
], ids=lambda m: m.__qualname__)
def test_signatures_name_their_parameters(method):
    parameters = inspect.signature(method).parameters
    assert list(parameters)[-len(OPTION_NAMES):] == OPTION_NAMES
    assert not any(p.kind == p.VAR_KEYWORD for p in parameters.values())
    assert parameters["gap_open"].default == 11
    assert "options" not in parameters


def test_unknown_keyword_is_refused():
    with pytest.raises(TypeError, match="gap_opn"):
        pd.Series(["MKT"]).sw.align("MKT", gap_opn=3)


@pytest.mark.parametrize("order", ["swdask first", "dask.dataframe first"])
def test_dask_accessor_registered_in_either_import_order(order):
    """``import swdask`` leaves dask.dataframe (and with it dask.array, CuPy, SciPy) unimported;
    the Dask accessor is there whichever of the two a program imports first."""
    import subprocess
    import sys

    imports = ("import swdask, sys; print('dask.dataframe' in sys.modules); "
               "import dask.dataframe as dd" if order == "swdask first" else
               "import dask.dataframe as dd, sys; print(True); import swdask")
    code = (f"{imports}; import pandas as pd\n"
            "frame = dd.from_pandas(pd.DataFrame({'sequence': ['MKT', 'AAA']}), npartitions=1)\n"
            "print(frame.sw.align('MKT', positions=False).compute()['score'].tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == ("False" if order == "swdask first" else "True")
    assert out[1] == "[15, 0]"
