-- Corpus-level entity identity (factory.graph.identity): which mention keys name one
-- entity. Written with each statistics generation; the statistics count identities.

-- one row per linked key (and, for links that hold inside one document only, per document)
CREATE TABLE entity_links (
    lang VARCHAR,
    entity_key VARCHAR,      -- a mention key (factory.nlp.keys.entity_key)
    doc_id VARCHAR,          -- NULL: the link holds across the corpus, else only in this document
    identity VARCHAR,        -- the key of the entity it names (every link followed)
    rule VARCHAR,            -- list|alias|translit|inflection|middle|initials|acronym|surname|surname_in_document
    evidence VARCHAR,        -- why, in words
    generation VARCHAR
);

-- key: entity_links(lang, entity_key, doc_id, generation) all

CREATE VIEW current_entity_links AS
    SELECT * EXCLUDE (generation) FROM entity_links WHERE generation = (SELECT generation FROM current_generation);

-- one row per stored mention of a current chunk version: its key and the identity the
-- current statistics count it under (dates and numbers are their own identity)
CREATE VIEW mention_identities AS
    SELECT m.chunk_id, m.start, m."end", m.entity_key,
           CASE WHEN m.label IN ('date', 'number') THEN m.entity_key
                ELSE coalesce(d.identity, k.identity, m.entity_key) END AS identity
    FROM mentions m
    JOIN chunks c ON c.chunk_id = m.chunk_id AND c.content_hash = m.content_hash
    LEFT JOIN current_entity_links d
        ON d.lang = c.lang AND d.doc_id = c.doc_id AND d.entity_key = m.entity_key
    LEFT JOIN current_entity_links k
        ON k.lang = c.lang AND k.doc_id IS NULL AND k.entity_key = m.entity_key;
