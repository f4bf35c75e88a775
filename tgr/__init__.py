"""tgr: a GraphRAG knowledge store in one SQLite file.

    import tgr
    with tgr.open("corpus.db") as kb:
        kb.index(["docs/"])
        print(kb.ask("Who is Scrooge?").answer)
        print(kb.ask("What are the main themes?", mode="global").answer)
"""
__version__ = "0.1.0"

from .errors import ModelError, ModelMismatch, StoreError, TgrError  # noqa: E402
from .prompts import Prompts  # noqa: E402
from .query import Answer  # noqa: E402
from .store import IndexSettings, IndexSummary, KnowledgeBase, open  # noqa: E402
from .many import Stores, open_many  # noqa: E402

__all__ = ["open", "open_many", "Stores", "KnowledgeBase", "IndexSettings", "IndexSummary", "Answer", "Prompts",
           "TgrError", "StoreError", "ModelError", "ModelMismatch", "__version__"]
