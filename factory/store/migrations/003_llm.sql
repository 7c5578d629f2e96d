-- The LLM gateway's log and cache. One row per call that reached a backend (cache
-- hits cost nothing and are not logged), written as its own segment the moment the
-- call finished, so a killed run loses only the calls that were in flight.

CREATE TABLE llm_calls (
    call_id VARCHAR,         -- unique per call
    request_key VARCHAR,     -- sha256 of model name + canonical request (sample index included, no URLs, no secrets)
    stage VARCHAR,           -- who asked: compose, closed_book, agent, ...
    item_id VARCHAR,         -- what for: a draft id, a task id, ...
    backend VARCHAR,         -- openai | llamacpp | fake
    model VARCHAR,
    sample_index INTEGER,
    request JSON,
    response JSON,
    text VARCHAR,            -- the raw answer text (kept also when it did not parse)
    ok BOOLEAN,              -- no error and, when a schema was asked for, a valid object
    error VARCHAR,           -- the call failed after retries (not served from cache, asked again on rerun)
    parse_error VARCHAR,     -- the answer did not follow the schema, even after the one repair request
    attempts INTEGER,        -- backend requests this call made: 1, or 2 with the repair request
    repaired BOOLEAN,        -- the repair request fixed the answer
    tokens_in BIGINT,        -- both requests when a repair was made
    tokens_out BIGINT,
    latency_s DOUBLE,
    started_at TIMESTAMP,
    run_id VARCHAR
);

-- A failed call and its successful retry share a request_key, so the view keeps
-- every call (call_id is unique, 'first' only guards against a segment seen twice)
-- and the cache below picks the first usable answer per request_key.
-- key: llm_calls(call_id) first

-- the answers a gateway serves without asking again: the first call per request
-- that did not fail (a parse failure is the model's answer and is kept)
CREATE VIEW llm_cache AS
SELECT * EXCLUDE (_rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY request_key ORDER BY _written_at, call_id) AS _rn
    FROM llm_calls
    WHERE error IS NULL
) WHERE _rn = 1;

-- tokens and time spent per stage (calls that reached a backend, cache hits spend nothing)
CREATE VIEW llm_usage AS
SELECT
    stage,
    backend,
    model,
    count(*) AS calls,
    count(*) FILTER (WHERE ok) AS ok,
    count(*) FILTER (WHERE error IS NOT NULL) AS errors,
    count(*) FILTER (WHERE error IS NULL AND parse_error IS NOT NULL) AS parse_errors,
    count(*) FILTER (WHERE repaired) AS repaired,
    sum(attempts) AS requests,
    sum(tokens_in) AS tokens_in,
    sum(tokens_out) AS tokens_out,
    sum(latency_s) AS latency_s,
    avg(latency_s) AS mean_latency_s,
    sum(tokens_out) / nullif(sum(latency_s), 0) AS tokens_out_per_s
FROM llm_calls
GROUP BY stage, backend, model;

-- the same per item (a draft, a task): what one item cost across its stages
CREATE VIEW llm_usage_items AS
SELECT
    stage,
    item_id,
    count(*) AS calls,
    count(*) FILTER (WHERE ok) AS ok,
    count(*) FILTER (WHERE error IS NOT NULL) AS errors,
    sum(tokens_in) AS tokens_in,
    sum(tokens_out) AS tokens_out,
    sum(latency_s) AS latency_s
FROM llm_calls
GROUP BY stage, item_id;
