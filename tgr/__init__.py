"""tgr: a GraphRAG knowledge store in one SQLite file.

    import tgr
    with tgr.open("corpus.db") as kb:
        kb.index(["docs/"])
        print(kb.ask("Who is Scrooge?").answer)
        print(kb.ask("What are the main themes?", mode="global").answer)
"""
from .version import __version__
from .errors import ModelError, ModelMismatch, StoreError, TgrError, TgrWarning
from .prompts import Prompts
from .query.modes import Answer
from .knowledge_base import IndexSettings, IndexSummary, KnowledgeBase, open
from .multi_store import Stores, open_many


def merge_stores(out, stores, **options):
    """Unite stores built separately with the same settings into out and run the derived
    stages once on the union (`tgr merge OUT.db A.db B.db ...`; see tgr.build.merge_stores.merge_stores)."""
    from .build import merge_stores as shards  # only a merge needs the indexing modules
    from .session import StoreAdmin

    return shards.merge_stores(out, stores, open_store=StoreAdmin, **options)


async def close_async_client() -> None:
    """Close the connection pool the running event loop's model calls share (made by the first
    aask/astream/aretrieve/aindex of that loop; a later call makes a new one). Await it when a
    service shuts down, after closing its stores."""
    from .models.loop_transport import close_async_client as close

    await close()


__all__ = ["open", "open_many", "Stores", "merge_stores", "close_async_client", "KnowledgeBase", "IndexSettings", "IndexSummary",
           "Answer", "Prompts", "TgrError", "TgrWarning", "StoreError", "ModelError", "ModelMismatch", "__version__"]
