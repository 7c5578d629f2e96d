"""The bounded multi-round ReAct loop over a fixed index (see DESIGN.md, "The search agent").

An episode is a sequence of rounds. Each round starts from a fresh context rendered
from the carried state only (question, saved evidence with reasons and text, declared
coverage, last summary, goal). Within a round the model acts in turns; a turn may hold
several tool calls (tool calls, or ``{"actions": [...]}``), run in order, each counted
and each answered with results or with an error the model can correct from. Ids in
save_and_advance and finalize_ranking must come from the context the model saw when it
wrote the turn. Every limit comes from ``AgentLimits``; nothing here is a magic number.
"""

from __future__ import annotations

import inspect
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from factory.agent import guardrails
from factory.agent.config import agent_settings, choose_profile, choose_protocol
from factory.agent.fusion import reciprocal_rank_fusion
from factory.agent.guardrails import Rejection
from factory.agent.prompts import round_messages
from factory.agent.state import EpisodeState, SavedChunk, normalize_query
from factory.agent.tokens import TokenMeter
from factory.agent.tools import (
    FINALIZE, SAVE, SEARCH, TOOL_NAMES, ArgumentError, NoAction, action_schema, cut, format_results, parse_actions,
    parse_arguments, snippet_chars, tool_specs,
)
from factory.agent.trace import (
    AgentResult, CallTrace, EpisodeConfig, EpisodeTrace, RankedChunk, RoundTrace, ShownHit, TurnTrace, write_episode,
)
from factory.clock import utc_now
from factory.llm.types import LLMRequest, LLMResponse, Message, Sampling
from factory.settings import AgentSettings, Settings

NO_TOOL = "You did not call a tool. Call one or more of: " + ", ".join(TOOL_NAMES) + "."
JSON_HINT = ' Answer with JSON only: {"action": TOOL_NAME, "arguments": {...}}, or {"actions": [...]} for several.'


def call_llm(llm: Any, request: LLMRequest, *, stage: str, item_id: str) -> LLMResponse:
    """``llm.complete``, passing stage and item id to a gateway that logs them.

    Any exception becomes a response with ``error`` set: a failed call is a recorded
    outcome of the episode, never a crash of the run.
    """
    try:
        params = inspect.signature(llm.complete).parameters
        takes_stage = "stage" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    except (TypeError, ValueError):
        takes_stage = False
    try:
        if takes_stage:
            return llm.complete(request, stage=stage, item_id=item_id)
        return llm.complete(request)
    except Exception as exc:  # noqa: BLE001 - recorded in the trace
        return LLMResponse(error=f"{type(exc).__name__}: {exc}")


class SearchAgent:
    """The search agent over one searcher and one LLM; ``run`` for a fused result."""

    def __init__(
        self,
        searcher: Any,
        llm: Any,
        settings: Settings | AgentSettings | None = None,
        *,
        text_of: Callable[[str], str] | None = None,
        store: Any = None,
        lang: str = "en",
        stage: str = "agent",
        run_id: str = "",
        seed: int | None = None,
        writer: Any = None,
    ) -> None:
        self.searcher = searcher
        self.llm = llm
        self.settings = agent_settings(settings)
        self.seed = seed if seed is not None else (settings.seed if isinstance(settings, Settings) else 13)
        self.text_of = text_of
        self.store = store
        # a writer its owner flushes (a generation run's, at each candidate's checkpoint), or
        # each episode in its own segments of ``store``
        self.writer = writer
        self.lang = lang
        self.stage = stage
        self.run_id = run_id
        chosen = choose_profile(self.settings, llm)
        self.profile, self.limits = chosen.name, chosen.limits
        self.window, self.window_source, self.window_warning = chosen.window, chosen.window_source, chosen.warning
        self.protocol = choose_protocol(self.settings, llm)

    def config(self, rollout: int) -> EpisodeConfig:
        greedy = rollout == 0 and self.settings.greedy_first_rollout
        sampling = Sampling(temperature=0.0 if greedy else self.settings.temperature, max_tokens=self.limits.max_output_tokens)
        tools = self.protocol == "tools"
        return EpisodeConfig(
            limits=self.limits,
            context_window=self.window,
            window_source=self.window_source,
            tools=tool_specs(self.limits) if tools else [],
            tool_choice="auto" if tools else None,
            output_schema=None if tools else action_schema(self.limits),
            schema_name=None if tools else "agent_action",
            sampling=sampling,
            seed=self.seed + rollout,
            sample_index=rollout,
        )

    def episode(self, question: str, *, item_id: str = "", rollout: int = 0) -> EpisodeTrace:
        trace = Episode(self, question, item_id=item_id, rollout=rollout).run()
        if self.writer is not None or self.store is not None:
            write_episode(self.writer if self.writer is not None else self.store, trace)
        return trace

    def run(self, question: str, *, item_id: str = "", rollouts: int | None = None) -> AgentResult:
        """Several rollouts at once, fused by reciprocal rank fusion and cut to final_k."""
        n = rollouts or self.settings.rollouts
        if n == 1:
            episodes = [self.episode(question, item_id=item_id, rollout=0)]
        else:
            with ThreadPoolExecutor(max_workers=min(n, self.settings.concurrency)) as pool:
                episodes = list(pool.map(lambda r: self.episode(question, item_id=item_id, rollout=r), range(n)))
        ranking = reciprocal_rank_fusion([e.ranking for e in episodes], k=self.settings.rrf_k, cut=self.limits.final_k)
        return AgentResult(question=question, item_id=item_id, ranking=ranking, episodes=episodes)


class Episode:
    def __init__(self, agent: SearchAgent, question: str, *, item_id: str, rollout: int) -> None:
        self.agent = agent
        self.limits = agent.limits
        self.state = EpisodeState(question=question, rounds=self.limits.rounds)
        self.texts: dict[str, str] = {}
        self.final: list[RankedChunk] | None = None
        config = agent.config(rollout)
        self.trace = EpisodeTrace(
            episode_id=uuid.uuid4().hex,
            item_id=item_id,
            stage=agent.stage,
            rollout=rollout,
            question=question,
            lang=agent.lang,
            profile=agent.profile,
            protocol=agent.protocol,
            llm=str(getattr(agent.llm, "name", "")),
            model=str(getattr(agent.llm, "model", "")),
            config=config,
            run_id=agent.run_id,
            started_at=utc_now(),
        )
        if agent.window_warning:
            self.trace.warnings.append(agent.window_warning)
        # the tool schemas travel with every request of the tools protocol
        fixed = json.dumps([t.model_dump() for t in config.tools]) if config.tools else ""
        self.meter = TokenMeter(self.limits.chars_per_token, len(fixed))
        self.snippet_chars = snippet_chars(self.limits)

    # ------------------------------------------------------------- episode
    def run(self) -> EpisodeTrace:
        start = time.perf_counter()
        state = self.state
        while True:
            ended_by = self._round()
            if ended_by in ("finalize", "llm_error") or state.is_last_round:
                break
            note = ""
            if ended_by != "save":
                note = f"round {state.round_no} ended without save_and_advance ({self._why(ended_by)}); " \
                       "nothing from it was saved."
            elif len(state.saved) > self.limits.saved_soft_cap:
                note = f"{len(state.saved)} chunks are saved, above the soft cap of {self.limits.saved_soft_cap}; " \
                       "drop the weakest with drop_from_saved."
            state.next_round(note)
        if self.final is None:
            self.final = self._fallback()
            self.trace.finalized_by = "fallback"
        else:
            self.trace.finalized_by = "model"
        trace = self.trace
        trace.ranking = self.final
        trace.seen = list(state.seen)
        trace.saved = list(state.saved.values())
        trace.covered, trace.unresolved = list(state.covered), list(state.unresolved)
        trace.searches = state.searches
        trace.elapsed_s = time.perf_counter() - start
        return trace

    def _why(self, ended_by: str) -> str:
        limits = self.limits
        return {
            "no_tool_calls": f"{limits.max_no_tool_turns} turns without a tool call",
            "locked_searches": f"{limits.max_locked_search_turns} turns of searches after the token lock",
            "max_turns": f"{limits.max_turns_per_round} turns",
            "budget": "its token budget was used up",
        }.get(ended_by, ended_by)

    def _fallback(self) -> list[RankedChunk]:
        """Saved chunks (in save order), then every other chunk seen (in order of appearance)."""
        ranking = [RankedChunk(chunk_id=c, reason=s.reason) for c, s in self.state.saved.items()]
        ranking += [
            RankedChunk(chunk_id=c, reason=f'seen in the results for "{q}"')
            for c, q in self.state.seen.items() if c not in self.state.saved
        ]
        ranking = ranking[: self.limits.final_k]
        for i, item in enumerate(ranking):
            item.score = float(len(ranking) - i)
        return ranking

    # --------------------------------------------------------------- round
    def _round(self) -> str:
        state, limits = self.state, self.limits
        round_state = state.round_state()
        start = round_messages(self.agent.lang, limits, self.agent.protocol, state.question, round_state)
        record = RoundTrace(round_no=state.round_no, state=round_state, start_messages=start)
        self.trace.rounds.append(record)
        messages = list(start)
        tokens = self.meter.request(messages)
        ended_by = ""
        while not ended_by:
            if state.turns_in_round >= limits.max_turns_per_round:
                ended_by = "max_turns"
                break
            if tokens + limits.max_output_tokens > limits.round_token_budget:
                ended_by = "budget"
                break
            ended_by, added, tokens = self._turn(messages, tokens)
            messages.extend(added)
        record.ended_by = ended_by
        record.searches = state.round_searches
        record.turns = state.turns_in_round
        record.tokens = tokens
        return ended_by

    def _turn(self, messages: list[Message], tokens: int) -> tuple[str, list[Message], int]:
        """One model turn and the harness's answers: (round end or '', messages added, tokens)."""
        state = self.state
        state.turns_in_round += 1
        config = self.trace.config
        request = LLMRequest(
            messages=list(messages), tools=config.tools, tool_choice=config.tool_choice,
            output_schema=config.output_schema, schema_name=config.schema_name,
            sampling=config.sampling, seed=config.seed, sample_index=config.sample_index,
        )
        response, failures = self._complete(request)
        turn = TurnTrace(
            round_no=state.round_no, turn_no=len(self.trace.turns) + 1, turn_in_round=state.turns_in_round,
            tokens_in=response.tokens_in, tokens_out=response.tokens_out, latency_s=response.latency_s,
            llm_errors=failures,
        )
        self.trace.turns.append(turn)
        self.trace.tokens_in += response.tokens_in
        self.trace.tokens_out += response.tokens_out
        if response.error:
            turn.llm_error = response.error
            self.trace.error = response.error
            turn.round_tokens = tokens
            return "llm_error", [], tokens
        assistant, calls, problem = self._read(response)
        turn.assistant = assistant
        # the request as the backend counted it (else as estimated), plus what the model wrote
        tokens = self.meter.observe(request, response.tokens_in) + self.meter.message(assistant)
        ended_by = ""
        if not calls:
            # no tool call at all (prose, or JSON without an action)
            call = CallTrace(
                action="none" if problem is None else "invalid",
                arguments={"_raw": response.text} if response.text else None,
                rejected=problem is not None,
                rejection="parse_error" if problem else "no_tool_call",
                message=f"Error: {problem}" if problem else NO_TOOL + (JSON_HINT if self.agent.protocol == "json" else ""),
            )
            turn.calls = [call]
            turn.replies = [Message(role="user", content=call.message)]
            state.no_tool_turns += 1
            if state.no_tool_turns >= self.limits.max_no_tool_turns:
                ended_by = "no_tool_calls"
        else:
            state.no_tool_turns = 0
            ended_by = self._act_all(calls, turn, tokens)
        tokens += self.meter.messages(turn.replies)
        turn.round_tokens = tokens
        return ended_by, [assistant, *turn.replies], tokens

    def _complete(self, request: LLMRequest) -> tuple[LLMResponse, list[str]]:
        """The model call, retried ``llm_retries`` times; the response and every failed try."""
        agent, limits = self.agent, self.limits
        failures: list[str] = []
        for attempt in range(limits.llm_retries + 1):
            if attempt and limits.llm_retry_wait_s:
                time.sleep(limits.llm_retry_wait_s)
            response = call_llm(agent.llm, request, stage=agent.stage, item_id=self.trace.item_id)
            if not response.error:
                return response, failures
            failures.append(response.error)
        return response, failures

    def _read(self, response: LLMResponse) -> tuple[Message, list[tuple[str | None, str, Any]], str | None]:
        """The assistant message as it goes back into the context, the calls, a parse problem."""
        if self.agent.protocol == "tools":
            assistant = Message(role="assistant", content=response.text or "", tool_calls=list(response.tool_calls))
            return assistant, [(c.id, c.name, c.arguments) for c in response.tool_calls], None
        text = response.text or (json.dumps(response.parsed, ensure_ascii=False) if response.parsed is not None else "")
        assistant = Message(role="assistant", content=text)
        try:
            actions = parse_actions(text, response.parsed)
        except NoAction:
            return assistant, [], None
        except ArgumentError as exc:
            return assistant, [], str(exc)
        return assistant, [(None, name, arguments) for name, arguments in actions], None

    def _reply(self, call_id: str | None, name: str, text: str) -> Message:
        if call_id is not None:
            return Message(role="tool", tool_call_id=call_id, name=name, content=text)
        return Message(role="user", content=f"[{name}] {text}")

    # ------------------------------------------------------------- actions
    def _act_all(self, calls: list[tuple[str | None, str, Any]], turn: TurnTrace, tokens: int) -> str:
        """Run a turn's calls in order; each is answered. Returns how the round ends ('' = goes on)."""
        state, limits = self.state, self.limits
        context = state.context_ids()  # what the model saw when it wrote this turn
        ended_by, ended_with, locked = "", "", False
        replies: list[Message] = []
        used = tokens
        for index, (call_id, name, raw_args) in enumerate(calls):
            call = CallTrace(call_id=call_id, action=name if name in TOOL_NAMES else "invalid",
                             arguments=raw_args if isinstance(raw_args, dict) else _as_json(raw_args))
            turn.calls.append(call)
            if ended_by:
                _refuse(call, Rejection.one(
                    "after_round_end", f"not run: {ended_with} already ended the round in this turn."))
            elif index >= limits.max_calls_per_turn:
                _refuse(call, Rejection.one(
                    "too_many_calls", f"not run: at most {limits.max_calls_per_turn} calls run per turn; "
                    "make it again next turn if still needed."))
            else:
                ended_by = self._act(name, raw_args, call, context, used)
                ended_with = name
                locked = locked or call.rejection == "search_locked"
            reply = self._reply(call_id, name, call.message)
            used += self.meter.message(reply)  # a later search in this turn sees this one's results
            replies.append(reply)
        if self.agent.protocol == "tools":
            turn.replies = replies  # one tool message per call id
        else:  # one user message: chat templates want user and assistant to alternate
            turn.replies = [Message(role="user", content="\n\n".join(r.content or "" for r in replies))]
        if locked:
            state.locked_turns += 1
            if not ended_by and state.locked_turns >= limits.max_locked_search_turns:
                ended_by = "locked_searches"
        return ended_by

    def _act(self, name: str, raw_args: Any, call: CallTrace, context: set[str], used: int) -> str:
        """Run one tool call; fills the call; returns how the round ends ('' = goes on)."""
        try:
            if name not in TOOL_NAMES:
                raise Rejection.one("unknown_tool", f"there is no tool {name!r}; the tools are {', '.join(TOOL_NAMES)}.")
            try:
                args = parse_arguments(name, raw_args)
            except ArgumentError as exc:
                raise Rejection.one("bad_arguments", str(exc) + ".") from exc
            if name == SEARCH:
                return self._search(args, call, used)
            if name == SAVE:
                return self._save(args, call, context)
            return self._finalize(args, call, context)
        except Rejection as rejection:
            _refuse(call, rejection)
            return ""

    def _search(self, args: Any, call: CallTrace, used: int) -> str:
        state, limits = self.state, self.limits
        locked = used >= limits.search_lock_share * limits.round_token_budget
        query, top_k, warnings = guardrails.check_search(
            args, state, limits, locked=locked, used=used, budget=limits.round_token_budget,
            scope=self.agent.settings.query_dedup,
        )
        call.query = query
        exclude = state.shown_this_round | set(state.saved)
        hits = self._run_search(query, top_k + len(exclude))
        shown, hidden = [], 0
        for hit in hits:
            if len(shown) == top_k:
                break
            if hit.chunk_id in exclude:
                hidden += 1
                continue
            shown.append(hit)
            self.texts.setdefault(hit.chunk_id, self._text(hit))
        key = normalize_query(query)
        state.episode_queries.add(key)
        state.round_queries.add(key)
        state.queries.append(query)
        state.searches += 1
        state.round_searches += 1
        state.shown_this_round.update(h.chunk_id for h in shown)
        new = [h.chunk_id for h in shown if h.chunk_id not in state.seen]
        for chunk_id in new:
            state.seen[chunk_id] = query
        # new = not yet shown this round and not saved: exactly what the filter lets through
        state.no_new_streak = 0 if shown else state.no_new_streak + 1
        if state.no_new_streak >= limits.no_new_warning_after:
            warnings.append(
                f"{state.no_new_streak} searches in a row brought no new passage; change approach: other "
                "keywords, a different entity from the evidence, or save_and_advance / finalize_ranking."
            )
        call.results = [ShownHit(chunk_id=h.chunk_id, score=h.score, rank=h.rank) for h in shown]
        call.new_chunk_ids = new
        call.warnings = warnings
        call.message = format_results(
            query, [(h.chunk_id, h.score, cut(self.texts[h.chunk_id], self.snippet_chars)) for h in shown], hidden,
            warnings,
        )
        return ""

    def _run_search(self, query: str, k: int) -> list[Any]:
        error: Exception | None = None
        for _ in range(self.limits.search_retries + 1):
            try:
                return list(self.agent.searcher.search(query, k))
            except Exception as exc:  # noqa: BLE001 - retried, then reported to the model
                error = exc
        raise Rejection.one(
            "search_failed",
            f"the search failed {self.limits.search_retries + 1} times ({type(error).__name__}: {error}); "
            "try another query.",
        )

    def _text(self, hit: Any) -> str:
        if self.agent.text_of is not None:
            try:
                return self.agent.text_of(hit.chunk_id) or hit.snippet
            except KeyError:
                return hit.snippet
        return hit.snippet

    def _save(self, args: Any, call: CallTrace, context: set[str]) -> str:
        state = self.state
        call.warnings = guardrails.check_save(args, state, context, self.limits)
        for chunk_id in args.drop_from_saved:
            state.saved.pop(chunk_id, None)
        updated = 0
        for item in args.saved_chunks:
            before = state.saved.get(item.chunk_id)
            updated += before is not None
            # a saved chunk passed again keeps its place and text, with the new reason
            state.saved[item.chunk_id] = SavedChunk(
                chunk_id=item.chunk_id, reason=item.reason.strip(),
                text=self.texts.get(item.chunk_id) or (before.text if before else ""),
            )
        state.covered = list(args.covered_concepts)
        state.unresolved = list(args.unresolved_concepts)
        state.summary = args.round_summary.strip()
        state.goal = args.next_round_goal.strip()
        call.message = (f"Saved {len(args.saved_chunks)} chunk(s)" + (f" ({updated} reason(s) updated)" if updated else "")
                        + f"; {len(state.saved)} saved in all. Round {state.round_no} ends.")
        if call.warnings:
            call.message += " " + " ".join(f"Warning: {w}" for w in call.warnings)
            self.trace.warnings.extend(call.warnings)
        return "save"

    def _finalize(self, args: Any, call: CallTrace, context: set[str]) -> str:
        ranking, warnings = guardrails.check_finalize(args, self.state, context, self.limits)
        call.warnings = warnings
        self.trace.warnings.extend(warnings)
        self.state.covered = list(args.covered_concepts)
        self.state.unresolved = list(args.unresolved_concepts)
        n = len(ranking)
        self.final = [RankedChunk(chunk_id=c.chunk_id, reason=c.reason.strip(), score=float(n - i)) for i, c in enumerate(ranking)]
        call.message = f"Ranking of {n} chunk(s) accepted." + "".join(f" Warning: {w}" for w in warnings)
        return "finalize"


def _refuse(call: CallTrace, rejection: Rejection) -> None:
    call.rejected = True
    call.rejection = rejection.code
    call.message = rejection.text


def _as_json(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
            return value if isinstance(value, dict) else {"_raw": raw}
        except json.JSONDecodeError:
            return {"_raw": raw}
    return {"_raw": raw}
