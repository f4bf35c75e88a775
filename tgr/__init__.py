"""tgr: a GraphRAG knowledge store in one SQLite file.

    import tgr
    with tgr.open("corpus.db") as kb:
        kb.index(["docs/"])
        print(kb.ask("Who is Scrooge?").answer)
        print(kb.ask("What are the main themes?", mode="global").answer)
"""
__version__ = "0.1.0"

from .errors import ModelError, ModelMismatch, StoreError, TgrError, TgrWarning  # noqa: E402
from .prompts import Prompts  # noqa: E402
from .query.modes import Answer  # noqa: E402
from .knowledge_base import IndexSettings, IndexSummary, KnowledgeBase, open  # noqa: E402
from .multi_store import Stores, open_many  # noqa: E402


def merge_stores(out, stores, **options):
    """Unite stores built separately with the same settings into out and run the derived
    stages once on the union (`tgr merge OUT.db A.db B.db ...`; see tgr.build.merge_stores.merge_stores)."""
    from .build import merge_stores as shards  # only a merge needs the indexing modules

    return shards.merge_stores(out, stores, **options)


__all__ = ["open", "open_many", "Stores", "merge_stores", "KnowledgeBase", "IndexSettings", "IndexSummary",
           "Answer", "Prompts", "TgrError", "TgrWarning", "StoreError", "ModelError", "ModelMismatch", "__version__"]
