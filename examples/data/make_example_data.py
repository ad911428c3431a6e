"""Rebuild the example data from the Debian package mmseqs2-examples (see README.md here).

    apt-get install -y mmseqs2-examples
    python examples/data/make_example_data.py

db.fasta: the first 2,000 records of DB.fasta.gz, byte for byte.
queries.fasta: the first two records of QUERY.fasta.gz (in file order) whose three best
Smith-Waterman scores against db.fasta (BLOSUM62, gap 11 + (k-1)) are all at least 300, so that
the example search finds several real homologs per query.
"""
import gzip
from pathlib import Path

import swdask

SOURCE = Path("/usr/share/doc/mmseqs2/example-data")
HERE = Path(__file__).resolve().parent
N_DB = 2000
N_QUERIES = 2
MIN_THIRD_SCORE = 300


def records(path):
    """Raw records (header line + sequence lines, as bytes) in file order."""
    chunks = gzip.decompress(path.read_bytes()).split(b"\n>")
    return [(b"" if k == 0 else b">") + c + (b"" if c.endswith(b"\n") else b"\n")
            for k, c in enumerate(chunks)]


def main():
    (HERE / "db.fasta").write_bytes(b"".join(records(SOURCE / "DB.fasta.gz")[:N_DB]))
    targets = swdask.read_fasta(HERE / "db.fasta").compute()["sequence"]
    queries = swdask.read_fasta(SOURCE / "QUERY.fasta.gz").compute()["sequence"]
    raw_queries = records(SOURCE / "QUERY.fasta.gz")
    chosen = []
    for k, query in enumerate(queries):
        best = targets.sw.align(query, positions=False)["score"].nlargest(3)
        if len(best) == 3 and best.min() >= MIN_THIRD_SCORE:
            chosen.append(raw_queries[k])
            if len(chosen) == N_QUERIES:
                break
    (HERE / "queries.fasta").write_bytes(b"".join(chosen))


if __name__ == "__main__":
    main()
