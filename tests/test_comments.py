"""The package's comments and docstrings state no timings: a figure measured on one machine at
one commit goes stale, so a comment says why in words and names the note under ``docs/notes/``
that holds the measurement.

Every comment and docstring line under ``swdask/`` is read: in Python the ``#`` comments (from
:mod:`tokenize`) and the lines of every string that stands alone as a statement (module, class
and function docstrings, attribute docstrings; from :mod:`ast`); in CUDA and C (``.cu``,
``.cuh``, ``.h``) the ``//`` and ``/* */`` comments; in YAML the ``#`` comments. A line fails
when it matches :data:`TIMING`, which is ``re.IGNORECASE`` and alternates:

* a number and a unit of time, the number starting a word::

      (?<![\\w.])\\d[\\d.,]*\\s?(?:s|secs?|seconds?|ms|msecs?|milliseconds?|us|µs|usecs?|
      microseconds?|ns|nanoseconds?|mins?|minutes?|hours?|hrs?)\\b

  ("0.05 s", "took 1.2 s", "21 s", "12 ms", "in 3 minutes"; not "4 bytes", "sm_90");
* a number and cell updates per second: ``\\d\\s*[KMGT]?CUPS\\b`` ("3.9 TCUPS", "104 GCUPS");
* a number and a rate per second: ``\\d\\s*(?:[KMGT]i?B|bytes?|[KMG]?\\s?cells?)\\s*/\\s*s\\b``
  ("606 MB/s", "4.3 TB/s", "22 M cells/s");
* a factor of speed: a number and ``x`` followed by the end of the line, a closing mark or a
  word that compares, ``\\d(?:\\.\\d+)?\\s?[x×](?=\\s*(?:$|[),;:.]|faster|slower|quicker|
  speed|as\\b|the\\b|one\\b|over\\b|more\\b|less\\b|on\\b|against\\b))`` ("1.8x", "2.3 x one
  GPU", "2.5 x slower"; not "32 x 36 rows", "G x R", "<32 x i16>");
* a share of time or a change of speed in per cent: ``\\d\\s?%\\s+(?:faster|slower|quicker|
  longer|shorter|busy|occupancy)`` or ``\\d\\s?%\\s+of\\s+(?:\\S+\\s+){0,3}?(?:time|job|run|
  runtime|wall|search|scan)\\b`` ("10% faster", "40% of the job"; not "40% of what
  memory-bytes allows").
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "swdask"

#: What a timing looks like in a comment (the module's docstring explains each part).
TIMING = re.compile(
    r"(?<![\w.])\d[\d.,]*\s?(?:s|secs?|seconds?|ms|msecs?|milliseconds?|us|µs|usecs?"
    r"|microseconds?|ns|nanoseconds?|mins?|minutes?|hours?|hrs?)\b"
    r"|\d\s*[KMGT]?CUPS\b"
    r"|\d\s*(?:[KMGT]i?B|bytes?|[KMG]?\s?cells?)\s*/\s*s\b"
    r"|\d(?:\.\d+)?\s?[x×](?=\s*(?:$|[),;:.]|faster|slower|quicker|speed|as\b|the\b|one\b"
    r"|over\b|more\b|less\b|on\b|against\b))"
    r"|\d\s?%\s+(?:faster|slower|quicker|longer|shorter|busy|occupancy)"
    r"|\d\s?%\s+of\s+(?:\S+\s+){0,3}?(?:time|job|run|runtime|wall|search|scan)\b",
    re.IGNORECASE)

#: Timings the pattern must catch.
TIMINGS = ["0.05 s", "took 1.2 s", "21 s", "16 s", "0.18-0.69 s against", "(0.37s)",
           "3.9 TCUPS", "104 GCUPS", "20-23 GCUPS", "606 MB/s", "4.3 TB/s", "6-9 GB/s",
           "22 M cells/s", "12 ms", "0.3 ms", "1.8x", "1.8x faster", "2.3 x one GPU",
           "(1.68 x)", "2.5 x slower", "in 3 minutes", "2 min", "10% faster", "9-18% slower",
           "40% of the job", "4-13% of the striped kernel's time", "95% busy",
           "25% occupancy", "30 seconds", "5 us"]
#: Text that is not a timing and must pass.
NOT_TIMINGS = ["32 x 36 rows", "G x R", "4 bytes", "a 256-byte fetch", "sm_90",
               "<32 x i16>", "16 x C bytes", "100,000 x 100,000", "8 x 32 = 256 rows",
               "1 / (2 x processes)", "40% of what memory-bytes allows", "one line per 10%",
               "0x{byte:02x}", "m x n", "cells / seconds / 1e9", "a 10,000-letter row",
               "W2's reads", "1,000 queries", "in seconds", "int32s", "fp16s", "x86s",
               "GCUPS per running task", "2 streams"]


def _python_lines(path: Path, text: str):
    """(line number, text) of every ``#`` comment and every line of a string statement."""
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(text, str(path))):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            for offset, line in enumerate(node.value.value.splitlines()):
                yield node.lineno + offset, line


def _c_lines(text: str):
    """(line number, text) of every ``//`` and ``/* */`` comment line of CUDA or C source."""
    line, i, n = 1, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in "\"'":  # a string or character literal: skip it
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            yield line, text[i:end]
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for offset, part in enumerate(text[i:end].split("\n")):
                yield line + offset, part
            line += text.count("\n", i, end)
            i = end
        else:
            i += 1


def _yaml_lines(text: str):
    """(line number, text) of every ``#`` comment of a YAML file (a ``#`` that starts the line
    or follows a space)."""
    for number, line in enumerate(text.splitlines(), 1):
        match = re.search(r"(?:^|\s)#.*", line)
        if match:
            yield number, match.group(0)


def comment_lines(path: Path):
    """(line number, text) of the comment and docstring lines of one file of the package."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return sorted(_python_lines(path, text))
    if path.suffix in (".cu", ".cuh", ".h"):
        return list(_c_lines(text))
    if path.suffix in (".yaml", ".yml"):
        return list(_yaml_lines(text))
    return []


def _package_files():
    return sorted(p for p in PACKAGE.rglob("*")
                  if p.suffix in (".py", ".cu", ".cuh", ".h", ".yaml", ".yml")
                  and "__pycache__" not in p.parts)


def test_pattern_catches_timings_and_passes_other_text():
    missed = [s for s in TIMINGS if not TIMING.search(s)]
    flagged = [s for s in NOT_TIMINGS if TIMING.search(s)]
    assert not missed, f"TIMING misses these timings: {missed}"
    assert not flagged, f"TIMING flags these non-timings: {flagged}"


def test_reader_finds_comments_and_docstrings(tmp_path):
    source = tmp_path / "m.py"
    source.write_text('"""took 1.2 s"""\nx = "21 s"  # 12 ms\ndef f():\n    """3.9 TCUPS"""\n')
    assert [n for n, line in comment_lines(source) if TIMING.search(line)] == [1, 2, 4]
    cuda = tmp_path / "k.cu"
    cuda.write_text('const char *s = "// 1 s";\n// 2 s\nint x; /* a\n 3 s */\n')
    assert [n for n, line in comment_lines(cuda) if TIMING.search(line)] == [2, 4]


def test_no_comment_states_a_timing():
    files = _package_files()
    assert files, f"no package files under {PACKAGE}"
    found = [f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
             for path in files for number, line in comment_lines(path) if TIMING.search(line)]
    assert not found, ("comments and docstrings state timings; say why in words and name the "
                       "note under docs/notes/ instead:\n" + "\n".join(found))


def test_no_comment_names_an_old_note_or_a_results_file():
    """The measurements live in the topic notes under docs/notes/; comments name those."""
    old = re.compile(r"NOTES-(?:gpu|cpu|w2)\.md|benchmarks/results/|results/[\w.{},*-]+\.(?:log|json)")
    found = [f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
             for path in _package_files() for number, line in comment_lines(path)
             if old.search(line)]
    assert not found, "comments name old notes or result files:\n" + "\n".join(found)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(pytest.main([__file__, "-q"]))
