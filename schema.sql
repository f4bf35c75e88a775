-- tgr knowledge store schema.
--
-- This file is the one readable source of the schema. tgr runs it on every open
-- (everything is IF NOT EXISTS); later changes are numbered migrations in tgr/store/migrations.py,
-- tracked by PRAGMA user_version. The vec0 tables (embeddings) are created in code,
-- because they need the embedding dimension, which is only known once the embedder is:
--   vec_entities(id TEXT PRIMARY KEY, embedding float[dim] distance_metric=cosine)
--   vec_chunks(id TEXT PRIMARY KEY, embedding float[dim] distance_metric=cosine)
--   vec_reports(id TEXT PRIMARY KEY, embedding float[dim] distance_metric=cosine)

-- Key/value settings the store was built with: schema and tgr version, chat and
-- embedding model (+ dimension), chunking and clustering settings. A shipped .db
-- answers questions with no other configuration.
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One row per ingested document; id is a hash of the text, so the same content twice
-- is one document.
CREATE TABLE IF NOT EXISTS documents (
    id          TEXT PRIMARY KEY,
    source      TEXT NOT NULL,          -- path as given, or '<stdin>'
    title       TEXT NOT NULL,
    text        TEXT NOT NULL,
    chars       INTEGER NOT NULL,
    added_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    external_id TEXT,                   -- the document's own id (a JSONL/CSV row's id); NULL for files
    metadata    TEXT NOT NULL DEFAULT '{}'  -- JSON object: url, date, encoding, page offsets, ...
);
CREATE INDEX IF NOT EXISTS documents_by_external_id ON documents(external_id);
-- A passage's document id and metadata without reading the document's text (stored before
-- them in the row: reaching them walks the text's overflow pages, 30 ms a 14 MB document).
CREATE INDEX IF NOT EXISTS documents_extras ON documents(id, external_id, metadata);

-- Local retrieval links an entity to the documents titled with its name.
CREATE INDEX IF NOT EXISTS documents_by_title ON documents(title COLLATE NOCASE);

-- Overlapping windows of a document; the unit of extraction and of provenance.
-- seq is the integer key of the full-text index (never reused: AUTOINCREMENT); id is a
-- content hash. terms: the words the full-text index holds for this chunk (see below).
CREATE TABLE IF NOT EXISTS chunks (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ordinal     INTEGER NOT NULL,       -- position within the document
    text        TEXT NOT NULL,
    char_start  INTEGER NOT NULL,
    char_end    INTEGER NOT NULL,
    tokens      INTEGER NOT NULL,       -- estimate, see tgr/text.py
    embed_hash  TEXT,                   -- hash of the text last embedded into vec_chunks
    terms       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_by_document ON chunks(document_id, ordinal);

-- Full-text index of chunks: external content over chunks.terms, rowid = chunks.seq.
-- Terms are lower-cased words, and Chinese as overlapping character bigrams
-- (花果山 -> '花果 果山'), so plain FTS5 works for both languages without a tokenizer:
--   SELECT c.id, c.text FROM chunks_fts JOIN chunks c ON c.seq = chunks_fts.rowid
--    WHERE chunks_fts MATCH '"花果 果山"' ORDER BY rank;
-- tgr keeps it in step with chunks in one code path (tgr/corpus.py), not with triggers.
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    terms, content='chunks', content_rowid='seq'
);

-- Chunks stored before their full-text terms were computed: `tgr index` stores chunks first
-- and computes the terms while the first model calls are in flight. Such a chunk's terms
-- are '' and chunks_fts has no row for it yet; the run (or the next one, after an
-- interruption, or `tgr check --fix`) fills them in and removes the chunk from here.
CREATE TABLE IF NOT EXISTS chunks_unindexed (
    seq INTEGER PRIMARY KEY REFERENCES chunks(seq) ON DELETE CASCADE
);

-- Output of the extract stage, exactly as parsed from each chunk's model answer.
-- Everything after extraction (merge, embed, cluster, report) is rebuilt from these
-- rows, so a shipped .db can rebuild any later stage without the source files.
CREATE TABLE IF NOT EXISTS extractions (
    chunk_id     TEXT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    extractor    TEXT NOT NULL,         -- model name or 'offline-heuristic'
    entities     INTEGER NOT NULL,
    relations    INTEGER NOT NULL,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE TABLE IF NOT EXISTS extracted_entities (
    chunk_id    TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    name        TEXT NOT NULL,
    type        TEXT NOT NULL,
    description TEXT NOT NULL,
    key         TEXT,                   -- normalised name (the entity it merges into); set by tgr
    PRIMARY KEY (chunk_id, position)
);
CREATE INDEX IF NOT EXISTS extracted_entities_by_key ON extracted_entities(key);
CREATE TABLE IF NOT EXISTS extracted_relations (
    chunk_id    TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    source      TEXT NOT NULL,
    target      TEXT NOT NULL,
    predicate   TEXT NOT NULL,
    description TEXT NOT NULL,
    strength    REAL NOT NULL DEFAULT 1,
    source_key  TEXT,                   -- normalised names of source and target; set by tgr
    target_key  TEXT,
    PRIMARY KEY (chunk_id, position)
);
CREATE INDEX IF NOT EXISTS extracted_relations_by_source ON extracted_relations(source_key);
CREATE INDEX IF NOT EXISTS extracted_relations_by_target ON extracted_relations(target_key);

-- Names (and entity keys) whose extraction rows were added, changed or removed since the last
-- merge, so that a merge reads only the rows of those names. The triggers keep it on every path that
-- changes extraction rows (a new extraction, a deleted document's cascade, an edit by hand);
-- filling in the key columns is no change.
CREATE TABLE IF NOT EXISTS merge_pending (
    name TEXT PRIMARY KEY
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS extracted_entity_added AFTER INSERT ON extracted_entities BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (new.name);
END;
CREATE TRIGGER IF NOT EXISTS extracted_entity_removed AFTER DELETE ON extracted_entities BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (old.name);
END;
CREATE TRIGGER IF NOT EXISTS extracted_entity_changed
    AFTER UPDATE OF name, type, description, chunk_id, position ON extracted_entities BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (old.name), (new.name);
END;
CREATE TRIGGER IF NOT EXISTS extracted_relation_added AFTER INSERT ON extracted_relations BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (new.source), (new.target);
END;
CREATE TRIGGER IF NOT EXISTS extracted_relation_removed AFTER DELETE ON extracted_relations BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (old.source), (old.target);
END;
CREATE TRIGGER IF NOT EXISTS extracted_relation_changed
    AFTER UPDATE OF source, target, predicate, description, chunk_id, position ON extracted_relations BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (old.source), (old.target), (new.source), (new.target);
END;
-- The same for the entity keys rows carry (tgr/resolve.py may give a name another entity's
-- key, "Scrooge" -> "ebenezer scrooge"): the entity a row left or joins is merged again.
CREATE TRIGGER IF NOT EXISTS extracted_entity_key_added AFTER INSERT ON extracted_entities
    WHEN new.key IS NOT NULL BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (new.key);
END;
CREATE TRIGGER IF NOT EXISTS extracted_entity_key_removed AFTER DELETE ON extracted_entities
    WHEN old.key IS NOT NULL BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (old.key);
END;
CREATE TRIGGER IF NOT EXISTS extracted_entity_key_changed
    AFTER UPDATE OF name, type, description, chunk_id, position ON extracted_entities
    WHEN old.key IS NOT NULL AND new.key IS NOT NULL BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (old.key), (new.key);
END;
CREATE TRIGGER IF NOT EXISTS extracted_relation_key_added AFTER INSERT ON extracted_relations
    WHEN new.source_key IS NOT NULL AND new.target_key IS NOT NULL BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (new.source_key), (new.target_key);
END;
CREATE TRIGGER IF NOT EXISTS extracted_relation_key_removed AFTER DELETE ON extracted_relations
    WHEN old.source_key IS NOT NULL AND old.target_key IS NOT NULL BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (old.source_key), (old.target_key);
END;
CREATE TRIGGER IF NOT EXISTS extracted_relation_key_changed
    AFTER UPDATE OF source, target, predicate, description, chunk_id, position ON extracted_relations
    WHEN old.source_key IS NOT NULL AND new.source_key IS NOT NULL BEGIN
    INSERT OR IGNORE INTO merge_pending(name) VALUES (old.source_key), (old.target_key),
        (new.source_key), (new.target_key);
END;


-- Entity resolution's answers per document (tgr/build/resolve.py), so that a run resolves
-- again only the documents whose inputs changed: for each name a document's entity rows give,
-- the key the document's own names give it (key; NULL when only the no-entity rules name it),
-- the single word it makes that full name across documents (joins, resolve.py's
-- _across_documents), whether it is no entity there (a common word, a title alone) and whether
-- the document types it a place or a body (such a name never takes a key across documents).
-- Valid while meta 'resolved_names' holds the rules' version; documents whose extraction rows,
-- chunks or title changed since are listed in resolve_pending (by the triggers below, on every
-- path that changes them), and are resolved again by the next run.
CREATE TABLE IF NOT EXISTS resolved_names (
    document_id TEXT NOT NULL,
    name        TEXT NOT NULL,
    key         TEXT,
    joins       TEXT,
    no_entity   INTEGER NOT NULL,
    place       INTEGER NOT NULL,
    PRIMARY KEY (document_id, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS resolved_names_by_key ON resolved_names(key);
CREATE INDEX IF NOT EXISTS resolved_names_by_joins ON resolved_names(joins) WHERE joins IS NOT NULL;
CREATE TABLE IF NOT EXISTS resolve_pending (
    document_id TEXT PRIMARY KEY
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS resolve_entity_added AFTER INSERT ON extracted_entities BEGIN
    INSERT OR IGNORE INTO resolve_pending(document_id) SELECT document_id FROM chunks WHERE id = new.chunk_id;
END;
CREATE TRIGGER IF NOT EXISTS resolve_entity_removed AFTER DELETE ON extracted_entities BEGIN
    INSERT OR IGNORE INTO resolve_pending(document_id) SELECT document_id FROM chunks WHERE id = old.chunk_id;
END;
CREATE TRIGGER IF NOT EXISTS resolve_entity_changed AFTER UPDATE OF name, type, chunk_id ON extracted_entities BEGIN
    INSERT OR IGNORE INTO resolve_pending(document_id) SELECT document_id FROM chunks
        WHERE id IN (old.chunk_id, new.chunk_id);
END;
CREATE TRIGGER IF NOT EXISTS resolve_relation_added AFTER INSERT ON extracted_relations BEGIN
    INSERT OR IGNORE INTO resolve_pending(document_id) SELECT document_id FROM chunks WHERE id = new.chunk_id;
END;
CREATE TRIGGER IF NOT EXISTS resolve_relation_removed AFTER DELETE ON extracted_relations BEGIN
    INSERT OR IGNORE INTO resolve_pending(document_id) SELECT document_id FROM chunks WHERE id = old.chunk_id;
END;
CREATE TRIGGER IF NOT EXISTS resolve_relation_changed
    AFTER UPDATE OF source, target, strength, chunk_id ON extracted_relations BEGIN
    INSERT OR IGNORE INTO resolve_pending(document_id) SELECT document_id FROM chunks
        WHERE id IN (old.chunk_id, new.chunk_id);
END;
CREATE TRIGGER IF NOT EXISTS resolve_chunk_added AFTER INSERT ON chunks BEGIN
    INSERT OR IGNORE INTO resolve_pending(document_id) VALUES (new.document_id);
END;
CREATE TRIGGER IF NOT EXISTS resolve_chunk_removed AFTER DELETE ON chunks BEGIN
    INSERT OR IGNORE INTO resolve_pending(document_id) VALUES (old.document_id);
END;
CREATE TRIGGER IF NOT EXISTS resolve_chunk_changed AFTER UPDATE OF id, document_id, ordinal, text ON chunks BEGIN
    INSERT OR IGNORE INTO resolve_pending(document_id) VALUES (old.document_id), (new.document_id);
END;
CREATE TRIGGER IF NOT EXISTS resolve_title_changed AFTER UPDATE OF id, title ON documents BEGIN
    INSERT OR IGNORE INTO resolve_pending(document_id) VALUES (old.id), (new.id);
END;

-- The entity graph (merge stage). id is the normalised name; a same-name entity
-- split off by LLM disambiguation gets the suffix '#<n>'.
CREATE TABLE IF NOT EXISTS entities (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,          -- most frequent surface form
    type        TEXT NOT NULL,
    description TEXT NOT NULL,
    degree      INTEGER NOT NULL DEFAULT 0,
    mentions    INTEGER NOT NULL DEFAULT 0,
    embed_hash  TEXT,                   -- hash of the text embedded into vec_entities (NULL: to embed)
    input_hash  TEXT                    -- hash of the extraction rows it was merged from
);
CREATE INDEX IF NOT EXISTS entities_by_name ON entities(name);

-- Every surface form under which an entity was extracted ("Scrooge", "Ebenezer Scrooge",
-- "Mr. Scrooge"), with how many extraction rows used it; key is the normalised alias, by
-- which lookups and question seeding find the entity. Written by the merge (tgr/resolve.py
-- decides which names are one entity).
CREATE TABLE IF NOT EXISTS entity_aliases (
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    alias     TEXT NOT NULL,
    key       TEXT NOT NULL,
    mentions  INTEGER NOT NULL,
    PRIMARY KEY (entity_id, alias)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entity_aliases_by_key ON entity_aliases(key);
-- A vector is redone when the text it was made from changes, whoever changes it (the merge,
-- an edit by hand): the embed stage reads only rows whose embed_hash is NULL.
CREATE TRIGGER IF NOT EXISTS entity_text_changed AFTER UPDATE OF name, description ON entities
    WHEN old.name IS NOT new.name OR old.description IS NOT new.description BEGIN
    UPDATE entities SET embed_hash = NULL WHERE id = new.id;
END;

-- Provenance: which chunks each entity was extracted from.
CREATE TABLE IF NOT EXISTS entity_mentions (
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    chunk_id  TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, chunk_id)
);
CREATE INDEX IF NOT EXISTS entity_mentions_by_chunk ON entity_mentions(chunk_id);

-- One row per connected pair of entities; weight = how many times it was seen.
CREATE TABLE IF NOT EXISTS relationships (
    id          TEXT PRIMARY KEY,
    source_id   TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    target_id   TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    predicate   TEXT NOT NULL,
    description TEXT NOT NULL,
    weight      REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS relationships_by_source ON relationships(source_id);
CREATE INDEX IF NOT EXISTS relationships_by_target ON relationships(target_id);

CREATE TABLE IF NOT EXISTS relationship_mentions (
    relationship_id TEXT NOT NULL REFERENCES relationships(id) ON DELETE CASCADE,
    chunk_id        TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    PRIMARY KEY (relationship_id, chunk_id)
);

-- Hierarchical Leiden communities. Level 0 is the coarsest; a community larger than
-- the max cluster size is split again at level + 1 with parent_id pointing up.
CREATE TABLE IF NOT EXISTS communities (
    id        TEXT PRIMARY KEY,         -- '<level>.<n>'
    level     INTEGER NOT NULL,
    parent_id TEXT REFERENCES communities(id) ON DELETE CASCADE,
    size      INTEGER NOT NULL,
    is_leaf   INTEGER NOT NULL          -- 1 when not split further
);
CREATE INDEX IF NOT EXISTS communities_by_level ON communities(level);

CREATE TABLE IF NOT EXISTS community_members (
    community_id TEXT NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    entity_id    TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    PRIMARY KEY (community_id, entity_id)
);
CREATE INDEX IF NOT EXISTS community_members_by_entity ON community_members(entity_id);

-- How many chunks mention a member of each community (global search weighs a community's
-- topic evidence by it; counting at question time cost 0.3 s at 100 M characters). A row is
-- dropped by these triggers whenever what it counts changes, and the cluster stage writes the
-- missing ones (tgr/build/cluster.py count_community_chunks): a row present is always right,
-- and a community without one is counted at question time.
CREATE TABLE IF NOT EXISTS community_chunks (
    community_id TEXT PRIMARY KEY REFERENCES communities(id) ON DELETE CASCADE,
    chunks       INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS community_chunks_mention_added AFTER INSERT ON entity_mentions BEGIN
    DELETE FROM community_chunks WHERE community_id IN
        (SELECT community_id FROM community_members WHERE entity_id = new.entity_id);
END;
CREATE TRIGGER IF NOT EXISTS community_chunks_mention_removed AFTER DELETE ON entity_mentions BEGIN
    DELETE FROM community_chunks WHERE community_id IN
        (SELECT community_id FROM community_members WHERE entity_id = old.entity_id);
END;
CREATE TRIGGER IF NOT EXISTS community_chunks_mention_changed AFTER UPDATE ON entity_mentions BEGIN
    DELETE FROM community_chunks WHERE community_id IN
        (SELECT community_id FROM community_members WHERE entity_id IN (old.entity_id, new.entity_id));
END;
CREATE TRIGGER IF NOT EXISTS community_chunks_member_added AFTER INSERT ON community_members BEGIN
    DELETE FROM community_chunks WHERE community_id = new.community_id;
END;
CREATE TRIGGER IF NOT EXISTS community_chunks_member_removed AFTER DELETE ON community_members BEGIN
    DELETE FROM community_chunks WHERE community_id = old.community_id;
END;
CREATE TRIGGER IF NOT EXISTS community_chunks_member_changed AFTER UPDATE ON community_members BEGIN
    DELETE FROM community_chunks WHERE community_id IN (old.community_id, new.community_id);
END;

-- Community reports (GraphRAG format), written bottom-up.
CREATE TABLE IF NOT EXISTS reports (
    community_id       TEXT PRIMARY KEY REFERENCES communities(id) ON DELETE CASCADE,
    title              TEXT NOT NULL,
    summary            TEXT NOT NULL,
    rating             REAL NOT NULL,
    rating_explanation TEXT NOT NULL,
    findings           TEXT NOT NULL,   -- JSON list of {"summary", "explanation"}
    full_text          TEXT NOT NULL,   -- markdown rendering used as query context
    generator          TEXT NOT NULL,   -- model name, 'offline-extractive' or 'fallback'
    embed_hash         TEXT,
    context_hash       TEXT             -- hash of writer + the context it was written from
);
CREATE TRIGGER IF NOT EXISTS report_text_changed AFTER UPDATE OF title, summary ON reports
    WHEN old.title IS NOT new.title OR old.summary IS NOT new.summary BEGIN
    UPDATE reports SET embed_hash = NULL WHERE community_id = new.community_id;
END;

-- Every chat answer tgr has paid for, keyed by a hash of model + prompt + parameters.
-- Re-running an index is free; it doubles as an audit log and a test fixture source.
CREATE TABLE IF NOT EXISTS llm_cache (
    key               TEXT PRIMARY KEY,
    model             TEXT NOT NULL,
    prompt            TEXT NOT NULL,
    params            TEXT NOT NULL,    -- JSON
    response          TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

-- One row per index / rebuild run.
CREATE TABLE IF NOT EXISTS runs (
    id          INTEGER PRIMARY KEY,
    command     TEXT NOT NULL,
    settings    TEXT NOT NULL,          -- JSON
    status      TEXT NOT NULL,          -- running | done | interrupted | failed | waiting (for batch jobs)
    counts      TEXT,                   -- JSON summary at the end
    started_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    wall_s      REAL
);

-- Cost ledger: every model call (and every cache hit) with its stage and usage.
CREATE TABLE IF NOT EXISTS model_calls (
    id                INTEGER PRIMARY KEY,
    run_id            INTEGER REFERENCES runs(id) ON DELETE SET NULL,
    stage             TEXT NOT NULL,
    kind              TEXT NOT NULL,    -- chat | embed | local (computed here: no call, no tokens)
    model             TEXT NOT NULL,
    cache_hit         INTEGER NOT NULL,
    attempts          INTEGER NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    usage_source      TEXT NOT NULL,    -- api | estimate | local
    latency_ms        REAL NOT NULL,
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    price             REAL NOT NULL DEFAULT 1  -- of a synchronous call: 1; a Batch API answer: 0.5
);
CREATE INDEX IF NOT EXISTS model_calls_by_run ON model_calls(run_id, stage);

-- Batch API jobs of `tgr index --batch`: the provider's ids and the last status seen, so
-- that a later run collects them (never a key or an endpoint). outcome: NULL while the job
-- is open, 'collected' once its answers are in llm_cache, 'abandoned' when no run asks for
-- its prompts any more.
CREATE TABLE IF NOT EXISTS batch_jobs (
    id            INTEGER PRIMARY KEY,
    model         TEXT NOT NULL,        -- the chat model, as in llm_cache
    stage         TEXT NOT NULL,        -- extract | summarize | report | ...
    batch_id      TEXT NOT NULL,        -- the provider's id of the batch
    input_file_id TEXT NOT NULL,
    status        TEXT NOT NULL,        -- the provider's: validating, in_progress, completed, expired, ...
    outcome       TEXT,
    requests      INTEGER NOT NULL,
    completed     INTEGER NOT NULL DEFAULT 0,
    failed        INTEGER NOT NULL DEFAULT 0,
    run_id        INTEGER REFERENCES runs(id) ON DELETE SET NULL,
    submitted_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    updated_at    TEXT
);
-- The requests of each job: key = the llm_cache key of the prompt (also its custom_id).
-- state: sent | answered | rejected (the answer failed its check) | failed | expired | unclaimed
CREATE TABLE IF NOT EXISTS batch_items (
    job_id  INTEGER NOT NULL REFERENCES batch_jobs(id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    state   TEXT NOT NULL,
    error   TEXT,
    PRIMARY KEY (job_id, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS batch_items_by_key ON batch_items(key);

-- Views for people who open the file with sqlite3.
CREATE VIEW IF NOT EXISTS entity_overview AS
    SELECT e.id, e.name, e.type, e.degree, e.mentions,
           (SELECT group_concat(cm.community_id, ' ')
              FROM community_members cm WHERE cm.entity_id = e.id) AS communities,
           e.description
      FROM entities e
     ORDER BY e.degree DESC, e.id;

CREATE VIEW IF NOT EXISTS relationship_overview AS
    SELECT r.id, s.name AS source, r.predicate, t.name AS target, r.weight, r.description
      FROM relationships r
      JOIN entities s ON s.id = r.source_id
      JOIN entities t ON t.id = r.target_id
     ORDER BY r.weight DESC, r.id;

CREATE VIEW IF NOT EXISTS report_overview AS
    SELECT c.level, c.id AS community_id, c.parent_id, c.size, r.rating, r.title, r.summary
      FROM communities c
      JOIN reports r ON r.community_id = c.id
     ORDER BY c.level, r.rating DESC, c.id;

CREATE VIEW IF NOT EXISTS cost_by_stage AS
    SELECT run_id, stage, kind, model,
           sum(1 - cache_hit) AS calls, sum(cache_hit) AS cache_hits,
           sum(CASE WHEN cache_hit = 0 THEN prompt_tokens ELSE 0 END) AS prompt_tokens,
           sum(CASE WHEN cache_hit = 0 THEN completion_tokens ELSE 0 END) AS completion_tokens,
           round(sum(latency_ms) / 1000.0, 2) AS model_seconds
      FROM model_calls
     GROUP BY run_id, stage, kind, model;
