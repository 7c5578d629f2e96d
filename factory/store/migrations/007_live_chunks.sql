-- Rows are never deleted, so a document that shrank on re-ingest leaves its old last
-- chunks behind. `chunks` shows only live ones: those below the document's current
-- chunk count (passages stored without a documents row, as audits do, are all live).
-- The unfiltered keyed rows stay available as chunks__latest.
CREATE OR REPLACE VIEW chunks AS
SELECT c.*
FROM chunks__latest AS c
LEFT JOIN documents AS d ON c.doc_id = d.doc_id
WHERE d.n_chunks IS NULL OR c.n < d.n_chunks;
