"""The documentation as a reader meets it: the README stays a short front door, every link in
the README, ``docs/`` and the results' index leads somewhere real (a file, and a heading where
the link names one), and the generated pages (settings, results index) are current.

The Sphinx build in ``.ci/run`` checks the pages under ``docs/`` again with its own resolver;
this test also covers the README and the results' index, which Sphinx does not build, and
runs with the suite everywhere."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from .conftest import REPOSITORY

README = REPOSITORY / "README.md"
DOCS = REPOSITORY / "docs"
RESULTS_INDEX = REPOSITORY / "benchmarks" / "results" / "README.md"

_FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)

if not (DOCS.is_dir() and README.is_file()):
    pytest.skip("the documentation is not beside the tests (an installed copy)",
                allow_module_level=True)


def markdown_files() -> list[Path]:
    files = [README, RESULTS_INDEX, *sorted(DOCS.rglob("*.md"))]
    return [f for f in files if f.is_file() and "_build" not in f.parts]


def links(text: str) -> list[str]:
    """The targets of the Markdown links of ``text``, outside code blocks and code spans."""
    text = _CODE.sub("", _FENCE.sub("", text))
    return _LINK.findall(text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading (what myst_heading_anchors makes too): lower case, markup
    and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text())
    found, seen = set(), {}
    for _, heading in _HEADING.findall(text):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


def test_slug_and_links_parse_as_github_does():
    assert slug("The `.sw` accessor") == "the-sw-accessor"
    assert slug("Bad input, and errors (CLI)") == "bad-input-and-errors-cli"
    text = "see [a](x.md#b), `[not](y.md)`, ![img](p.png)\n```\n[no](z.md)\n```\n[c](d.md \"t\")"
    assert links(text) == ["x.md#b", "d.md"]


def test_readme_is_a_front_door():
    lines = README.read_text().count("\n")
    assert lines <= 200, f"README.md has {lines} lines; move detail into docs/"


def test_every_link_resolves():
    broken = []
    for page in markdown_files():
        for target in links(page.read_text()):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (page.parent / file_part).resolve() if file_part else page
            where = f"{page.relative_to(REPOSITORY)}: {target}"
            if not resolved.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{where} (no heading with that anchor)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_link_checker_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [bad](#nowhere)\n")
    targets = links(page.read_text())
    assert targets == ["#title", "missing.md", "#nowhere"]
    assert "title" in anchors(page) and "nowhere" not in anchors(page)


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_settings_page_is_generated_from_the_defaults():
    """docs/settings.md is what docs/settings_page.py makes of swdask.yaml, and lists every
    setting the package loads, each with a description."""
    import dask.config

    import swdask  # noqa: F401  (its defaults go into dask.config with Dask)

    page = _load(DOCS / "settings_page.py")
    assert (DOCS / "settings.md").read_text() == page.render(), \
        "docs/settings.md is stale: run python docs/settings_page.py"
    rows = page.settings(page.DEFAULTS.read_text())
    assert all(text for _, _, text in rows)

    def leaves(tree, prefix):
        for key, value in tree.items():
            if isinstance(value, dict):
                yield from leaves(value, f"{prefix}{key}.")
            else:
                yield f"{prefix}{key}"

    assert {name for name, _, _ in rows} == set(leaves(dask.config.get("swdask"), "swdask."))
