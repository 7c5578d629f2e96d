-- Foundation tables. Every table gets two bookkeeping columns added by the store:
-- _writer (which writer process wrote the row) and _written_at (UTC timestamp).

-- one row per run of any command, with the resolved settings
CREATE TABLE runs (
    run_id VARCHAR,
    command VARCHAR,
    settings JSON,
    started_at TIMESTAMP,
    host VARCHAR,
    version VARCHAR
);

CREATE TABLE documents (
    doc_id VARCHAR,
    lang VARCHAR,
    title VARCHAR,
    source VARCHAR,
    doc_hash VARCHAR,
    n_chars BIGINT,
    n_chunks INTEGER,
    meta JSON,
    run_id VARCHAR
);

CREATE TABLE chunks (
    chunk_id VARCHAR,
    doc_id VARCHAR,
    n INTEGER,
    lang VARCHAR,
    title VARCHAR,
    text VARCHAR,
    content_hash VARCHAR,
    n_tokens INTEGER,
    char_start BIGINT,
    char_end BIGINT,
    run_id VARCHAR
);

-- a chunk whose text changed on re-ingest: later stages invalidate tasks citing it
CREATE TABLE chunk_changes (
    chunk_id VARCHAR,
    doc_id VARCHAR,
    old_hash VARCHAR,
    new_hash VARCHAR,
    change VARCHAR,          -- 'modified' | 'removed'
    run_id VARCHAR
);

-- near-duplicates found by MinHash LSH: counted and recorded, never silently dropped
CREATE TABLE near_duplicates (
    kind VARCHAR,            -- 'chunk' | 'document'
    item_id VARCHAR,
    duplicate_of VARCHAR,
    jaccard DOUBLE,
    run_id VARCHAR
);

-- records the ingest could not use, with file and line
CREATE TABLE ingest_errors (
    source VARCHAR,
    line BIGINT,
    doc_id VARCHAR,
    error VARCHAR,
    run_id VARCHAR
);

-- Keys: the views named after each table keep one row per key. 'first' keeps the
-- earliest write (idempotent inserts: a rerun that writes the same row again changes
-- nothing), 'last' keeps the newest (state that a re-ingest replaces).
-- key: runs(run_id) first
-- key: documents(doc_id) last
-- key: chunks(chunk_id) last
-- key: chunk_changes(chunk_id, new_hash) first
-- key: near_duplicates(kind, item_id) last
-- key: ingest_errors(source, line, doc_id, error) first
