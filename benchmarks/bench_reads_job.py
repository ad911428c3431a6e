"""The reads job (issue 47): sequencing reads from FASTQ against the genomes they come from,
as a user runs it: ``swdask search READS.fastq.gz GENOMES... --dna --top 1 -o hits.bam -v``
in a new process, one strand and both strands, on the GPU or the CPU (``--output sam``: the
SAM text instead; BAM needs pysam, the ``bam`` extra).

Data: Debian's gasic-examples (100,000 Illumina reads of 72 bp from a honey bee virus study,
and the four virus genomes of about 10 kb they come from). For each strand setting the
command runs ``--repeats`` times (the first run is a warm-up, not counted); the record keeps
each run's wall clock (process start to SAM written, taken outside the process), the phases
the command printed (``-v``: imports, queries, search, write, and the thread-seconds of the
scan and of the hits' alignments inside the search), and the scan's GCUPS over the cells
the scan computed (every read against every genome letter, times the strands): the kernel
side beside the whole job, same run. The output of each run is read back (BAM through
pysam, htslib's reader) and checked: one record per read that aligned, FLAG 16 on the minus strand, and the plus-strand run's lines equal the both-strand
run's wherever that one chose the plus strand.

    python3 benchmarks/bench_reads_job.py --data .devcarry/gasic --backend gpu --out DIR
"""
from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
from pathlib import Path

import bench_w5_long_gpu as w5
from _common import add_commit_argument, command_runs, stamp, write_result

READS = "SRR059298_subset.fastq.gz"
SCORING = ["--dna", "--match", "2", "--mismatch", "-3", "--gap-open", "5", "--gap-extend", "2"]


def residues(path: Path, fastq: bool) -> int:
    """Letters of a (gzip) FASTQ's sequences or a FASTA's records."""
    total = 0
    with gzip.open(path, "rt") as handle:
        for number, line in enumerate(handle):
            line = line.strip()
            if fastq and number % 4 == 1:
                total += len(line)
            elif not fastq and line and line[0] != ">":
                total += len(line)
    return total


def sam_lines(path: Path) -> list[list[str]]:
    """The alignment records of a SAM or BAM file as SAM fields (BAM decoded by htslib)."""
    if path.suffix == ".bam":
        import pysam

        with pysam.AlignmentFile(str(path), "rb") as bam:
            return [record.to_string().split("\t") for record in bam]
    return [line.split("\t") for line in path.read_text().splitlines() if line[0] != "@"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of the reads and genomes")
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="gpu")
    parser.add_argument("--reads", type=int, help="the first this many reads only")
    parser.add_argument("--repeats", type=int, default=3, help="counted runs per setting")
    parser.add_argument("--mode", default="local",
                        help="the alignment mode (--mode of swdask search; default local)")
    parser.add_argument("--output", choices=("bam", "sam"), default="bam",
                        help="the file the command writes (default bam, as the issue's job)")
    parser.add_argument("--out", default=".")
    add_commit_argument(parser)
    args = parser.parse_args()
    data = Path(args.data)
    genomes = sorted(data.glob("*.fasta.gz"))
    with tempfile.TemporaryDirectory() as folder:
        reads = data / READS
        if args.reads:
            reads = Path(folder) / "reads.fastq.gz"
            with gzip.open(data / READS, "rt") as source, gzip.open(reads, "wt") as out:
                for number, line in enumerate(source):
                    if number >= 4 * args.reads:
                        break
                    out.write(line)
        read_letters, genome_letters = residues(reads, True), sum(residues(g, False)
                                                                  for g in genomes)
        record = {"workload": "reads-job", **stamp(args.commit), "backend": args.backend,
                  "reads": reads.name, "read_count": args.reads or None,
                  "read_letters": read_letters,
                  "genome_letters": genome_letters, "scoring": " ".join(SCORING),
                  "top": 1, "mode": args.mode, "output": args.output, "runs": {}}
        outputs = {}
        for strand in ("plus", "both"):
            sam = Path(folder) / f"hits-{strand}.{args.output}"
            command = [sys.executable, "-m", "swdask", "search", reads, *genomes, *SCORING,
                       "--strand", strand, "--mode", args.mode, "--top", "1",
                       "--backend", args.backend,
                       "--no-progress", "-v", "-o", sam]
            runs = command_runs(command, args.repeats, strand, w5.command_phases)
            cells = read_letters * genome_letters * (2 if strand == "both" else 1)
            scan = statistics.median(run["in_tasks"].get("scan", float("nan")) for run in runs)
            lines = sam_lines(sam)
            outputs[strand] = lines
            record["runs"][strand] = {
                "runs": runs,
                "wall_seconds_median": statistics.median(r["wall_seconds"] for r in runs),
                "scan_cells": cells, "scan_seconds_median": scan,
                "scan_gcups": round(cells / scan / 1e9, 1) if scan == scan else None,
                "aligned_reads": len(lines),
                "minus_strand": sum(int(line[1]) & 16 == 16 for line in lines)}
        plus, both = ({line[0]: line for line in outputs[k]} for k in ("plus", "both"))
        same = [name for name, line in both.items() if int(line[1]) & 16 == 0]
        assert all(plus[name] == both[name] for name in same), "plus lines differ"
        assert set(plus) <= set(both)
        record["both_over_plus"] = round(record["runs"]["both"]["wall_seconds_median"]
                                         / record["runs"]["plus"]["wall_seconds_median"], 3)
    mode = "" if args.mode == "local" else f"-{args.mode}"
    path = write_result(args.out, f"reads-job{mode}-{args.backend}", record)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
