-- The entity layer: mentions found by NER, entities keyed across surface forms, and
-- co-occurrence statistics computed in SQL (no in-memory graph, so 1M chunks fit).
-- Statistics are written as whole generations; the current_* views read the newest.

CREATE TABLE mentions (
    chunk_id VARCHAR,
    doc_id VARCHAR,
    start INTEGER,           -- character offsets relative to the chunk text
    "end" INTEGER,
    text VARCHAR,
    label VARCHAR,           -- person|organization|location|date|number|work|event|other
    ner_label VARCHAR,       -- the model's own label (spaCy OntoNotes, natasha PER/LOC/ORG, rules DATE/NUMBER)
    entity_key VARCHAR,      -- factory.nlp.keys.entity_key before alias folding
    content_hash VARCHAR,    -- the chunk version the mention was found in
    run_id VARCHAR
);

-- one row per chunk version that NER has seen (also chunks without any mention)
CREATE TABLE annotated_chunks (
    chunk_id VARCHAR,
    content_hash VARCHAR,
    lang VARCHAR,
    n_mentions INTEGER,
    run_id VARCHAR
);

-- alias links found in the corpus itself: acronyms, "X, also known as Y"
CREATE TABLE entity_aliases (
    entity_key VARCHAR,      -- canonical key
    alias_key VARCHAR,       -- key that is folded into entity_key
    alias VARCHAR,
    evidence_chunk_id VARCHAR,
    rule VARCHAR,            -- acronym|abbreviation|aka|foreign_name
    content_hash VARCHAR,
    run_id VARCHAR
);

-- one row per entity and generation (keys after alias folding)
CREATE TABLE entities (
    lang VARCHAR,
    entity_key VARCHAR,
    label VARCHAR,           -- the most frequent label of its mentions
    name VARCHAR,            -- the most frequent surface form
    aliases VARCHAR[],       -- surface forms, most frequent first, plus linked aliases
    mention_count BIGINT,
    chunk_freq BIGINT,
    doc_freq BIGINT,
    generation VARCHAR
);

-- entity pairs sharing a chunk, stored in BOTH orientations (a,b) and (b,a) so that
-- one sorted column answers "neighbours of X"; current_pairs keeps key_a < key_b.
CREATE TABLE entity_pairs (
    lang VARCHAR,
    key_a VARCHAR,
    key_b VARCHAR,
    label_a VARCHAR,
    label_b VARCHAR,
    chunk_count BIGINT,      -- chunks holding both
    doc_count BIGINT,        -- documents with a chunk holding both
    chunk_freq_a BIGINT,
    chunk_freq_b BIGINT,
    npmi DOUBLE,             -- log(p(a,b)/(p(a)p(b))) / -log p(a,b), p over annotated chunks of lang
    generation VARCHAR
);

-- which entities each chunk holds (keys after folding): what selectors walk
CREATE TABLE chunk_entities (
    lang VARCHAR,
    entity_key VARCHAR,
    chunk_id VARCHAR,
    doc_id VARCHAR,
    label VARCHAR,
    n_mentions INTEGER,
    generation VARCHAR
);

CREATE TABLE stats_generations (
    generation VARCHAR,
    n_chunks BIGINT,         -- annotated current chunks (all languages)
    n_mentions BIGINT,
    n_entities BIGINT,
    n_pairs BIGINT,          -- unordered pairs
    seconds DOUBLE,
    computed_at TIMESTAMP,
    run_id VARCHAR
);

-- key: mentions(chunk_id, start, "end", content_hash) first
-- key: annotated_chunks(chunk_id, content_hash) first
-- key: entity_aliases(alias_key, entity_key, evidence_chunk_id, content_hash) first
-- key: entities(lang, entity_key, generation) all
-- key: entity_pairs(lang, key_a, key_b, generation) all
-- key: chunk_entities(lang, entity_key, chunk_id, generation) all
-- key: stats_generations(generation) first

-- the newest complete generation (its row is written after all its segments)
CREATE VIEW current_generation AS
    SELECT * FROM stats_generations ORDER BY computed_at DESC, generation DESC LIMIT 1;

CREATE VIEW current_entities AS
    SELECT * EXCLUDE (generation) FROM entities WHERE generation = (SELECT generation FROM current_generation);

CREATE VIEW current_edges AS
    SELECT * EXCLUDE (generation) FROM entity_pairs WHERE generation = (SELECT generation FROM current_generation);

CREATE VIEW current_pairs AS
    SELECT * FROM current_edges WHERE key_a < key_b;

CREATE VIEW current_chunk_entities AS
    SELECT * EXCLUDE (generation) FROM chunk_entities WHERE generation = (SELECT generation FROM current_generation);

-- mentions of the current version of each chunk
CREATE VIEW current_mentions AS
    SELECT m.* FROM mentions m JOIN chunks c ON c.chunk_id = m.chunk_id AND c.content_hash = m.content_hash;
