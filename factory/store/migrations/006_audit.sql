-- Audit mode (`factory audit`): the gauntlet run on a benchmark the factory did not write.
-- One row per audit run, per audited question and per validator verdict; a rerun is a
-- new audit_id, so earlier audits stay readable side by side.

CREATE TABLE audit_runs (
    audit_id VARCHAR,
    benchmark VARCHAR,       -- the folder audited
    lang VARCHAR,
    llm VARCHAR,             -- LLM spec, '' without one
    validators VARCHAR[],    -- in gauntlet order
    questions INTEGER,
    flagged INTEGER,         -- questions flagged by at least one validator
    summary JSON,            -- what summary.json holds
    started_at TIMESTAMP,
    finished_at TIMESTAMP
);

CREATE TABLE audit_questions (
    audit_id VARCHAR,
    qid VARCHAR,             -- the benchmark's own query id
    lang VARCHAR,
    question VARCHAR,
    answer VARCHAR,
    answers VARCHAR[],       -- the answer and its aliases
    support_chunk_ids VARCHAR[],  -- positively judged passages (the benchmark's ids)
    answer_chunk_ids VARCHAR[],   -- the judged passages taken to hold the answer
    bridge_entities VARCHAR[],
    flagged BOOLEAN,
    flagged_by VARCHAR[],    -- validators that flagged it, in gauntlet order
    skipped VARCHAR[],       -- validators that could not run on it
    errors VARCHAR[],        -- validators whose call failed (neither pass nor flag)
    best_rank INTEGER        -- best rank of an answer (else support) passage in any broad query's top k
);

-- status: pass | flag | skip | error
CREATE TABLE audit_verdicts (
    audit_id VARCHAR,
    qid VARCHAR,
    step INTEGER,
    validator VARCHAR,
    status VARCHAR,
    ok BOOLEAN,
    hard BOOLEAN,
    skipped BOOLEAN,
    reason VARCHAR,
    feedback VARCHAR,
    figures JSON,
    elapsed_s DOUBLE
);

-- key: audit_runs(audit_id) last
-- key: audit_questions(audit_id, qid) last
-- key: audit_verdicts(audit_id, qid, validator) last

-- flagged verdicts with their question, newest audit first
CREATE OR REPLACE VIEW audit_flags AS
SELECT v.audit_id, v.qid, v.step, v.validator, v.reason, v.feedback, q.question, q.answer,
       q.support_chunk_ids, v.figures, v._written_at
FROM audit_verdicts v JOIN audit_questions q USING (audit_id, qid)
WHERE v.status = 'flag'
ORDER BY v._written_at DESC, v.qid, v.step;

-- share flagged per validator and audit (skipped and failed calls are not counted as run)
CREATE OR REPLACE VIEW audit_validator_summary AS
SELECT audit_id, validator, min(step) AS step,
       count(*) FILTER (WHERE status IN ('pass', 'flag')) AS ran,
       count(*) FILTER (WHERE status = 'flag') AS flagged,
       count(*) FILTER (WHERE status = 'skip') AS skipped,
       count(*) FILTER (WHERE status = 'error') AS errors,
       count(*) FILTER (WHERE status = 'flag') / nullif(count(*) FILTER (WHERE status IN ('pass', 'flag')), 0)
           AS share_flagged
FROM audit_verdicts
GROUP BY audit_id, validator
ORDER BY audit_id, step;
