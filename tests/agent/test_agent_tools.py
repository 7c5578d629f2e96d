"""Our three tool schemas against the released ones (DESIGN.md, "The released tool schemas"),
and the small profile's output limit against the longest reply it must hold."""

from __future__ import annotations

import json

import pytest

from factory.agent.tools import FINALIZE, SAVE, SEARCH, action_schema, parse_actions, tool_specs
from factory.settings import AgentLimits, Settings

# name -> argument -> (JSON type, required), as the released harness states them
RELEASED = {
    SEARCH: {"query": ("string", True), "top_k": ("integer", False)},
    SAVE: {"saved_chunks": ("array", True), "drop_from_saved": ("array", False),
           "covered_concepts": ("array", True), "unresolved_concepts": ("array", True)},
    FINALIZE: {"ranking": ("array", True), "covered_concepts": ("array", True), "unresolved_concepts": ("array", False)},
}
OURS = {SAVE: {"round_summary": ("string", True), "next_round_goal": ("string", True)}}  # what carries between rounds


@pytest.fixture(scope="module")
def specs():
    return {s.name: s for s in tool_specs(AgentLimits())}


def test_names_types_and_required_flags_are_the_released_ones(specs):
    assert list(specs) == [SEARCH, SAVE, FINALIZE]
    for name, arguments in RELEASED.items():
        params = specs[name].parameters
        expected = {**arguments, **OURS.get(name, {})}
        assert params["type"] == "object"
        assert set(params["properties"]) == set(expected), name
        for arg, (kind, required) in expected.items():
            assert params["properties"][arg]["type"] == kind, (name, arg)
            assert (arg in params["required"]) is required, (name, arg)


def test_limits_are_the_released_ones(specs):
    limits = AgentLimits()
    search = specs[SEARCH].parameters["properties"]
    assert search["top_k"]["default"] == 5 == limits.top_k_default
    save = specs[SAVE].parameters["properties"]
    final = specs[FINALIZE].parameters["properties"]
    for chunks in (save["saved_chunks"], final["ranking"]):
        item = chunks["items"]
        assert item["type"] == "object" and item["required"] == ["chunk_id", "reason"]
        assert item["properties"]["chunk_id"]["type"] == item["properties"]["reason"]["type"] == "string"
        assert item["properties"]["reason"]["minLength"] == 20 == limits.min_reason_chars  # MIN_REASON_LEN
    assert final["ranking"]["minItems"] == 1  # not empty
    assert "minItems" not in save["saved_chunks"]  # "at least one saved chunk" is the harness's rule, with its message
    assert save["drop_from_saved"]["items"]["type"] == "string" and save["drop_from_saved"]["default"] == []
    for concepts in (save["covered_concepts"], save["unresolved_concepts"], final["covered_concepts"]):
        assert concepts["items"]["type"] == "string"
    assert final["unresolved_concepts"]["default"] == []
    assert save["round_summary"]["minLength"] == 50 and save["next_round_goal"]["minLength"] == 30


def test_descriptions_state_the_released_semantics(specs):
    search, save, final = (specs[n].description for n in (SEARCH, SAVE, FINALIZE))
    assert "several times in one turn" in search and "each call counts" in search
    assert "{chunk_id" not in search and "chunk_id, a snippet and a score" in search
    assert "earlier round but not saved can come back" in search and "call again" in search
    for text in (save, final):
        assert "current context" in text and "retried" in text
    assert "updates its reason" in save and "both saved_chunks and drop_from_saved" in save
    assert "half or more" in final and "last round" in final


def test_the_json_protocol_takes_one_action_or_a_list():
    limits = AgentLimits()
    schema = action_schema(limits)
    singles, several = schema["anyOf"][:3], schema["anyOf"][3]
    assert [s["properties"]["action"]["const"] for s in singles] == [SEARCH, SAVE, FINALIZE]
    many = several["properties"]["actions"]
    assert several["type"] == "object" and many["type"] == "array" and many["items"]["anyOf"] == singles
    assert many["maxItems"] == limits.max_calls_per_turn
    one = {"action": SEARCH, "arguments": {"query": "a"}}
    assert parse_actions(json.dumps(one), None) == [(SEARCH, {"query": "a"})]
    assert parse_actions("", {"actions": [one, one]}) == [(SEARCH, {"query": "a"})] * 2
    assert parse_actions("Let me search [twice]: " + json.dumps([one, one]), None) == [(SEARCH, {"query": "a"})] * 2


def test_a_list_of_actions_passes_the_structured_output_check():
    from factory.llm.structured import check_output
    from factory.llm.types import LLMRequest, LLMResponse

    limits = AgentLimits()
    request = LLMRequest.chat(None, "q", output_schema=action_schema(limits), schema_name="agent_action")
    one = {"action": SEARCH, "arguments": {"query": "a"}}
    for reply in (one, {"actions": [one, one]}):
        checked = check_output(request, LLMResponse(text=json.dumps(reply)))
        assert checked.parse_error is None and checked.parsed == reply


def ten_chunk_finalize(reason: str, ids: str) -> str:
    """The longest ordinary reply of the small model: a 10-chunk ranking, 20-character reasons."""
    assert len(reason) == 20
    ranking = [{"chunk_id": ids.format(i), "reason": reason} for i in range(10)]
    body = {"action": FINALIZE, "arguments": {"ranking": ranking, "unresolved_concepts": [],
                                              "covered_concepts": ["the town", "the river", "the flood"]}}
    return json.dumps(body, ensure_ascii=False)


REPLIES = {
    "en": ten_chunk_finalize("it names the bridge.", "enwv-ee639c954f_{}"),
    "ru": ten_chunk_finalize("это фрагмент о мосте", "ruwn-train-10{}_0"),
}


def test_the_small_profiles_output_limit_fits_a_ten_chunk_finalize_with_room_to_spare():
    limit = Settings().agent.small.max_output_tokens
    for lang, reply in REPLIES.items():
        # 1.5 characters a token: fewer than small tokenizers manage on Cyrillic JSON (SmolLM2: 1.76)
        tokens = len(reply) / 1.5
        assert tokens <= 0.8 * limit, (lang, len(reply), limit)


@pytest.mark.slow
def test_the_small_profiles_output_limit_with_the_embedded_models_tokenizer():
    llama_cpp = pytest.importorskip("llama_cpp")
    from factory.llm.llamacpp_backend import SMOLLM2

    try:
        path = SMOLLM2.path()
    except Exception as exc:  # noqa: BLE001 - the model package is optional
        pytest.skip(str(exc))
    vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    limit = Settings().agent.small.max_output_tokens
    for lang, reply in REPLIES.items():
        tokens = len(vocab.tokenize(reply.encode(), add_bos=False))
        assert tokens <= 0.7 * limit, (lang, tokens, limit)  # measured: en 364, ru 474 of 768
