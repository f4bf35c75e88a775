"""`python -m tgr`: the same command line as the `tgr` script."""
from .cli import run

run()
