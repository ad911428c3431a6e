"""Write benchmarks/results/README.md, the index of the measured results, from their JSON.

    python benchmarks/results_index.py           # rewrite the index
    python benchmarks/results_index.py --check   # exit 1 if the index is not current

Results live in one folder per workload (``benchmarks/results/<workload>/``); every JSON file
there gets one row per record it holds: workload, machine, date, commit, the headline figure
and the file. The headline is read from the record's own fields (``headline`` below says which,
per kind of record); a record whose fields are of no known kind is listed with "see the file"
rather than a guessed figure. Other files (A/B logs, profiles, test logs) are listed under
their workload with the date and commit their names carry. ``tests/test_results_index.py``
fails when a result is added, moved or removed without rerunning this script.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
INDEX = RESULTS / "README.md"

# Every workload folder, with what its files measure. A folder missing here fails the index
# (and its test), so a new workload gets a description when it is created.
WORKLOADS = {
    "search-gpu": "the whole `swdask search` job on GPUs (a new process, FASTA in, hits file "
    "out), W1's 20 queries and 1,000 proteins against sp500k, with the kernel alone beside it",
    "search-cpu": "the whole `swdask search` job on the CPU against ssearch36 (W3's queries "
    "against DB.fasta), and its memory against the database's size",
    "w1-kernel": "the 16-bit inter-task kernel alone on W1 (20 queries, 144-5,478 letters, "
    "against sp500k), per query and scanned together, every result checked; kernel profiles "
    "and A/B runs of its variants",
    "w2-pairs": "row-wise pairs on the GPU (W2: reads, DNA and protein pairs of 150 to 100,000 "
    "letters), with and without alignments, and the one-against-all long-row threshold",
    "w3-cpu": "the numba CPU kernels against parasail (W3 and one long row), one or two threads",
    "dask-scaling": "searches through Dask and dask-cuda on several GPUs, and partition sizes",
    "traceback-gpu": "the GPU traceback alone",
    "evalue": "E-values against ssearch36's",
    "gpu-tests": "the GPU test suite's runs on the GPU machine (pass counts, not figures)",
    "startup": "a new process's first job against its later ones, with caches emptied (cold) "
    "and filled (warm)",
    "reads-job": "the reads job: gasic-examples' 100,000 FASTQ reads against its four "
    "genomes, `swdask search --top 1 -o hits.sam` in a new process, one strand and both",
    "all-vs-all": "a database searched against itself (issue 48): `swdask search DB DB "
    "--all-vs-all`, each unordered pair scored once, beside the plain search of the file as "
    "its own queries, same run, same hits",
    "pssm": "profile queries (issue 48): W1's queries as PSI-BLAST PSSMs beside the same "
    "queries with BLOSUM62, the scan and the whole `swdask search --pssm` command, same run",
    "long": "W5: one long pair with `swdask.align_long` (slices of two Klebsiella chromosomes, "
    "and the two whole chromosomes), the GPU's score pass and traceback beside the CPU's",
}

_DATE = re.compile(r"(20\d\d-\d\d-\d\d)")
_COMMIT = re.compile(r"(?:^|-)([0-9a-f]{7,40})(?=[-.]|$)")


def _short(commit) -> str:
    text = str(commit or "")
    match = re.match(r"[0-9a-f]{7,40}\b", text)
    return match.group(0)[:7] if match else ("" if not text else text.split()[0][:12])


def _machine(record: dict, top: dict, name: str) -> str:
    device = record.get("device") or top.get("device") or ""
    if not device:
        named = re.search(r"nvidia-(h100|h200)|amd-epyc", name)
        device = {"h100": "H100", "h200": "H200"}.get(named.group(1), "AMD EPYC") if named else ""
    device = device.replace("NVIDIA ", "").replace(" 80GB HBM3", "")
    gpus = record.get("gpus") or top.get("gpus")
    on_machine = top.get("gpus_on_machine")
    kind = re.search(r"-x(\d)(?:-|$)", name)
    if device.startswith(("H100", "H200")):
        if isinstance(gpus, int) and gpus > 1:
            device += f", {gpus} GPUs"
        elif on_machine and on_machine > 1:
            device += f" (of {on_machine})"
        elif kind:
            device += f" (of {kind.group(1)})"
    for isa in ("avx512", "avx2"):
        if f"-{isa}" in name:
            device += f" ({isa.upper()})"
    cores = record.get("cores") or record.get("logical_cpus") or top.get("cores")
    if cores and not device.startswith(("H100", "H200")):
        device += f", {cores} cores"
    return device or "?"


def _number(value, digits: int) -> str:
    return f"{value:,.{digits}f}"


def headline(record: dict) -> str:
    """The one figure that says what a record measured, from its own fields."""
    get = record.get
    if get("workload") == "reads-job" and isinstance(get("runs"), dict):
        runs = get("runs")
        gcups = runs["both"]["scan_gcups"]
        reads = f", first {get('read_count'):,} reads" if get("read_count") else ""
        return (f"{get('backend')}, {get('mode', 'local')}{reads}: one strand "
                f"{runs['plus']['wall_seconds_median']:.2f} s, "
                f"both {runs['both']['wall_seconds_median']:.2f} s whole command "
                f"({get('both_over_plus'):.2f}x); scan "
                f"{gcups:,.{1 if gcups < 10 else 0}f} GCUPS on both")
    if get("workload") == "pssm-W1" and isinstance(get("total"), dict):
        total, job = get("total"), get("job") or {}
        text = (f"{get('backend')}: scan with the PSSMs {total['tcups']['profile']:.3f} "
                f"TCUPS, with BLOSUM62 {total['tcups']['plain']:.3f} "
                f"({total['profile_over_plain']:.2f}x)")
        if job.get("pssm") and job.get("fasta"):
            text += (f"; whole command {job['pssm']['runs'][-1]['wall_seconds']:.2f} s against "
                     f"{job['fasta']['runs'][-1]['wall_seconds']:.2f} s")
        return text + f"; {get('mismatches')} of {get('checked'):,} checked rows differ"
    if get("workload") == "all-vs-all" and isinstance(get("runs"), dict):
        runs = get("runs")
        return (f"{get('backend')}, {get('records'):,} records, top {get('top')}: "
                f"--all-vs-all {runs['all_vs_all']['wall_seconds_median']:.2f} s, the search "
                f"of every record {runs['search']['wall_seconds_median']:.2f} s whole command "
                f"({get('search_over_all_vs_all'):.2f}x), same hits")
    if get("first_over_second") is not None and isinstance(get("phases"), dict):
        phases = get("phases")
        return (f"{get('workload')} {'cold' if get('cold') else 'warm'}: first search "
                f"{phases.get('first_search', 0):.2f} s, second "
                f"{phases.get('second_search', 0):.2f} s ({get('first_over_second'):.2f}x); "
                f"whole process {get('wall_seconds', 0):.2f} s")
    if get("x_linear") is not None and get("seconds") is not None:
        return (f"{get('workload')} on {get('gpus')} GPU(s) through Dask: {get('seconds'):.2f} s, "
                f"{get('gcups', 0) / 1000:.2f} TCUPS, {get('x_linear'):.2f} of linear")
    if get("wall_seconds") is not None and (
        get("workload") in ("search-W1", "search-1000") or get("backend") in ("gpu", "cudf")
    ):
        text = f"{get('workload', 'search')} job {get('wall_seconds'):.2f} s"
        if get("backend"):
            text += f", --backend {get('backend')}"
        if (get("gpus") or 1) > 1:
            text += f" on {get('gpus')} GPUs"
            if get("runner"):  # how the several GPUs ran it (a scheduler, a recipe...)
                text += f" ({get('runner')})"
        if get("cudasw4_wall_seconds") is not None:
            text += f"; CUDASW++4.0 makedb + align {get('cudasw4_wall_seconds'):.2f} s"
        if get("kernel_tcups"):
            text += f"; kernel alone {get('kernel_tcups'):.3f} TCUPS"
        return text
    if get("wall_seconds") is not None and get("backend") == "cpu":
        text = f"{get('workload', 'search')} job {get('wall_seconds'):.2f} s"
        if get("ssearch36_wall_seconds"):
            text += f"; ssearch36 {get('ssearch36_wall_seconds'):.2f} s"
        return text
    if get("workload") == "W1" and get("gcups_total"):
        return f"{get('gcups_total') / 1000:.3f} TCUPS ({get('mode', 'kernel')}, positions {get('positions')})"
    if get("workload") == "W3" and get("gcups_total"):
        text = f"{get('gcups_total'):.1f} GCUPS (positions {get('positions')})"
        if get("peer_gcups_total"):
            text += f"; parasail {get('peer_gcups_total'):.1f}"
        return text
    if str(get("workload", "")).startswith("W2") and get("gcups_total"):
        text = f"{_number(get('gcups_total'), 0)} GCUPS end to end"
        if get("kernel_gcups_total"):
            text += f", kernel {_number(get('kernel_gcups_total'), 0)}"
        if get("gcups_alignment"):
            text += f"; with alignments {_number(get('gcups_alignment'), 0)}"
        return text
    if get("gcups_full") and get("gcups_alignment"):
        return (f"{_number(get('gcups_full'), 1)} GCUPS positions, "
                f"{_number(get('gcups_alignment'), 1)} with alignments")
    if get("job_wall_seconds_best") is not None:
        return (f"job {get('job_wall_seconds_best'):.2f} s; call {get('call_gcups'):.0f} GCUPS, "
                f"kernel {get('kernel_gcups'):.0f}")
    if get("end_over_parasail") is not None:
        return f"{get('end_over_parasail'):.2f}x parasail sw_striped_16 (one thread, ends)"
    if get("hits_ssearch36") is not None:
        line = f"{get('queries')} queries, {get('hits_ssearch36')} ssearch36 hits compared"
        composition = (get("blastp") or {}).get("comp_based_stats_1_vs_composition")
        if composition:
            line += (f"; --statistics composition against blastp -comp_based_stats 1: "
                     f"Spearman {composition['evalue_spearman']:.3f}, median abs log10 ratio "
                     f"{composition['evalue_abs_log10_ratio_median']:.2f} "
                     f"({composition['in_range']} hits, E 1e-30..10)")
        return line
    sweep = get("runs") or get("rows")
    if isinstance(sweep, list) and sweep and all(isinstance(r, dict) for r in sweep):
        return _sweep(sweep)
    return "see the file"


def _sweep(runs: list[dict]) -> str:
    """A record of several runs (sizes, settings or trees side by side): how many, and the
    range of the figure they share."""
    for key, unit, scale, digits in (
        ("gcups", "TCUPS", 1000, 3), ("peak_over_database", "x the database's size (peak "
         "memory)", 1, 1), ("wall_seconds", "s", 1, 2), ("seconds", "s", 1, 3),
    ):
        values = [r[key] / scale for r in runs if isinstance(r.get(key), (int, float))]
        if values:
            low, high = min(values), max(values)
            return (f"{len(runs)} runs side by side: {low:,.{digits}f}-{high:,.{digits}f} "
                    f"{unit}")
    return f"{len(runs)} runs side by side (see the file)"


def _records(data) -> list[dict]:
    if isinstance(data, dict):
        runs = data.get("runs")
        if "gcups_total" not in data and isinstance(runs, list) and runs and all(
            isinstance(r, dict) and "workload" in r
            and ("wall_seconds" in r or "seconds" in r) for r in runs
        ):
            return runs
        return [data]
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)] or [{}]
    return [{}]


def rows() -> tuple[list[tuple], dict[str, list[str]], list[str]]:
    """(JSON rows, other files by workload, problems): problems are loose files at the top,
    folders without a description, and unreadable JSON."""
    table, others, problems = [], {}, []
    for path in sorted(RESULTS.iterdir()):
        if path.is_file() and path.name != "README.md":
            problems.append(f"{path.name}: a loose result file; move it into a workload folder")
        if not path.is_dir():
            continue
        if path.name not in WORKLOADS:
            problems.append(f"{path.name}/: no description in WORKLOADS")
        for file in sorted(path.iterdir()):
            relative = f"{path.name}/{file.name}"
            if file.suffix != ".json":
                others.setdefault(path.name, []).append(file.name)
                continue
            try:
                data = json.loads(file.read_text())
            except ValueError as error:
                problems.append(f"{relative}: not JSON ({error})")
                continue
            top = data if isinstance(data, dict) else {}
            for record in _records(data):
                date = record.get("date") or top.get("date")
                if not date:
                    found = _DATE.search(file.name)
                    date = found.group(1) if found else "?"
                commit = _short(record.get("commit") or top.get("commit"))
                if not commit:
                    found = _COMMIT.search(file.stem)
                    commit = found.group(1)[:7] if found else "?"
                workload = record.get("workload") or top.get("workload") or path.name
                table.append((path.name, str(workload), _machine(record, top, file.name),
                              str(date)[:10], commit, headline(record), relative))
    return table, others, problems


def render() -> str:
    table, others, problems = rows()
    if problems:
        raise SystemExit("benchmarks/results: " + "; ".join(problems))
    lines = [
        "# Measured results",
        "",
        "Written by `python benchmarks/results_index.py` from the JSON files below; do not edit "
        "by hand (`tests/test_results_index.py` checks that it is current). Each workload has "
        "a folder; within it the newest runs come first. How each was measured: "
        "[the benchmarks page](../../docs/benchmarks.md). Runs superseded by later ones on the "
        "same kind of machine were pruned, unless the README or docs/ cite the file or the "
        "commit it measured; git history keeps the rest.",
        "",
    ]
    for workload, description in WORKLOADS.items():
        mine = [row for row in table if row[0] == workload]
        other = others.get(workload, [])
        if not mine and not other:
            continue
        lines += [f"## {workload}", "", description[0].upper() + description[1:] + ".", ""]
        if mine:
            lines += ["| workload | machine | date | commit | headline | file |",
                      "| --- | --- | --- | --- | --- | --- |"]
            for row in sorted(mine, key=lambda r: (r[3], r[6]), reverse=True):
                _, name, machine, date, commit, figure, relative = row
                lines.append(f"| {name} | {machine} | {date} | {commit} | {figure} | "
                             f"[{Path(relative).name}]({relative}) |")
            lines.append("")
        if other:
            lines.append("Other records (logs, profiles, A/B runs; their figures are in the "
                         "files):")
            lines.append("")
            for name in sorted(other, key=lambda n: (_DATE.search(n).group(1) if _DATE.search(n) else "", n), reverse=True):
                lines.append(f"- [{name}]({workload}/{name})")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the index is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = INDEX.read_text() if INDEX.exists() else ""
        if current != text:
            print("benchmarks/results/README.md is stale: run python benchmarks/results_index.py",
                  file=sys.stderr)
            return 1
        return 0
    INDEX.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
