"""``python -m swdask``: the same command line as the ``swdask`` script."""
from .cli import run

# Guarded: worker processes of a local cluster are spawned, and they import __main__ again.
if __name__ == "__main__":
    run()
