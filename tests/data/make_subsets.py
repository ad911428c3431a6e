"""Regenerate the small real-data subsets in this folder (run from the repository root).

    python3 tests/data/make_subsets.py

Sources (Debian packages ``mmseqs2-examples`` and ``hmmer-examples``):
  /usr/share/doc/mmseqs2/example-data/QUERY.fasta.gz, DB.fasta.gz   (UniProt proteins)
  /usr/share/doc/hmmer/examples/tutorial/dna_target.fa               (human chromosome 1 fragment)

The protein targets are chosen so that the tests see real homologous hits (long gapped
alignments) as well as unrelated proteins: for each chosen query, its best-scoring database
proteins (by parasail, BLOSUM62 11/1) plus a seeded random sample of the rest. Records are
copied verbatim (header and sequence), only re-wrapped at 60 columns.
"""
import gzip
import os

import numpy as np
import parasail

HERE = os.path.dirname(os.path.abspath(__file__))
MMSEQS = "/usr/share/doc/mmseqs2/example-data"
DNA = "/usr/share/doc/hmmer/examples/tutorial/dna_target.fa"
MAX_TARGET_LENGTH = 1500
#: query lengths spread from short to long
QUERY_LENGTH_BANDS = [(40, 80), (120, 200), (250, 400), (450, 700), (800, 1200)]
HITS_PER_QUERY = 12
RANDOM_TARGETS = 300 - 5 * HITS_PER_QUERY
#: bases [DNA_START, DNA_START + DNA_LENGTH) of dna_target.fa
DNA_START, DNA_LENGTH = 100_000, 12_000


def read_fasta(handle):
    records, header, chunks = [], None, []
    for line in handle:
        line = line.rstrip("\n")
        if line.startswith(">"):
            if header is not None:
                records.append((header, "".join(chunks)))
            header, chunks = line[1:], []
        elif line:
            chunks.append(line.strip())
    if header is not None:
        records.append((header, "".join(chunks)))
    return records


def write_fasta(path, records):
    with open(path, "w") as out:
        for header, sequence in records:
            out.write(f">{header}\n")
            for k in range(0, len(sequence), 60):
                out.write(sequence[k:k + 60] + "\n")


def main():
    rng = np.random.default_rng(20250101)
    queries_all = read_fasta(gzip.open(f"{MMSEQS}/QUERY.fasta.gz", "rt"))
    database = read_fasta(gzip.open(f"{MMSEQS}/DB.fasta.gz", "rt"))
    database = [r for r in database if len(r[1]) <= MAX_TARGET_LENGTH]
    queries, chosen = [], set()
    for low, high in QUERY_LENGTH_BANDS:
        for header, sequence in queries_all:
            if not low <= len(sequence) <= high:
                continue
            profile = parasail.profile_create_stats_sat(sequence, parasail.blosum62)
            scores = np.array([parasail.sw_striped_profile_sat(profile, t, 11, 1).score
                               for _, t in database])
            best = np.argsort(-scores, kind="stable")[:HITS_PER_QUERY]
            # a query whose best hits are real homologs (long, high-scoring alignments)
            if scores[best[HITS_PER_QUERY // 2]] >= 100:
                queries.append((header, sequence))
                chosen.update(int(k) for k in best)
                break
    rest = [k for k in range(len(database)) if k not in chosen]
    chosen.update(int(k) for k in rng.choice(rest, size=300 - len(chosen), replace=False))
    write_fasta(os.path.join(HERE, "proteins_query.fasta"), queries)
    write_fasta(os.path.join(HERE, "proteins_db.fasta"), [database[k] for k in sorted(chosen)])
    (dna_header, dna), = read_fasta(open(DNA))
    region = dna[DNA_START:DNA_START + DNA_LENGTH]
    write_fasta(os.path.join(HERE, "dna_region.fasta"),
                [(f"{dna_header} bases {DNA_START}-{DNA_START + DNA_LENGTH} "
                  "(0-based, end-exclusive)", region)])


if __name__ == "__main__":
    main()
