-- Training-data export (factory/training/): pool assignments, the benchmark tasks kept
-- out of training, teacher episodes linked to their tasks, and each export's summary.

-- one row per task and decision; a later decision about the same task wins, and the
-- export only ever moves a task from sft/rl to excluded (a new benchmark near it),
-- never between sft and rl
CREATE TABLE training_pools (
    task_id VARCHAR,
    lang VARCHAR,
    pool VARCHAR,            -- sft | rl | excluded
    reason VARCHAR,          -- hash | group | benchmark_task | benchmark_same_support | benchmark_near_duplicate | bridges_pools
    group_key VARCHAR,       -- the group (shared support set / near-duplicate question) it was assigned with
    related_to VARCHAR,      -- the task or benchmark task that decided it, if any
    detail JSON,
    run_id VARCHAR
);

-- tasks of benchmarks built from the corpus: neither they nor their near-duplicates are trained on
CREATE TABLE benchmark_tasks (
    benchmark VARCHAR,       -- the folder it was read from, or the build run id
    task_id VARCHAR,
    lang VARCHAR,
    question VARCHAR,
    support_chunk_ids VARCHAR[],
    source VARCHAR           -- folder | build_run
);

-- teacher episodes (agent_episodes with stage 'training') linked to the task they ran on
CREATE TABLE training_episodes (
    episode_id VARCHAR,
    task_id VARCHAR,
    lang VARCHAR,
    teacher VARCHAR,         -- the LLM spec, endpoints redacted
    model VARCHAR,
    rollout INTEGER,
    recall DOUBLE,           -- the episode's final ranking against the task's support
    trajectory_recall DOUBLE,
    rounds INTEGER,
    rejections INTEGER,
    finalized_by VARCHAR,
    low_recall BOOLEAN,
    error VARCHAR,
    run_id VARCHAR
);

-- one row per export: where it went and what it held
CREATE TABLE training_exports (
    export_id VARCHAR,
    out_dir VARCHAR,
    summary JSON,
    settings JSON,
    started_at TIMESTAMP
);

-- key: training_pools(task_id) last
-- key: benchmark_tasks(benchmark, task_id) first
-- key: training_episodes(episode_id) first
-- key: training_exports(export_id) first
