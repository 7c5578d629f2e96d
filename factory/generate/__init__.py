"""Generation: candidates drafted, judged, and settled in candidate order into tasks.

    scheduler.py  the in-order loop: one set of stop rules, the run's limits (target,
                  attempt and token budgets, concurrency, lookahead)
    settle.py     the driver: draws each candidate's cell, checks duplicates, writes tasks
    candidate.py  one candidate's own work (drafting, judging); it never settles
    drafting.py   cell -> subgraph -> fact sheet -> draft (also `factory compose`)
    judge.py      the gauntlet, then prune / revise / reject: the one place a draft is judged
    context.py    what a run's candidates share in one process (and how a worker builds it)
    scope.py      which accepted tasks a run counts (its own, or a training set's); run ids
    run.py        in this process (`factory generate`), or the pieces a flow wires up
"""

from factory.generate.candidate import run_candidate, run_job
from factory.generate.context import CandidateContext, ContextSpec, close_contexts, make_context
from factory.generate.outcome import CandidateOutcome
from factory.generate.run import GenerationRun, run_generation, start_run
from factory.generate.scheduler import Job, RunLimits, RunReport, RunState, run_in_order
from factory.generate.scope import TRAINING_COMMAND, TaskScope, stream_seed, training_run_id, training_set_summary
from factory.generate.settle import Settler

__all__ = [
    "TRAINING_COMMAND", "CandidateContext", "CandidateOutcome", "ContextSpec", "GenerationRun", "Job", "RunLimits",
    "RunReport", "RunState", "Settler", "TaskScope", "close_contexts", "make_context", "run_candidate",
    "run_generation", "run_in_order", "run_job", "start_run", "stream_seed", "training_run_id",
    "training_set_summary",
]
