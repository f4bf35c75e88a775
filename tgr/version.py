"""tgr's version: a leaf, so that the store, the ledger and the exports can record it without
importing the package root (which imports everything above them)."""
__version__ = "0.1.0"
