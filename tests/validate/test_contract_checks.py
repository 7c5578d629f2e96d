"""The contract (what a question may name, what it must hide) as leakage and answerable apply it."""

from __future__ import annotations

from factory.contract import audit_contract, figure_names, subgraph_contract
from factory.records import Cell, Draft, ReasoningStep, Subgraph
from factory.validate.answerable import AnswerableValidator, computed, quoted_in, same_number, stated_results
from factory.validate.base import DictChunks, ValidationContext
from factory.validate.leakage import LeakageValidator, find_leak
from factory.settings import ValidateSettings
from factory.validate.tokens import Lexicon, content, tokenize

TEXTS = {
    "times_0": "The New York Times is an American daily newspaper based in New York City, founded in 1851.",
    "city_0": "New York City is the most populous city in the United States; its five boroughs include Brooklyn.",
    "gujarat_0": "Gujarat covers 196,024 km2 and lies on the western coast of India.",
    "rajasthan_0": "Rajasthan, north-east of Gujarat, covers 342,239 km2, the largest area of any Indian state.",
}
LEXICON = Lexicon.from_texts(["the parish church stood by whales and marks on the old john boat", *TEXTS.values()])


def ctx(subgraph: Subgraph | None = None) -> ValidationContext:
    base = ValidationContext(settings=ValidateSettings(), chunks=DictChunks(TEXTS, {c: "" for c in TEXTS}),
                             lexicon=LEXICON)
    return base.for_item("t", subgraph)


def draft(question: str, answer: str, support: list[str], answer_chunk: str, steps=(), cell="chain/direct/place",
          bridges=()) -> Draft:
    return Draft(draft_id="d", candidate_id="c", lang="en", cell=Cell.parse(cell), question=question, answer=answer,
                 support_chunk_ids=support, answer_chunk_id=answer_chunk, steps=list(steps),
                 bridge_entities=list(bridges))


def leak(question: str, name: str, **kw):
    q = content(tokenize(question, "en"))
    return find_leak(q, name, "en", LEXICON, threshold=0.88, **kw)


def test_near_matches_only_on_rare_or_capitalised_words():
    assert leak("Which parish lies nearest the river?", "Paris") is None
    assert leak("Where do whales gather in spring?", "Wales") is None
    assert leak("Who left marks on the wall?", "Karl Marx") is None
    assert leak("Which city lies near Parris?", "Paris") is not None  # capitalised: a name is meant


def test_a_first_name_alone_names_nobody_a_surname_does():
    assert leak("Which John wrote the letter?", "John Smith", person=True) is None
    assert leak("Which Smith wrote the letter?", "John Smith", person=True) is not None


def test_a_surname_that_is_an_ordinary_word_leaks_where_it_is_written_as_a_name():
    """Draw 10 written again, en-007: 'Plant?' appended to a question whose answer is Robert
    Plant was the one planted leak the gauntlet let through ('plant' is an ordinary word)."""
    from factory.validate.tokens import proper_starts

    lexicon = Lexicon.from_texts(["the plant grew by the old boat", *TEXTS.values()])

    def leaks(question: str, name: str = "Robert Plant", person: bool = True) -> bool:
        tokens = content(tokenize(question, "en"))
        return find_leak(tokens, name, "en", lexicon, threshold=0.88, person=person,
                         proper=proper_starts(question, tokens)) is not None

    assert leaks("Name the group's singer, Plant?")
    assert leaks("Name the group's singer. Plant?")  # a sentence of its own: still his name
    assert not leaks("Which singer sang of a plant that grew by the river?")  # the ordinary word
    assert not leaks("Which river powers the Old Plant?", name="Plant Hall", person=False)  # not a person


def test_a_value_with_a_unit_leaks_only_by_its_number():
    assert leak("By how many square kilometres is it larger?", "146,215 square kilometres") is None
    assert leak("How many km2 larger is it?", "146,215 km2") is None
    assert leak("Is it 146,215 km2?", "146,215 km2") is not None
    # spelled out, the number is a stop word: the unit alone is all that is left, and names nothing
    assert leak("How long was that office, in years?", "five years") is None


def test_names_the_question_may_use_never_leak_a_hidden_one():
    sub = Subgraph(cell=Cell.parse("chain/direct/place"), lang="en", chunk_ids=["times_0", "city_0"],
                   answer_entity="new york city", constraint_entities=["the new york times"],
                   roles={"times_0": "start", "city_0": "answer"}, seed_chunk_ids=["times_0"],
                   figures={"entities": {"new york city": {"name": "New York City"},
                                         "the new york times": {"name": "The New York Times"}}})
    d = draft("In which borough-divided city is The New York Times based?", "New York City",
              ["times_0", "city_0"], "city_0")
    verdict = LeakageValidator().check(d, ctx(sub))
    assert verdict.ok, verdict.feedback  # 'New York' belongs to the name the question may use
    bare = d.model_copy(update={"question": "Which borough-divided city is New York?"})
    assert not LeakageValidator().check(bare, ctx(sub)).ok


def test_contract_by_role_and_without_roles():
    sub = Subgraph(cell=Cell.parse("chain/direct/place"), lang="en", chunk_ids=["times_0", "city_0"],
                   answer_entity="new york city", bridge_entities=[], constraint_entities=["the new york times"],
                   roles={"times_0": "start", "city_0": "answer"},
                   figures={"entities": {"new york city": {"name": "New York City", "aliases": ["NYC"]},
                                         "the new york times": {"name": "The New York Times"}}})
    d = draft("q", "New York City", ["times_0", "city_0"], "city_0")
    contract = subgraph_contract(d, sub, figure_names(sub))  # an older subgraph: seeds by role
    assert contract.seed_passages == ("times_0",) and contract.hidden_passages == ("city_0",)
    assert contract.may_name == ("The New York Times",) and "NYC" in contract.must_hide
    assert contract.answer_is_hidden()
    audited = audit_contract(d, lambda c: c == "times_0")
    assert audited.seed_passages == ("times_0",) and audited.may_name == ()


STEPS = [ReasoningStep(chunk_id="times_0", quote="based in New York City", finding="the paper's city"),
         ReasoningStep(chunk_id="city_0", quote="its five boroughs include Brooklyn", finding="a borough")]


def test_answerable_accepts_a_path_through_every_passage_on_quoted_words():
    sub = Subgraph(cell=Cell.parse("chain/direct/place"), lang="en", chunk_ids=["times_0", "city_0"],
                   roles={"times_0": "start", "city_0": "answer"}, seed_chunk_ids=["times_0"])
    d = draft("Which borough of the paper's home city...?", "Brooklyn", ["times_0", "city_0"], "city_0", STEPS)
    verdict = AnswerableValidator().check(d, ctx(sub))
    assert verdict.ok and verdict.figures["answer"] == "quoted"


def test_answerable_refuses_what_the_passages_do_not_back():
    sub = Subgraph(cell=Cell.parse("chain/direct/place"), lang="en", chunk_ids=["times_0", "city_0"],
                   roles={"times_0": "start", "city_0": "answer"}, seed_chunk_ids=["times_0"])
    base = draft("q?", "Brooklyn", ["times_0", "city_0"], "city_0", STEPS)

    def reason(**update):
        return AnswerableValidator().check(base.model_copy(update=update), ctx(sub)).reason

    assert reason(steps=[]) == "no_steps"
    assert reason(steps=[STEPS[0], STEPS[1].model_copy(update={"quote": "its six boroughs include Brooklyn"})]) \
        == "quote_not_found"
    assert reason(steps=[STEPS[0]]) == "passage_unused"
    assert reason(steps=[STEPS[1], STEPS[0]]) == "not_from_seed"
    assert reason(answer="Queens") == "answer_not_reached"
    assert reason(steps=[STEPS[0].model_copy(update={"quote": "New"}), STEPS[1]]) == "quote_too_short"


def test_quotes_compare_across_quote_marks_dashes_spaces_and_case():
    assert quoted_in("«Новой  газеты» — 1993", "Редакция «новой газеты» - 1993 года")
    assert not quoted_in("a span that is not there", "some other passage text")


def test_a_computed_answer_comes_from_numbers_quoted_in_two_passages():
    sub = Subgraph(cell=Cell.parse("calculation/direct/number"), lang="en", chunk_ids=["gujarat_0", "rajasthan_0"],
                   roles={"gujarat_0": "operand", "rajasthan_0": "operand"}, seed_chunk_ids=["gujarat_0"])
    steps = [ReasoningStep(chunk_id="gujarat_0", quote="Gujarat covers 196,024 km2", finding="its area"),
             ReasoningStep(chunk_id="rajasthan_0", quote="covers 342,239 km2", finding="342,239 - 196,024")]
    d = draft("By how much...?", "146,215", ["gujarat_0", "rajasthan_0"], "rajasthan_0", steps,
              cell="calculation/direct/number")
    verdict = AnswerableValidator().check(d, ctx(sub))
    assert verdict.ok and verdict.figures["answer"] == "computed"
    assert not computed("146,215", ["covers 342,239 km2 and 196,024 km2"], "en")  # both from one passage
    # outside a calculation, a span's own two numbers may give the answer (a reign's length)
    assert computed("5 years", ["Voivode of Transylvania (1571–1576)"], "en", across=False)
    assert not computed("6 years", ["Voivode of Transylvania (1571–1576)"], "en", across=False)


def test_a_calculation_s_answer_is_the_result_its_steps_state():
    """Draw 11, en-015: the planted miscomputed answer 13 (3 x 2 + 7) passed as 2010 - 1997 from
    the same quotes, while the last step said "1997 - 1995 = 2. Answer: 2." Where the findings
    state a result, the answer must be one of them; a rounded answer is the result it rounds."""
    sub = Subgraph(cell=Cell.parse("calculation/direct/number"), lang="en", chunk_ids=["gujarat_0", "rajasthan_0"],
                   roles={"gujarat_0": "operand", "rajasthan_0": "operand"}, seed_chunk_ids=["gujarat_0"])
    steps = [ReasoningStep(chunk_id="gujarat_0", quote="Gujarat covers 196,024 km2", finding="its area"),
             ReasoningStep(chunk_id="rajasthan_0", quote="covers 342,239 km2",
                           finding="342,239 - 196,024 = 146,215 km2. Answer: 146,215 km2.")]
    d = draft("By how much...?", "146,215", ["gujarat_0", "rajasthan_0"], "rajasthan_0", steps,
              cell="calculation/direct/number")
    assert AnswerableValidator().check(d, ctx(sub)).ok
    # 538,263 is also a sum of the two quoted areas, but not what the steps computed
    wrong = AnswerableValidator().check(d.model_copy(update={"answer": "538,263"}), ctx(sub))
    assert not wrong.ok and wrong.reason == "answer_not_stated" and "146,215" in wrong.feedback
    assert stated_results("7,097,329 - 6,000,000 = 1,097,329. Answer: about 1.1 million.") == \
        ["1,097,329", "1.1 million"]
    assert same_number("about 1.1 million", "1,097,329", "en") and same_number("698", "697.8", "en")
    assert not same_number("13", "2", "en")
    assert stated_results("2013 − 1983 = 30, но полных лет 29. Ответ: 29 лет.") == ["30", "29 лет"]
    assert stated_results("the two areas, 342,239 and 196,024") == []  # nothing stated: nothing compared


def test_a_number_a_passage_writes_in_words_is_a_quoted_number():
    """Reference draw 10, ru-021 (reselected): 12 killed in one attack and «четырёх» in the other
    make 16; the count was refused as not reached while only digits were read."""
    assert computed("16", ["в результате которого погибли 12 человек", "убил четырёх сотрудников"], "ru")
    assert computed("16 people", ["12 were killed", "four more died"], "en")
    assert not computed("17", ["12 were killed", "four more died"], "en")
    # "one" is an article or a pronoun far more often than a count: it is no operand
    assert not computed("13", ["12 were killed", "one of the gunmen fled"], "en")
    assert not computed("13", ["погибли 12 человек", "один из нападавших скрылся"], "ru")


def test_a_scale_word_multiplies_its_number_and_sets_the_answers_rounding():
    """Draw 10 written again, en-037: Nicaragua's 7,097,329 less El Salvador's "approximately 6
    million" was refused as not reached, about 1.1 million and the exact 1,097,329 alike, while
    "6 million" was read as 6."""
    quotes = ["With a population of 7,097,329 as of 2026",
              "El Salvador's population was estimated at approximately 6 million inhabitants"]
    assert computed("1,097,329", quotes, "en")
    assert computed("about 1.1 million", quotes, "en")  # 1,097,329 rounds to it
    assert not computed("1.2 million", quotes, "en")
    assert not computed("1,197,329", quotes, "en")  # a plain number is exact to 0.5%
    ru = ["население составляет 7 097 329 человек", "около 6 млн жителей"]
    assert computed("1,1 млн", ru, "ru") and not computed("1,3 млн", ru, "ru")
    assert computed("2,04 млрд", ["2,5 млрд долларов", "460 млн долларов"], "ru")


def test_a_duration_is_counted_between_two_quoted_dates():
    """A calculation asking "how many months / days" is answered by two dated quotes (reference
    draw 6, ru-000 and ru-038: the count was refused as not reached before dates were read)."""
    may, december = "Сенат США 17 мая 2018 года утвердил Хаспел", "конкурс завершился 17 декабря 2018 года в Бангкоке"
    assert computed("7 месяцев", [december, may], "ru")
    assert not computed("8 месяцев", [december, may], "ru")
    assert not computed("7 месяцев", [f"{december}; {may}"], "ru")  # both dates from one passage
    assert computed("117 дней", ["скончалась 8 июля 2018 года", "тело обнаружено 13 марта 2018 года"], "ru")
    # a month without its day counts by calendar month; the completed months count too
    assert computed("7 месяцев", ["вступил в силу 27 июня 2017 года", "В ноябре 2016 года приняла закон"], "ru")
    assert computed("6 months", ["on 17 May 2018", "on December 10, 2018"], "en")
    assert computed("7 months", ["on 17 May 2018", "on December 10, 2018"], "en")
    assert computed("3 weeks", ["opened on 1 May 2001", "closed on May 22, 2001"], "en")
    assert not computed("3 days", ["opened on 1 May 2001", "closed on May 22, 2001"], "en")
    assert not computed("3", ["opened on 1 May 2001", "closed on May 22, 2001"], "en")  # no unit: no date count
