"""Training data from the factory's tasks: SFT and RL pools, round-sliced teacher
trajectories, a balanced datamix (see docs in each module).

Entry point: ``export_training(store, out_dir, settings, ...) -> TrainingExportSummary``
(the `factory export-training` command and the scheduled deployment's last step).
"""

from factory.training.datamix import MixReport, mix
from factory.training.export import TrainingExportSummary, export_training
from factory.training.pools import PoolReport, assign_pools, check_disjoint
from factory.training.slicing import sample_contexts, sample_start, slice_episode
from factory.training.tasks import BenchmarkTask, TrainingError, TrainingTask, load_tasks
from factory.training.trajectories import EpisodeLink, load_episodes, run_teacher

__all__ = [
    "BenchmarkTask", "EpisodeLink", "MixReport", "PoolReport", "TrainingError", "TrainingExportSummary", "TrainingTask",
    "assign_pools", "check_disjoint", "export_training", "load_episodes", "load_tasks", "mix", "run_teacher",
    "sample_contexts", "sample_start", "slice_episode",
]
