-- The search agent's traces: one row per episode, one per round, one per turn.
-- A turn's request is rebuilt byte for byte as the round's start_messages followed by
-- every earlier turn's assistant message and replies in that round (see
-- factory/agent/trace.py: replay_request, replay_round_context).

CREATE TABLE agent_episodes (
    episode_id VARCHAR,
    item_id VARCHAR,         -- task, draft or query id the episode ran for
    stage VARCHAR,           -- difficulty | eval | training | ...
    rollout INTEGER,
    question VARCHAR,
    lang VARCHAR,
    profile VARCHAR,         -- standard | small: the limits the loop ran under
    protocol VARCHAR,        -- tools (OpenAI tool calls) | json (one JSON action per turn)
    llm VARCHAR,
    model VARCHAR,
    config JSON,             -- limits, sampling, tool specs, output schema: what replay needs
    ranking JSON,            -- [{chunk_id, reason, score}] at most final_k
    finalized_by VARCHAR,    -- model | fallback
    rounds INTEGER,
    turns INTEGER,
    searches INTEGER,
    rejections INTEGER,
    seen_chunk_ids JSON,     -- every unique result in order of first appearance (trajectory)
    saved JSON,              -- [{chunk_id, reason}] at the end
    covered JSON,
    unresolved JSON,
    warnings JSON,
    tokens_in BIGINT,
    tokens_out BIGINT,
    elapsed_s DOUBLE,
    error VARCHAR,
    run_id VARCHAR,
    started_at TIMESTAMP
);

CREATE TABLE agent_rounds (
    episode_id VARCHAR,
    round_no INTEGER,        -- 1-based
    state JSON,              -- question, saved evidence with reasons, coverage, summary, goal, note
    start_messages JSON,     -- the fresh context the round started with, as sent
    ended_by VARCHAR,        -- save | finalize | no_tool_calls | locked_searches | max_turns | budget | llm_error
    searches INTEGER,
    turns INTEGER,
    tokens INTEGER           -- estimated context size when the round ended
);

CREATE TABLE agent_turns (
    episode_id VARCHAR,
    round_no INTEGER,
    turn_no INTEGER,         -- 1-based within the episode
    turn_in_round INTEGER,   -- 1-based within the round
    action VARCHAR,          -- search_corpus | save_and_advance | finalize_ranking | none | invalid
    arguments JSON,
    rejected BOOLEAN,        -- the harness refused the action (mask from the loss, keep the recovery)
    rejection VARCHAR,       -- reason code, e.g. save_too_few_searches
    message VARCHAR,         -- what the harness answered (result list or error text)
    warnings JSON,
    query VARCHAR,
    results JSON,            -- [{chunk_id, score, rank}] as shown, after filtering
    new_chunk_ids JSON,      -- results never seen before in the episode
    assistant JSON,          -- the assistant message appended to the context
    replies JSON,            -- messages the harness appended after it
    tokens_in INTEGER,
    tokens_out INTEGER,
    round_tokens INTEGER,    -- estimated context size after this turn
    latency_s DOUBLE,
    llm_error VARCHAR
);

-- key: agent_episodes(episode_id) first
-- key: agent_rounds(episode_id, round_no) first
-- key: agent_turns(episode_id, turn_no) first
