-- The generation loop: candidates, the drafts each one went through, every
-- validator verdict, and the accepted tasks. Rows are flushed at each step, so a
-- second process can read rejects (and the funnel) while a run is going.

-- one row per candidate and state change: 'started', then 'accepted' or 'rejected'
CREATE TABLE candidates (
    candidate_id VARCHAR,
    run_id VARCHAR,
    idx INTEGER,             -- position in the run (the seed stream of the candidate)
    seed BIGINT,
    lang VARCHAR,
    cell VARCHAR,            -- MECHANIC/FORM/TYPE, NULL before the draw
    status VARCHAR,          -- started | accepted | rejected
    stage VARCHAR,           -- where it ended: cell, select, facts, compose, revise, gauntlet, dedup, error
    validator VARCHAR,       -- the validator that rejected it (when it was one)
    reason VARCHAR,
    feedback VARCHAR,
    final_draft_id VARCHAR,
    attempts INTEGER,        -- drafts written (compose, revisions, prunings)
    revisions INTEGER,
    prunes INTEGER,
    task_id VARCHAR,
    tokens BIGINT,           -- tokens spent by this candidate (cached calls excluded)
    elapsed_s DOUBLE,
    subgraph JSON
);

-- every draft: the composed one, each revision and each pruned support set
CREATE TABLE drafts (
    draft_id VARCHAR,        -- '{candidate_id}/{attempt}'
    candidate_id VARCHAR,
    run_id VARCHAR,
    attempt INTEGER,
    origin VARCHAR,          -- compose | revise | prune
    parent_draft_id VARCHAR,
    lang VARCHAR,
    cell VARCHAR,
    question VARCHAR,
    answer VARCHAR,
    answer_aliases VARCHAR[],
    support_chunk_ids VARCHAR[],
    answer_chunk_id VARCHAR,
    bridge_entities VARCHAR[],
    reasoning_steps VARCHAR[],
    raw VARCHAR,
    parse_error VARCHAR
);

-- one row per validator run on a draft (the table view is the `verdicts` view)
CREATE TABLE verdicts (
    draft_id VARCHAR,
    candidate_id VARCHAR,
    run_id VARCHAR,
    attempt INTEGER,
    step INTEGER,            -- position in the gauntlet
    validator VARCHAR,
    ok BOOLEAN,
    hard BOOLEAN,
    skipped BOOLEAN,
    reason VARCHAR,
    feedback VARCHAR,
    figures JSON,
    elapsed_s DOUBLE
);

-- accepted tasks (the `tasks` view); task_id = candidate_id, so a resumed run never doubles one
CREATE TABLE tasks (
    task_id VARCHAR,
    run_id VARCHAR,
    candidate_id VARCHAR,
    draft_id VARCHAR,
    lang VARCHAR,
    cell VARCHAR,
    mechanic VARCHAR,
    form VARCHAR,
    answer_type VARCHAR,
    question VARCHAR,
    answer VARCHAR,
    answer_aliases VARCHAR[],
    support_chunk_ids VARCHAR[],
    answer_chunk_id VARCHAR,
    bridge_entities VARCHAR[],
    revisions INTEGER,
    validators VARCHAR[],    -- validators that ran and passed
    skipped_validators VARCHAR[],
    difficulty JSON
);

-- key: candidates(candidate_id) last
-- key: drafts(draft_id) last
-- key: verdicts(draft_id, validator) last
-- key: tasks(task_id) first

-- each draft with the outcome of its gauntlet: the first failing verdict, if any
CREATE VIEW attempts AS
SELECT d.run_id, d.candidate_id, d.draft_id, d.attempt, d.origin, d.parent_draft_id, d.lang, d.cell,
       d.question, d.answer, d.support_chunk_ids, d.parse_error,
       count(v.validator) AS n_verdicts,
       count(v.validator) > 0 AND coalesce(bool_and(v.ok OR v.skipped), true) AS passed,  -- so far
       arg_min(v.validator, v.step) FILTER (WHERE NOT v.ok AND NOT v.skipped) AS failed_validator,
       arg_min(v.reason, v.step) FILTER (WHERE NOT v.ok AND NOT v.skipped) AS failed_reason,
       arg_min(v.feedback, v.step) FILTER (WHERE NOT v.ok AND NOT v.skipped) AS failed_feedback,
       sum(v.elapsed_s) AS elapsed_s,
       d._written_at
FROM drafts d LEFT JOIN verdicts v ON v.draft_id = d.draft_id
GROUP BY ALL;

-- candidates that ended rejected, with their last draft and why
CREATE VIEW rejected_tasks AS
SELECT c.run_id, c.candidate_id, c.cell, c.stage, c.validator, c.reason, c.feedback,
       c.attempts, c.revisions, c.prunes, c.final_draft_id,
       d.question, d.answer, d.answer_aliases, d.support_chunk_ids, d.bridge_entities, d.raw, d.parse_error,
       c.tokens, c.elapsed_s, c._written_at
FROM candidates c LEFT JOIN drafts d ON d.draft_id = c.final_draft_id
WHERE c.status = 'rejected';

CREATE VIEW accepted_tasks AS
SELECT t.*, c.attempts, c.prunes, c.tokens, c.elapsed_s
FROM tasks t LEFT JOIN candidates c ON c.candidate_id = t.candidate_id;

-- per validator: drafts it saw, rejected, skipped, and its mean time
CREATE VIEW funnel AS
SELECT validator,
       min(step) AS step,
       count(*) FILTER (WHERE NOT skipped) AS seen,
       count(*) FILTER (WHERE NOT ok AND NOT skipped) AS rejected,
       count(*) FILTER (WHERE skipped) AS skipped,
       avg(elapsed_s) FILTER (WHERE NOT skipped) AS mean_s,
       count(DISTINCT candidate_id) FILTER (WHERE NOT ok AND NOT skipped) AS candidates_rejected
FROM verdicts
GROUP BY validator
ORDER BY step;
