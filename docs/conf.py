"""Sphinx configuration of swdask's documentation: Markdown pages (myst-parser) and the API
reference from the docstrings (autodoc). `.ci/run` builds it with warnings as errors:

    python -m pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""
import sys
from pathlib import Path

# the source tree's swdask, whatever else is installed
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

project = "swdask"
author = "the swdask developers"
# the docstrings are in Google style (Args:, Returns:), which napoleon reads
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
# GitHub-style anchors for headings down to ###, so `page.md#a-heading` links resolve (and a
# link to a heading that does not exist is a warning, hence an error in CI)
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "description"
html_theme = "alabaster"
html_title = "swdask"
