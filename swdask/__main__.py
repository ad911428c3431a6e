"""``python -m swdask``: the same command line as the ``swdask`` script."""
import sys

from .cli import main

# Guarded: worker processes of a local cluster are spawned, and they import __main__ again.
if __name__ == "__main__":
    sys.exit(main())
