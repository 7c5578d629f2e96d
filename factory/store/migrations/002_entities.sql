-- The entity layer: mentions found by NER, entities keyed across surface forms, and
-- co-occurrence statistics computed in SQL (no in-memory graph, so 1M chunks fit).

CREATE TABLE mentions (
    chunk_id VARCHAR,
    doc_id VARCHAR,
    start INTEGER,           -- character offsets relative to the chunk text
    "end" INTEGER,
    text VARCHAR,
    label VARCHAR,           -- person|organization|location|date|number|work|event|other
    entity_key VARCHAR,
    content_hash VARCHAR,    -- the chunk version the mention was found in
    run_id VARCHAR
);

-- aliases links found in the corpus itself: acronyms, "X, also known as Y"
CREATE TABLE entity_aliases (
    entity_key VARCHAR,      -- canonical key
    alias_key VARCHAR,       -- key that is folded into entity_key
    alias VARCHAR,
    evidence_chunk_id VARCHAR,
    rule VARCHAR,
    run_id VARCHAR
);

-- one row per entity (recomputed by the statistics step; newest generation wins)
CREATE TABLE entities (
    entity_key VARCHAR,
    label VARCHAR,
    name VARCHAR,
    aliases VARCHAR[],
    mention_count BIGINT,
    chunk_freq BIGINT,
    doc_freq BIGINT,
    generation VARCHAR
);

-- entity pairs that share a chunk: count and normalised PMI over chunks
CREATE TABLE entity_pairs (
    key_a VARCHAR,           -- key_a < key_b
    key_b VARCHAR,
    chunk_count BIGINT,
    doc_count BIGINT,
    npmi DOUBLE,
    generation VARCHAR
);

CREATE TABLE stats_generations (
    generation VARCHAR,
    n_chunks BIGINT,
    n_entities BIGINT,
    n_pairs BIGINT,
    computed_at TIMESTAMP,
    run_id VARCHAR
);

-- key: mentions(chunk_id, start, "end", content_hash) first
-- key: entity_aliases(alias_key, entity_key) first
-- key: entities(entity_key, generation) first
-- key: entity_pairs(key_a, key_b, generation) first
-- key: stats_generations(generation) first
