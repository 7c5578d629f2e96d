-- A turn may carry several tool calls (the released harness allows parallel calls).
-- calls: each call's action, arguments, refusal and answer, in call order
--   [{call_id, action, arguments, rejected, rejection, message, warnings, query, results, new_chunk_ids}].
-- The turn-level columns of 005 (action, rejected, rejection, message, ...) summarise
-- them: actions and rejection codes comma-joined, rejected when any call was refused.
-- Rows written before this migration read back as one call from those columns.
-- llm_errors: the failed tries of the turn's model call, retried before the episode ends with error.
ALTER TABLE agent_turns ADD COLUMN calls JSON;
ALTER TABLE agent_turns ADD COLUMN llm_errors JSON;
