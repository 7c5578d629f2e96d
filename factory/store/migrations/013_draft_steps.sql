-- The composer plans before it writes the question: each draft keeps its steps (the
-- passage searched, a span quoted from it exactly, what the step establishes), which
-- the answerability check verifies. They replace the free-text reasoning_steps column,
-- which stays for older rows.
ALTER TABLE drafts ADD COLUMN steps JSON;
