-- The funnel per run: what each validator saw, rejected and skipped, and how the run's
-- candidates ended. `factory funnel`, the generate and build summaries, the live build
-- view, the export and the card all read these views (factory/store/funnel.py).
-- The all-runs `funnel` view of 004 is now the sum of these.

-- per run and validator
CREATE VIEW run_funnel AS
SELECT run_id,
       validator,
       min(step) AS step,
       count(*) FILTER (WHERE NOT skipped) AS seen,
       count(*) FILTER (WHERE NOT ok AND NOT skipped) AS rejected,
       count(*) FILTER (WHERE skipped) AS skipped,
       count(elapsed_s) FILTER (WHERE NOT skipped) AS timed,
       sum(elapsed_s) FILTER (WHERE NOT skipped) AS seconds,
       avg(elapsed_s) FILTER (WHERE NOT skipped) AS mean_s,
       count(DISTINCT candidate_id) FILTER (WHERE NOT ok AND NOT skipped) AS candidates_rejected
FROM verdicts
GROUP BY run_id, validator;

CREATE OR REPLACE VIEW funnel AS
SELECT validator,
       min(step) AS step,
       sum(seen)::BIGINT AS seen,
       sum(rejected)::BIGINT AS rejected,
       sum(skipped)::BIGINT AS skipped,
       sum(seconds) / nullif(sum(timed), 0) AS mean_s,
       sum(candidates_rejected)::BIGINT AS candidates_rejected
FROM run_funnel
GROUP BY validator
ORDER BY step;

-- per run: how its candidates stand (finished ones by their final row, 'started' = in flight)
CREATE VIEW run_outcomes AS
SELECT run_id,
       count(*) FILTER (WHERE status = 'accepted') AS accepted,
       count(*) FILTER (WHERE status = 'rejected') AS rejected,
       count(*) FILTER (WHERE status = 'started') AS running,
       coalesce(sum(revisions) FILTER (WHERE status <> 'started'), 0)::BIGINT AS revisions,
       coalesce(sum(revisions) FILTER (WHERE status = 'accepted'), 0)::BIGINT AS accepted_revisions,
       coalesce(sum(tokens) FILTER (WHERE status <> 'started'), 0)::BIGINT AS tokens
FROM candidates
GROUP BY run_id;

-- per run: where its rejected candidates stopped (the validator, else the stage)
CREATE VIEW run_rejections AS
SELECT run_id, coalesce(validator, stage, 'unknown') AS rejected_by, stage, count(*) AS n
FROM candidates
WHERE status = 'rejected'
GROUP BY ALL;
