#!/usr/bin/env python3
"""Execute a notebook top to bottom in a fresh kernel and save it with its outputs.

    python3 ci/run_notebook.py examples/etl.ipynb --out OUT.ipynb \\
        [--workdir DIR] [--data examples/data] [--cell-timeout 300] [--kernel python3]

    SWDASK_BACKEND=cudf python3 ci/run_notebook.py examples/etl.ipynb --out $OUT/etl.ipynb

- The kernel runs in ``--workdir`` (default: a new temporary directory, kept and printed), into
  which ``--data`` (default: the notebook's own ``data/`` folder) is copied as ``data/``, so
  the notebook's relative paths work and its products (Parquet, PNG) land there, never in the
  checkout.
- The kernel inherits this process's environment (``SWDASK_BACKEND``, ``PYTHONPATH``: on the
  GPU machine ``/tmp/rapids`` for cuDF and ``/tmp/site`` for the carried wheels), with the
  repository root put first on ``PYTHONPATH`` so that it imports this checkout's swdask.
- ``--cell-timeout`` bounds each cell (seconds); bound the whole run from outside
  (``timeout 600 python3 ci/run_notebook.py ...``).
- The executed notebook is written to ``--out`` in every case, up to the failing cell when one
  fails. Exit status: 0 when every cell ran; 1 when a cell raised, timed out or the kernel
  died (the failing cell's source and the error are printed to stderr); 2 for bad arguments.

nbclient (with nbformat and ipykernel) does the executing: it is Jupyter's own executor, the
one ``jupyter nbconvert --execute`` uses, so outputs are recorded exactly as Jupyter would.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebook", type=Path, help="the notebook to execute (.ipynb)")
    parser.add_argument("--out", type=Path, required=True,
                        help="where to write the executed notebook, outputs included")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="the kernel's working directory (default: a new temporary one)")
    parser.add_argument("--data", type=Path, default=None,
                        help="folder copied into the working directory as data/ (default: "
                             "the notebook's data/ folder; 'none' copies nothing)")
    parser.add_argument("--cell-timeout", type=int, default=300,
                        help="seconds one cell may run (default 300)")
    parser.add_argument("--kernel", default="python3", help="kernel name (default python3)")
    args = parser.parse_args(argv)
    if not args.notebook.is_file():
        parser.error(f"no notebook at {args.notebook}")
    if args.data is None:
        args.data = args.notebook.resolve().parent / "data"
        if not args.data.is_dir():
            args.data = None
    elif str(args.data) == "none":
        args.data = None
    elif not args.data.is_dir():
        parser.error(f"--data {args.data} is not a folder")
    return args


def _failing_cell(notebook):
    """The last code cell with an error output (nbclient stops at the first failure)."""
    for index, cell in reversed(list(enumerate(notebook.cells))):
        if cell.cell_type == "code" and any(out.get("output_type") == "error"
                                            for out in cell.get("outputs", [])):
            return index, cell
    return None, None


def main(argv=None) -> int:
    args = _arguments(argv)
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="run_notebook-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.data is not None:
        shutil.copytree(args.data, workdir / "data", dirs_exist_ok=True)
    print(f"run_notebook: {args.notebook} in {workdir} (SWDASK_BACKEND="
          f"{os.environ.get('SWDASK_BACKEND', '<unset>')})", file=sys.stderr, flush=True)

    notebook = nbformat.read(args.notebook, as_version=4)
    # the kernel is a fresh process: it imports this checkout's swdask, then whatever the
    # caller's PYTHONPATH holds (carried wheels, a staged cuDF)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    # coalesce_streams: a cell's stdout (stderr) is one output, not one per flush, so a text
    # progress bar redrawn with carriage returns is one bar (as_shown keeps its last state)
    client = NotebookClient(notebook, timeout=args.cell_timeout, kernel_name=args.kernel,
                            record_timing=False,  # keeps a committed notebook's diffs to outputs
                            coalesce_streams=True,
                            resources={"metadata": {"path": str(workdir)}})
    status = 0
    try:
        client.execute(env=dict(os.environ, PYTHONPATH=path))
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as error:
        status = 1
        index, cell = _failing_cell(notebook)
        if cell is not None:
            print(f"run_notebook: cell {index} failed:\n{cell.source}\n", file=sys.stderr)
        print(f"run_notebook: {type(error).__name__}: {error}", file=sys.stderr)
    finally:
        for cell in notebook.cells:
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream":
                    output["text"] = as_shown(output["text"])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, args.out)
        print(f"run_notebook: wrote {args.out}", file=sys.stderr, flush=True)
    return status


def as_shown(text: str) -> str:
    """Stream text as Jupyter shows it: on each line, the last state a carriage return left
    (a progress bar's final redraw; an erase-line sequence after it, which Jupyter does not
    act on, is dropped)."""
    import re

    lines = []
    for line in re.sub(r"\x1b\[[0-9;]*K", "", text).split("\n"):
        states = [state for state in line.split("\r") if state]
        lines.append(states[-1] if states else "")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
