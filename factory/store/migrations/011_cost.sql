-- Reasoning models and what a task costs. Each LLM call records the tokens it spent
-- thinking (part of tokens_out), its budget, and whether the budget cut the answer off
-- (a truncated answer is not a parse error: see factory/llm/thinking.py). The views
-- below are the one place the cost per accepted task is computed: the card, `factory
-- cost` and bench/throughput.py read them (factory/cost.py).

-- thinking_tokens: of tokens_out, those spent thinking; truncated: cut off at max_tokens,
-- the figures (NULL: not cut off); max_tokens: the completion budget asked for
ALTER TABLE llm_calls ADD COLUMN thinking_tokens BIGINT;
ALTER TABLE llm_calls ADD COLUMN truncated VARCHAR;
ALTER TABLE llm_calls ADD COLUMN max_tokens INTEGER;

-- tokens and time spent per stage, as in 003, with thinking and truncated answers apart
CREATE VIEW llm_usage AS
SELECT
    stage,
    backend,
    model,
    count(*) AS calls,
    count(*) FILTER (WHERE ok) AS ok,
    count(*) FILTER (WHERE error IS NOT NULL) AS errors,
    count(*) FILTER (WHERE error IS NULL AND parse_error IS NOT NULL) AS parse_errors,
    count(*) FILTER (WHERE error IS NULL AND truncated IS NOT NULL) AS truncated,
    count(*) FILTER (WHERE repaired) AS repaired,
    sum(attempts) AS requests,
    sum(tokens_in) AS tokens_in,
    sum(tokens_out) AS tokens_out,
    coalesce(sum(thinking_tokens), 0) AS thinking_tokens,
    sum(latency_s) AS latency_s,
    avg(latency_s) AS mean_latency_s,
    sum(tokens_out) / nullif(sum(latency_s), 0) AS tokens_out_per_s
FROM llm_calls
GROUP BY stage, backend, model;

-- 009's run_outcomes and run_rejections, and how many rejections came before any agent run
-- (no agent_run verdict that ran, on any of the candidate's drafts): a cheap-first gauntlet
-- decides most of them early
CREATE OR REPLACE VIEW run_outcomes AS
SELECT
    c.run_id,
    count(*) FILTER (WHERE c.status IN ('accepted', 'rejected')) AS finished,
    count(*) FILTER (WHERE c.status = 'accepted') AS accepted,
    count(*) FILTER (WHERE c.status = 'rejected') AS rejected,
    count(*) FILTER (WHERE c.status = 'started') AS running,
    coalesce(sum(c.revisions) FILTER (WHERE c.status <> 'started'), 0)::BIGINT AS revisions,
    coalesce(sum(c.revisions) FILTER (WHERE c.status = 'accepted'), 0)::BIGINT AS accepted_revisions,
    coalesce(sum(c.tokens) FILTER (WHERE c.status <> 'started'), 0)::BIGINT AS tokens,
    count(*) FILTER (WHERE c.status = 'rejected' AND a.candidate_id IS NULL) AS rejected_before_agent,
    count(*) FILTER (WHERE c.status = 'rejected' AND a.candidate_id IS NULL)
        / nullif(count(*) FILTER (WHERE c.status = 'rejected'), 0) AS rejected_before_agent_share
FROM candidates c
LEFT JOIN (
    SELECT DISTINCT candidate_id FROM verdicts WHERE validator = 'agent_run' AND NOT skipped
) a ON a.candidate_id = c.candidate_id
GROUP BY c.run_id;

-- rejected candidates per run and where they stopped (the validator, or the stage before
-- the gauntlet: select, facts, ...; dedup comes after it), and how many of them never
-- reached an agent run
CREATE OR REPLACE VIEW run_rejections AS
SELECT
    c.run_id,
    coalesce(c.validator, c.stage, 'unknown') AS rejected_by,
    c.stage,
    count(*) AS n,
    count(*) FILTER (WHERE a.candidate_id IS NULL) AS before_agent
FROM candidates c
LEFT JOIN (
    SELECT DISTINCT candidate_id FROM verdicts WHERE validator = 'agent_run' AND NOT skipped
) a ON a.candidate_id = c.candidate_id
WHERE c.status = 'rejected'
GROUP BY ALL;

-- tokens per run and stage (facts, compose, revise, each validator, agent_run), and per
-- accepted task of the run: what the rejected candidates spent is part of the price
CREATE VIEW run_cost AS
SELECT
    l.run_id,
    l.stage,
    l.calls,
    l.requests,
    l.tokens_in,
    l.tokens_out,
    l.thinking_tokens,
    l.truncated,
    o.accepted,
    l.tokens_in / nullif(o.accepted, 0) AS tokens_in_per_accepted,
    l.tokens_out / nullif(o.accepted, 0) AS tokens_out_per_accepted,
    l.thinking_tokens / nullif(o.accepted, 0) AS thinking_tokens_per_accepted
FROM (
    SELECT run_id, stage, count(*) AS calls, sum(attempts) AS requests, sum(tokens_in) AS tokens_in,
           sum(tokens_out) AS tokens_out, coalesce(sum(thinking_tokens), 0) AS thinking_tokens,
           count(*) FILTER (WHERE error IS NULL AND truncated IS NOT NULL) AS truncated
    FROM llm_calls
    GROUP BY run_id, stage
) l
LEFT JOIN run_outcomes o ON o.run_id = l.run_id;
