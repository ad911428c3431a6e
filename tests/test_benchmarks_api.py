"""The benchmark scripts (``benchmarks/``) use swdask's documented API only, and follow one
naming convention.

* Of swdask they import ``swdask`` (public names only) and ``swdask.lowlevel`` (the engine's
  stages, documented for them); a script that needs more extends ``swdask.lowlevel``. Checked
  on every ``import`` statement of every script (those inside functions included) and on
  ``importlib.import_module``/``__import__`` calls with a literal name.
* Every runnable script is ``bench_<workload or subject>_<what it measures>``, lower case,
  ending in ``_gpu`` where it needs a GPU (it imports CuPy) and ``_cpu`` where it compares CPU
  code only (it never imports CuPy); a script that runs on either says so in :data:`EITHER`.
  Modules that are no scripts start with ``_`` (``_common.py``).
* The CI scripts (``ci/*.sh``, ``ci/steps/*.sh``) and the benchmark scripts name only
  benchmark scripts that exist.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
#: Of swdask, the only modules a script may import.
ALLOWED = {"swdask", "swdask.lowlevel"}
#: Runnable scripts: bench_<workload or subject>_<what>[_gpu|_cpu].py / .sh
SCRIPT_NAME = re.compile(r"bench_[a-z0-9]+(?:_[a-z0-9]+)*\.(?:py|sh)")
#: Modules of the folder that are no scripts.
HELPER_NAME = re.compile(r"_[a-z0-9]+(?:_[a-z0-9]+)*\.py")
#: Scripts that run on the CPU or the GPU (no suffix), and why.
EITHER = {"bench_search_job.py": "its CPU sets by default, its GPU sets with --gpu",
          "bench_pssm.py": "the CPU's kernels with --backend cpu, the GPU's with gpu"}
#: Files of the folder that are neither benchmarks nor helpers, and what they are.
TOOLS = {"results_index.py": "writes benchmarks/results/README.md from the result files"}


def _python_files():
    return sorted(BENCHMARKS.glob("*.py"))


def _scripts():
    return sorted(p for p in BENCHMARKS.iterdir()
                  if p.suffix in (".py", ".sh") and not p.name.startswith("_")
                  and p.name not in TOOLS)


def swdask_imports(source: str) -> list[str]:
    """What a script's source imports of swdask that it may not, described (empty when it
    keeps to :data:`ALLOWED` and public names)."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            bad += [f"import {a.name}" for a in node.names
                    if a.name.split(".")[0] == "swdask" and a.name not in ALLOWED]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or module.split(".")[0] != "swdask":
                continue
            if module not in ALLOWED:
                bad.append(f"from {module} import ...")
                continue
            for alias in node.names:
                # a private name, or (from swdask) a module of the package other than lowlevel
                if alias.name.startswith("_") or (module == "swdask" and _is_submodule(
                        alias.name)):
                    bad.append(f"from {module} import {alias.name}")
        elif isinstance(node, ast.Call):
            function = node.func
            name = getattr(function, "attr", None) or getattr(function, "id", None)
            if name in ("import_module", "__import__") and node.args:
                first = node.args[0]
                if (isinstance(first, ast.Constant) and isinstance(first.value, str)
                        and first.value.split(".")[0] == "swdask"
                        and first.value not in ALLOWED):
                    bad.append(f"{name}({first.value!r})")
    return bad


def _is_submodule(name: str) -> bool:
    package = ROOT / "swdask"
    return name != "lowlevel" and ((package / f"{name}.py").exists()
                                   or (package / name).is_dir())


def _imports_cupy(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "cupy"
                                                for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "cupy":
            return True
    return False


@pytest.mark.parametrize("source, expected", [
    ("import swdask\nfrom swdask.lowlevel import encode, search", []),
    ("import swdask.lowlevel as low\nfrom swdask import make_scoring, lowlevel", []),
    ("def f():\n    from swdask.gpu._backend import GpuBackend",
     ["from swdask.gpu._backend import ..."]),
    ("from swdask import _timing", ["from swdask import _timing"]),
    ("from swdask import gpu, cli", ["from swdask import gpu", "from swdask import cli"]),
    ("from swdask.lowlevel import _private", ["from swdask.lowlevel import _private"]),
    ("import swdask.gpu.inter_task", ["import swdask.gpu.inter_task"]),
    ("import importlib\nimportlib.import_module('swdask._fasta')",
     ["import_module('swdask._fasta')"]),
    ("from . import x\nimport swdaskother", []),
])
def test_the_import_check_tells_private_from_public(source, expected):
    assert swdask_imports(source) == expected


def test_scripts_import_only_swdask_and_lowlevel():
    files = _python_files()
    assert len(files) > 10, f"no benchmark scripts under {BENCHMARKS}"
    found = {p.name: swdask_imports(p.read_text()) for p in files}
    bad = {name: imports for name, imports in found.items() if imports}
    assert not bad, ("benchmark scripts import swdask's private modules (use swdask.lowlevel, "
                     f"and extend it where it lacks something): {bad}")


def test_scripts_follow_the_naming_convention():
    names = [p.name for p in BENCHMARKS.iterdir() if p.suffix in (".py", ".sh")]
    odd = [n for n in names if not (SCRIPT_NAME.fullmatch(n) or HELPER_NAME.fullmatch(n)
                                    or n in TOOLS)]
    assert not odd, f"not bench_<workload>_<what>[_gpu|_cpu] nor a _helper: {odd}"
    for path in _scripts():
        if path.suffix != ".py":
            continue
        cupy = _imports_cupy(path.read_text())
        stem = path.stem
        if path.name in EITHER:
            assert not stem.endswith(("_gpu", "_cpu")), path.name
        elif cupy:
            assert stem.endswith("_gpu"), f"{path.name} imports CuPy: name it ..._gpu.py"
        if stem.endswith("_cpu"):
            assert not cupy, f"{path.name} ends in _cpu but imports CuPy"
    assert set(EITHER) <= set(names), "EITHER names a script that is not there"


def test_ci_and_scripts_name_existing_benchmarks():
    """Every ``benchmarks/<name>.py|sh`` the CI scripts run, and every ``bench_*.py|sh`` or
    ``_common.py`` a CI or benchmark script names, exists (a rename updates its callers)."""
    callers = ([*ROOT.glob("ci/*.sh"), *ROOT.glob("ci/steps/*.sh"), *ROOT.glob("ci/*.py")]
               + _python_files() + sorted(BENCHMARKS.glob("*.sh")))
    named = re.compile(r"benchmarks/([\w.-]+\.(?:py|sh))\b|\b(bench_\w+\.(?:py|sh))\b")
    missing = sorted({f"{caller.relative_to(ROOT)}: {a or b}" for caller in callers
                      for a, b in named.findall(caller.read_text())
                      if not (BENCHMARKS / (a or b)).exists()})
    assert not missing, "names of benchmark scripts that do not exist:\n" + "\n".join(missing)


def test_cross_imports_between_scripts_resolve():
    """A script may import another (``import bench_w2_gpu as w2``): that one exists."""
    local = {p.stem for p in _python_files()}
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module
                     and not node.level else [])
            for name in names:
                if name.startswith(("bench_", "_common")):
                    assert name in local, f"{path.name} imports {name}, which is not there"
