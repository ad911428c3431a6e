"""Write docs/settings.md, the settings reference, from swdask/swdask.yaml.

    python docs/settings_page.py           # rewrite docs/settings.md
    python docs/settings_page.py --check   # exit 1 if it is not current

The YAML file is the one place a setting is defined: its default and, in the comment lines
above it, what it does. This script turns each setting into a row (full name, default, the
comment's text), so the page cannot drift from the defaults the package loads;
``tests/test_docs.py`` fails when the page is stale or a setting has no comment.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = ROOT / "swdask" / "swdask.yaml"
PAGE = ROOT / "docs" / "settings.md"

HEAD = """# Settings

swdask's tuning settings live in Dask's configuration under a `swdask` namespace, so they
are set the way Dask users set everything else:

- in a Dask YAML file (`~/.config/dask/*.yaml`);
- in code: `dask.config.set({"swdask.gpu.chunk-bytes": 2**30})`, for a block or for good;
- in the environment, the Dask way: `DASK_SWDASK__GPU__CHUNK_BYTES=1073741824` (read when
  Dask is imported). A `LocalCluster` forwards the settings to its workers.

`import swdask` does not import Dask: swdask's defaults go into `dask.config` as soon as Dask
is imported (by you, or by swdask when it first reads a setting), so
`dask.config.get("swdask.gpu.runtime")` works whenever Dask is there. The `SWDASK_GPU_*`
environment variables of earlier releases are still read, once, as defaults under these
names. `null` means "work it out" (from the device, or the measured default the description
names).

This page is generated from [`swdask/swdask.yaml`](../swdask/swdask.yaml) by
`python docs/settings_page.py`; edit the YAML's comments, not this page.

| setting | default | what it does |
| --- | --- | --- |
"""


def settings(text: str) -> list[tuple[str, str, str]]:
    """(full name, default as written, description) for every leaf of the YAML file, the
    description being the comment lines directly above the leaf (or above the run of leaves
    it heads)."""
    rows, path, comment = [], [], []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            comment = []
            continue
        indent = len(line) - len(line.lstrip())
        if stripped.startswith("#"):
            if indent > 0:  # the header's comment (column 0) describes the file, not a key
                comment.append(stripped.lstrip("#").strip())
            continue
        key, _, value = stripped.partition(":")
        depth = indent // 2
        path = path[:depth] + [key.strip()]
        value = value.strip()
        if value:
            rows.append((".".join(path), value, " ".join(comment)))
        comment = []
    return rows


def render() -> str:
    rows = settings(DEFAULTS.read_text())
    missing = [name for name, _, text in rows if not text]
    if missing:
        raise SystemExit(f"swdask.yaml: no comment above {', '.join(missing)}")
    body = "".join(f"| `{name}` | `{value}` | {text.replace('|', '/')} |\n"
                   for name, value, text in rows)
    return HEAD + body


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not PAGE.exists() or PAGE.read_text() != text:
            print("docs/settings.md is stale: run python docs/settings_page.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
