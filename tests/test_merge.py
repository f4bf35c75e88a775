"""tgr/build/merge_graph.py through a real store: raw extraction rows in, entity graph out."""
from __future__ import annotations

import pytest

import tgr
from conftest import EN_CORPUS, ScriptedChat, ScriptedEmbedder
from fakellm import FakeLLM
from tgr.build.extract import save_extraction
from tgr.build.merge_graph import merge_graph, needs_merge
from tgr.parsing import RawEntity as E
from tgr.parsing import RawRelation as R
from tgr.prompts import Prompts
from tgr.text import estimate_tokens


class Disambiguator(FakeLLM):
    """FakeLLM with a fixed answer to same-name disambiguation prompts."""

    def __init__(self, answer: str):
        self.fixed = answer

    def answer(self, prompt: str) -> str:
        if "share the name" in prompt:
            return self.fixed
        return super().answer(prompt)


def open_store(path, chat="scripted"):
    chat = ScriptedChat() if chat == "scripted" else chat
    return tgr.open(path, chat=chat, embedder=ScriptedEmbedder())


def load(kb, chunks, document="doc"):
    """chunks: [(chunk_id, [RawEntity], [RawRelation])] stored as one document's chunks."""
    conn = kb.conn
    conn.execute("INSERT INTO documents(id, source, title, text, chars) VALUES (?, ?, ?, ?, ?)",
                 (document, f"{document}.txt", document, "text", 4))
    for ordinal, (chunk_id, entities, relations) in enumerate(chunks):
        conn.execute("INSERT INTO chunks(id, document_id, ordinal, text, char_start, char_end, tokens) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?)", (chunk_id, document, ordinal, f"text of {chunk_id}",
                                                      0, 10, 3))
        save_extraction(conn, chunk_id, "test", entities, relations)


def merge(kb, **options):
    return merge_graph(kb.conn, kb.gateway(), Prompts(), **options)


def entities(kb):
    return {r[0]: dict(name=r[1], type=r[2], description=r[3], degree=r[4], mentions=r[5])
            for r in kb.conn.execute("SELECT id, name, type, description, degree, mentions FROM entities")}


def entity_chunks(kb, entity_id):
    return {r[0] for r in kb.conn.execute("SELECT chunk_id FROM entity_mentions WHERE entity_id = ?",
                                          (entity_id,))}


def relationships(kb):
    rows = kb.conn.execute("SELECT id, source_id, target_id, predicate, description, weight FROM relationships")
    result = {}
    for rid, source, target, predicate, description, weight in rows:
        chunks = {r[0] for r in kb.conn.execute(
            "SELECT chunk_id FROM relationship_mentions WHERE relationship_id = ?", (rid,))}
        result[frozenset((source, target))] = dict(source=source, target=target, predicate=predicate,
                                                   description=description, weight=weight, chunks=chunks)
    return result


def dump(kb):
    q = lambda sql: kb.conn.execute(sql).fetchall()
    return (q("SELECT * FROM entities ORDER BY id"), q("SELECT * FROM entity_mentions ORDER BY 1, 2"),
            q("SELECT * FROM relationships ORDER BY id"), q("SELECT * FROM relationship_mentions ORDER BY 1, 2"))


def summarize_prompts(chat):
    return [p for p in chat.prompts if "Write one description of the entity" in p]


def disambiguate_prompts(chat):
    return [p for p in chat.prompts if "share the name" in p]


CAROL = [
    ("c1", [E("Scrooge", "person", "A covetous old miser."), E("Marley", "person", "Scrooge's dead partner.")],
     [R("Scrooge", "Marley", "partner of", "Scrooge and Marley were partners.")]),
    ("c2", [E("  SCROOGE ", "person", "He keeps his office cold."), E("Bob Cratchit", "person", "The clerk.")],
     [R("Bob Cratchit", "Scrooge", "works for", "Bob is Scrooge's clerk."),
      R("Marley", "scrooge", "haunts", "Marley's ghost visits Scrooge.")]),
    ("c3", [E("Fred", "person", "Scrooge's nephew.")],
     [R("Fred", "Scrooge", "nephew of", "Fred invites his uncle."),
      R("scrooge", "MARLEY", "mourned", "Scrooge was the sole mourner."),
      R("Fred", "Christmas", "celebrates", "Fred loves Christmas."),
      R("Scrooge", "Scrooge", "talks to", "Scrooge talks to himself."),
      R("scrooge", "Scrooge ", "answers", "A self-relation by case and space.")]),
]


# -- merging names, relations, weights, degrees ----------------------------------------

def test_same_name_different_case_and_space_is_one_entity(db_path):
    with open_store(db_path) as kb:
        load(kb, CAROL)
        merge(kb)
        found = entities(kb)
        assert "scrooge" in found and "  scrooge " not in found
        assert [k for k in found if k.strip().casefold() == "scrooge"] == ["scrooge"]
        scrooge = found["scrooge"]
        assert scrooge["name"].strip() in ("Scrooge", "SCROOGE")
        assert "A covetous old miser." in scrooge["description"]
        assert "He keeps his office cold." in scrooge["description"]
        assert scrooge["type"] == "person"
        assert entity_chunks(kb, "scrooge") == {"c1", "c2", "c3"}
        assert scrooge["mentions"] == 3
        assert entity_chunks(kb, "marley") == {"c1", "c2", "c3"}


def test_entity_display_name_has_tidy_whitespace(db_path):
    # a surface form with stray spaces must not become the display name as-is (names
    # created from relations are already tidied the same way in merge._resolve)
    with open_store(db_path) as kb:
        load(kb, [("c1", [E("Scrooge", "person", "A miser.")], []),
                  ("c2", [E("  SCROOGE ", "person", "Cold.")], []),
                  ("c3", [E("Jacob  Marley", "person", "Dead.")], [])])
        merge(kb)
        names = {k: v["name"] for k, v in entities(kb).items()}
        assert set(names) == {"scrooge", "jacob marley"}
        for name in names.values():
            assert name == " ".join(name.split()), repr(name)


def test_relation_naming_an_unextracted_entity_creates_it(db_path):
    with open_store(db_path) as kb:
        load(kb, CAROL)
        merge(kb)
        christmas = entities(kb)["christmas"]
        assert christmas["name"] == "Christmas"
        assert christmas["type"] == "concept"
        assert christmas["description"] == "Fred loves Christmas."
        assert christmas["degree"] == 1
        assert entity_chunks(kb, "christmas") == {"c3"}
        assert relationships(kb)[frozenset(("fred", "christmas"))]["weight"] == 1


def test_weight_counts_sightings_in_either_direction(db_path):
    with open_store(db_path) as kb:
        load(kb, CAROL)
        merge(kb)
        rels = relationships(kb)
        pair = rels[frozenset(("scrooge", "marley"))]
        assert pair["weight"] == 3  # c1 forwards, c2 backwards, c3 with other case
        assert pair["chunks"] == {"c1", "c2", "c3"}
        assert (pair["source"], pair["target"]) == ("scrooge", "marley")  # first sighting's direction
        assert "Scrooge and Marley were partners." in pair["description"]
        assert "Marley's ghost visits Scrooge." in pair["description"]
        assert pair["predicate"] in ("partner of", "haunts", "mourned")
        assert kb.conn.execute("SELECT count(*) FROM relationships").fetchone()[0] == len(rels) == 4


def test_repeated_relation_in_one_chunk_counts_twice_but_one_mention(db_path):
    with open_store(db_path) as kb:
        load(kb, [("c1", [E("A", "person", "a"), E("B", "person", "b")],
                   [R("A", "B", "knows", "A knows B."), R("B", "A", "knows", "B knows A."),
                    R("A", "B", "likes", "A likes B.")])])
        merge(kb)
        (edge,) = relationships(kb).values()
        assert edge["weight"] == 3
        assert edge["chunks"] == {"c1"}
        assert edge["predicate"] == "knows"  # the most frequent predicate


def test_a_relationships_many_descriptions_are_each_kept_once_in_first_seen_order(db_path):
    """Past merge_graph._SCANNED descriptions a relationship's are looked up in a set instead
    of its list: the same descriptions, once each, in the order first said, either way."""
    said = [f"A meets B, time {n % 13}." for n in range(40)] + ["A  meets B, time 1.", "A meets B, time 1."]
    with open_store(db_path) as kb:
        load(kb, [(f"c{n}", [E("A", "person", "a"), E("B", "person", "b")], [R("A", "B", "meets", text)])
                  for n, text in enumerate(said)])
        merge(kb, summary_tokens=2000)
        (edge,) = relationships(kb).values()
        assert edge["weight"] == len(said)
        kept: list[str] = []  # the raw text is tested against the tidied ones (so "A  meets B" twice)
        for text in said:
            if text not in kept:
                kept.append(" ".join(text.split()))
        assert kept.count("A meets B, time 1.") == 2 and len(kept) == 14
        assert edge["description"] == " ".join(kept)


def test_self_relations_are_dropped(db_path):
    with open_store(db_path) as kb:
        load(kb, CAROL)
        merge(kb)
        rels = relationships(kb)
        assert all(len(pair) == 2 for pair in rels)
        assert kb.conn.execute("SELECT count(*) FROM relationships WHERE source_id = target_id").fetchone()[0] == 0


def test_degree(db_path):
    with open_store(db_path) as kb:
        load(kb, CAROL + [("c4", [E("Belle", "person", "Someone Scrooge once loved.")], [])])
        merge(kb)
        degree = {k: v["degree"] for k, v in entities(kb).items()}
        assert degree == {"scrooge": 3, "marley": 1, "bob cratchit": 1, "fred": 2, "christmas": 1, "belle": 0}
        for entity_id, d in degree.items():
            count = kb.conn.execute("SELECT count(*) FROM relationships WHERE source_id = ? OR target_id = ?",
                                    (entity_id, entity_id)).fetchone()[0]
            assert count == d


def test_merge_is_deterministic(tmp_path):
    dumps = []
    for name in ("one.db", "two.db"):
        with open_store(tmp_path / name) as kb:
            load(kb, CAROL)
            merge(kb)
            first = dump(kb)
            merge(kb)  # and merging again gives the same tables
            assert dump(kb) == first
            dumps.append(first)
    assert dumps[0] == dumps[1]
    assert dumps[0][0], "entities were written"


def test_merge_follows_the_extraction_rows(db_path):
    with open_store(db_path) as kb:
        load(kb, CAROL)
        merge(kb)
        gateway, prompts = kb.gateway(), Prompts()
        assert not needs_merge(kb.conn, gateway, prompts, 300, False)
        assert needs_merge(kb.conn, gateway, prompts, 40, False)  # another description budget: merge again
        assert needs_merge(kb.conn, gateway, prompts, 300, True)  # disambiguation switched on: merge again
        other = Prompts(summarize_descriptions=prompts.summarize_descriptions + " ")
        assert needs_merge(kb.conn, gateway, other, 300, False)  # another summary prompt: merge again
        assert "christmas" in entities(kb)
        kb.conn.execute("DELETE FROM chunks WHERE id = 'c3'")  # cascades to its extraction rows
        assert needs_merge(kb.conn, gateway, prompts, 300, False)
        merge(kb)
        found = entities(kb)
        assert "christmas" not in found and "fred" not in found
        assert entity_chunks(kb, "scrooge") == {"c1", "c2"}
        assert relationships(kb)[frozenset(("scrooge", "marley"))]["weight"] == 2


# -- long descriptions -----------------------------------------------------------------

def long_descriptions(n=3, words=120):
    return [("c%d" % i, [E("Marley", "person", " ".join([f"fact{i}x{j}" for j in range(words)]) + ".")], [])
            for i in range(n)]


def test_long_combined_description_is_summarised_once(db_path):
    chat = ScriptedChat()
    with open_store(db_path, chat) as kb:
        load(kb, long_descriptions() + [("c9", [E("Fred", "person", "Short.")], [])])
        merge(kb, summary_tokens=300)
        assert kb.gateway().usage["summarize"].calls == 1
        (prompt,) = summarize_prompts(chat)
        assert '"Marley"' in prompt
        found = entities(kb)
        assert estimate_tokens(found["marley"]["description"]) <= 300
        assert found["marley"]["description"].startswith("fact0x0")
        assert found["fred"]["description"] == "Short."
        # merging again: Marley's inputs did not change, so nothing is asked, not even the cache
        calls = chat.calls
        merge(kb, summary_tokens=300)
        assert chat.calls == calls
        assert kb.gateway().usage["summarize"].calls == 1
        assert kb.gateway().usage["summarize"].cache_hits == 0


def test_single_long_description_is_trimmed_without_a_call(db_path):
    chat = ScriptedChat()
    with open_store(db_path, chat) as kb:
        load(kb, long_descriptions(n=1, words=600))
        merge(kb, summary_tokens=100)
        assert summarize_prompts(chat) == []
        assert 0 < estimate_tokens(entities(kb)["marley"]["description"]) <= 101


def test_long_description_is_trimmed_without_a_chat_model(db_path):
    with tgr.open(db_path, chat="offline", embedder=ScriptedEmbedder()) as kb:
        load(kb, long_descriptions())
        assert kb.gateway().chat_model is None
        merge(kb, summary_tokens=120)
        description = entities(kb)["marley"]["description"]
        assert 0 < estimate_tokens(description) <= 121
        assert description.startswith("fact0x0")
        assert "summarize" not in kb.gateway().usage or kb.gateway().usage["summarize"].calls == 0


def test_relationship_descriptions_are_trimmed(db_path):
    with open_store(db_path) as kb:
        long = " ".join(["word"] * 800)
        load(kb, [("c1", [E("A", "person", "a"), E("B", "person", "b")], [R("A", "B", "knows", long)])])
        merge(kb, summary_tokens=100)
        (edge,) = relationships(kb).values()
        assert estimate_tokens(edge["description"]) <= 101


# -- disambiguation --------------------------------------------------------------------

APPLES = [
    ("c1", [E("Apple", "organization", "A technology company in Cupertino."), E("Steve Jobs", "person", "Founder.")],
     [R("Apple", "Steve Jobs", "founded by", "Jobs founded Apple.")]),
    ("c2", [E("apple", "food", "A red fruit that grows on trees."), E("Orchard", "location", "Where fruit grows.")],
     [R("Orchard", "apple", "grows", "Apples grow in orchards.")]),
]


def test_disambiguation_none_splits_same_name_entities(db_path):
    chat = ScriptedChat(llm=Disambiguator("<transformation>None</transformation>"))
    with open_store(db_path, chat) as kb:
        load(kb, APPLES)
        merge(kb, disambiguate=True)
        found = entities(kb)
        assert {"apple", "apple#2"} <= set(found)
        assert found["apple"]["type"] == "organization" and found["apple#2"]["type"] == "food"
        assert found["apple"]["description"] == "A technology company in Cupertino."
        assert found["apple#2"]["description"] == "A red fruit that grows on trees."
        assert entity_chunks(kb, "apple") == {"c1"} and entity_chunks(kb, "apple#2") == {"c2"}
        rels = relationships(kb)
        assert frozenset(("apple", "steve jobs")) in rels
        assert frozenset(("orchard", "apple#2")) in rels
        assert frozenset(("orchard", "apple")) not in rels
        (prompt,) = disambiguate_prompts(chat)
        assert "m1:" in prompt and "m2:" in prompt
        assert kb.gateway().usage["disambiguate"].calls == 1


def test_disambiguation_mapping_merges(db_path):
    chat = ScriptedChat(llm=Disambiguator('<transformation>{"m2": "m1"}</transformation>'))
    with open_store(db_path, chat) as kb:
        load(kb, APPLES)
        merge(kb, disambiguate=True)
        found = entities(kb)
        assert "apple" in found and "apple#2" not in found
        assert entity_chunks(kb, "apple") == {"c1", "c2"}
        assert "technology company" in found["apple"]["description"]
        assert "red fruit" in found["apple"]["description"]
        assert frozenset(("orchard", "apple")) in relationships(kb)
        assert len(disambiguate_prompts(chat)) == 1


@pytest.mark.parametrize("answer", ["Sorry, I cannot help with that.", "<transformation>{broken",
                                    '<transformation>{"m7": "m1", "x": "y"}</transformation>', ""])
def test_disambiguation_garbage_means_no_merges(db_path, answer):
    chat = ScriptedChat(llm=Disambiguator(answer))
    with open_store(db_path, chat) as kb:
        load(kb, APPLES)
        merge(kb, disambiguate=True)
        found = entities(kb)
        assert {"apple", "apple#2"} <= set(found)
        assert entity_chunks(kb, "apple") == {"c1"} and entity_chunks(kb, "apple#2") == {"c2"}


def test_disambiguation_is_cached(db_path):
    chat = ScriptedChat(llm=Disambiguator("<transformation>None</transformation>"))
    with open_store(db_path, chat) as kb:
        load(kb, APPLES)
        merge(kb, disambiguate=True)
        first, calls = dump(kb), chat.calls
        assert calls == 1
        merge(kb, disambiguate=True)
        assert chat.calls == calls
        assert kb.gateway().usage["disambiguate"].cache_hits == 1
        assert dump(kb) == first


def test_no_disambiguation_call_when_not_needed(db_path):
    chat = ScriptedChat(llm=Disambiguator("<transformation>None</transformation>"))
    with open_store(db_path, chat) as kb:
        same = [("c1", [E("Apple", "organization", "A company.")], []),
                ("c2", [E("apple", "organization", "A  company.")], []),   # same description
                ("c3", [E("Pear", "food", "A fruit.")], [])]              # one chunk only
        load(kb, same)
        merge(kb, disambiguate=True)
        assert chat.calls == 0
        assert set(entities(kb)) == {"apple", "pear"}


def test_disambiguation_off_by_default(db_path):
    chat = ScriptedChat(llm=Disambiguator("<transformation>None</transformation>"))
    with open_store(db_path, chat) as kb:
        load(kb, APPLES)
        merge(kb)
        assert disambiguate_prompts(chat) == []
        assert "apple#2" not in entities(kb)
        assert entity_chunks(kb, "apple") == {"c1", "c2"}


def test_disambiguation_without_a_chat_model_is_skipped(db_path):
    with tgr.open(db_path, chat="offline", embedder=ScriptedEmbedder()) as kb:
        load(kb, APPLES)
        merge(kb, disambiguate=True)
        assert "apple#2" not in entities(kb)


def test_mentions_beyond_the_prompt_cap_join_the_first_entity(db_path):
    chat = ScriptedChat(llm=Disambiguator("<transformation>None</transformation>"))
    with open_store(db_path, chat) as kb:
        load(kb, [(f"c{i:02d}", [E("Mercury", "concept", f"Meaning number {i}.")], []) for i in range(14)])
        merge(kb, disambiguate=True)
        found = entities(kb)
        assert set(found) == {"mercury"} | {f"mercury#{i}" for i in range(2, 13)}
        assert entity_chunks(kb, "mercury") == {"c00", "c12", "c13"}
        assert entity_chunks(kb, "mercury#12") == {"c11"}


def test_only_entities_whose_inputs_changed_are_merged_again(db_path):
    with open_store(db_path) as kb:
        load(kb, CAROL)
        first = merge(kb)
        before = dump(kb)
        assert first["recomputed"] == len(entities(kb))
        again = merge(kb)
        assert again["recomputed"] == 0 and again["changed_entities"] == set() and dump(kb) == before
        # a new chunk naming Fred and a newcomer: only those two (and nothing else) are redone
        load(kb, [("c9", [E("Fred", "person", "Scrooge's nephew."), E("Topper", "person", "A guest.")],
                   [R("Fred", "Topper", "invites", "Fred invites Topper.")])], document="doc2")
        third = merge(kb)
        assert third["recomputed"] == 2 and third["changed_entities"] == {"fred", "topper"}
        fresh_path = db_path.parent / "fresh.db"
    with open_store(fresh_path) as fresh:  # the same tables as merging everything at once
        load(fresh, CAROL)
        load(fresh, [("c9", [E("Fred", "person", "Scrooge's nephew."), E("Topper", "person", "A guest.")],
                      [R("Fred", "Topper", "invites", "Fred invites Topper.")])], document="doc2")
        merge(fresh)
        with open_store(db_path) as kb:
            assert dump(kb) == dump(fresh)


def test_a_first_merge_reads_the_relationship_rows_twice_and_a_later_one_keeps_stored_ends(db_path):
    """When every entity is recomputed no relationship end is left as stored, so the merge
    reads the extraction's relationship rows twice (their hashes, the edges), not a third time
    for stand-ins; a merge of some entities still gives the others' edges as stored."""
    with open_store(db_path) as kb:
        load(kb, CAROL)
        reads = []
        kb.conn.set_trace_callback(lambda sql: reads.append(sql) if "FROM extracted_relations r JOIN" in sql
                                   and "r.predicate" in sql else None)
        first = merge(kb)
        kb.conn.set_trace_callback(None)
        assert first["recomputed"] == len(entities(kb)) and len(reads) == 2
        # Fred's new chunk: the edge to Scrooge (not recomputed) keeps its stored end
        load(kb, [("c9", [E("Fred", "person", "Scrooge's nephew.")],
                   [R("Fred", "Scrooge", "visits", "Fred visits Scrooge.")])], document="doc2")
        merge(kb)
        fred_scrooge = relationships(kb)[frozenset(("fred", "scrooge"))]
        assert fred_scrooge["weight"] == 2 and fred_scrooge["chunks"] == {"c3", "c9"}
        assert entities(kb)["scrooge"]["degree"] == 3  # Marley, Bob Cratchit, Fred


def test_rebuild_graph_recomputes_every_entity(db_path):
    with tgr.open(db_path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], chunk_size=300, chunk_overlap=40)
        before = dump(kb)
        kb.conn.execute("UPDATE entities SET description = 'edited by hand' WHERE id = 'scrooge'")
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")])  # inputs unchanged: nothing merged
        assert entities(kb)["scrooge"]["description"] == "edited by hand"
        kb.rebuild("graph")  # from the extraction rows, every entity
        assert dump(kb) == before


def test_a_summary_must_talk_about_the_entitys_own_material():
    from tgr.build.role_providers import summary_check

    english = summary_check("Ebenezer Scrooge", ["A miser who keeps a counting-house in London.",
                                                  "Partner of Jacob Marley."])
    assert english("Scrooge, a London miser and Marley's partner.")
    assert not english("The weather was cold and grey all day.")
    assert not english("Sorry, I cannot help with that.")
    chinese = summary_check("孙悟空", ["花果山的石猴，拜须菩提祖师学艺。", "大闹天宫，被压在五行山下。"])
    assert chinese("孙悟空是花果山的石猴，曾大闹天宫。")
    assert not chinese("今天天气很好，我们去公园散步。")


def test_summaries_found_while_the_first_are_asked_are_each_asked_once(db_path, tmp_path):
    """summarise() hands the jobs on a few at a time while it finds the rest: with more
    entities over budget than it lets wait, every one is summarised once, and the stored
    graph is the one a plan whose jobs were all found first stores."""
    from tgr.build.merge_graph import SUMMARY_AHEAD, plan_merge, store_merge, summarise

    names = [f"Person {i:03d}" for i in range(SUMMARY_AHEAD * 2 + 5)]
    chunks = [(f"c{n}{i}", [E(name, "person", f"{name} did thing number {n} in chapter {i} of the story.")
                            for name in names], []) for n in range(2) for i in range(3)]
    dumps = []
    for eager, path in ((False, db_path), (True, tmp_path / "eager.db")):
        chat = ScriptedChat()
        with open_store(path, chat) as kb:
            load(kb, chunks)
            gateway = kb.gateway()
            plan = plan_merge(kb.conn, gateway, Prompts(), summary_tokens=20)
            if eager:
                assert len(plan.jobs) == len(names)  # every job found before the wave
            store_merge(kb.conn, plan, summarise(gateway, plan))
            prompts = summarize_prompts(chat)
            assert len(prompts) == len(set(prompts)) == len(names)
            dumps.append(dump(kb))
    assert dumps[0] == dumps[1]


def test_a_planned_relationship_lists_each_chunk_once_in_text_order(db_path):
    """The merge keeps a relationship's chunks as a list (a set each cost ~130 more bytes at
    hundreds of thousands of relationships): each chunk once, in the order the rows come."""
    from tgr.build.merge_graph import plan_merge

    with open_store(db_path) as kb:
        load(kb, [("c2", [E("A", "person", "a"), E("B", "person", "b")],
                   [R("A", "B", "knows", "A knows B."), R("B", "A", "likes", "B likes A.")]),
                  ("c1", [E("A", "person", "a"), E("B", "person", "b")], [R("A", "B", "meets", "A meets B.")]),
                  ("c3", [E("A", "person", "a"), E("B", "person", "b")], [R("A", "B", "knows", "A knows B.")])])
        plan = plan_merge(kb.conn, kb.gateway(), Prompts(), summary_tokens=300)
        (chunks,) = plan.edges.values()
        assert chunks == ["c2", "c1", "c3"]  # the chunks' ordinals: c2 first, as stored
        assert [row[4] for row in plan.edge_rows.values()] == [4.0]


def test_mention_pairs_written_and_removed_are_the_set_differences():
    """store_merge's pairs, made per owner as they are written, are exactly the sorted set
    differences it wrote before (new minus stored, stored minus new)."""
    import random

    from tgr.build.merge_graph import _gone_pairs, _new_pairs

    rng = random.Random(7)
    for _ in range(50):
        owners = [f"e{i}" for i in range(rng.randint(0, 12))]
        new = {o: sorted(rng.sample([f"c{j}" for j in range(9)], rng.randint(0, 4))) for o in owners}
        stored = {(rng.choice(owners + ["gone"]), f"c{rng.randint(0, 8)}") for _ in range(rng.randint(0, 20))}
        pairs = {(o, c) for o, chunks in new.items() for c in chunks}
        assert list(_new_pairs(new, stored)) == sorted(pairs - stored)
        assert _gone_pairs(stored, new) == sorted(stored - pairs)
