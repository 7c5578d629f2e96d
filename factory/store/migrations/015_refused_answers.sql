-- Answers the loop turned away for good: the composer found no honest question on a
-- subgraph with that fixed answer (schema's no_honest_question), or a model gave the answer
-- without any evidence (closed_book_solved). Only another subgraph fixes either, and a later
-- run would draw the same answer again: in the hand-labelled English reference draws 1-14, 60
-- of 63 subgraphs whose answer an earlier draw had declined were declined again (Russian: 12
-- of 12; `python -m bench.refused_memory`). The selectors draw none of these answers again
-- (setting compose.avoid_refused_answers) unless a later `forgotten` row lets one back in
-- (``factory.store.refused``, `factory refused --forget`).
CREATE TABLE refused_answers (
    lang VARCHAR,
    entity_key VARCHAR,      -- the answer entity's key in the selection index
    name VARCHAR,            -- its name, for a person reading the table
    cell VARCHAR,
    reason VARCHAR,          -- no_honest_question | closed_book_solved | forgotten
    note VARCHAR,            -- the composer's reason, or the verdict's feedback
    candidate_id VARCHAR,
    draft_id VARCHAR,
    run_id VARCHAR
);

-- key: refused_answers(lang, entity_key, draft_id) first
