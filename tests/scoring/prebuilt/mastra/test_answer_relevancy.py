"""Answer relevancy (Mastra's formula over the judge's yes/unsure/no labels, its prompts, repair).

The judge's answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; expected scores are computed by hand from Mastra's formula.
"""

from __future__ import annotations

import json

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import MODEL, relevancy_replies
from tests.support.llm_server import LLMServer, json_reply, text_reply
from tests.support.runs import agent_run
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.mastra.answer_relevancy import create_answer_relevancy_scorer

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France. It is big. I like bread."


@pytest.mark.parametrize(
    ("labels", "options", "expected"),
    [
        (["yes", "unsure", "unsure", "no", "no"], {}, 0.32),  # (1 + 2 x 0.3) / 5
        (["yes", "yes", "no"], {}, 0.67),  # 2 / 3 = 0.666.. -> 0.67
        (["unsure", "unsure", "unsure"], {"uncertainty_weight": 0.5}, 0.5),  # 1.5 / 3
        (["yes", "unsure", "unsure", "no", "no"], {"scale": 10}, 3.2),  # 0.32 x 10
        (["yes", "yes"], {}, 1.0),
        (["no", "no", "no", "no"], {}, 0.0),
        ([" YES ", "Unsure"], {}, 0.65),  # labels compared trimmed and lower-cased, as Mastra
    ],
)
async def test_answer_relevancy_formula(
    llm_server: LLMServer, judge: Judge, labels: list[str], options: dict[str, float], expected: float
) -> None:
    llm_server.script(*relevancy_replies(labels))
    result = await create_answer_relevancy_scorer(judge, **options).run(agent_run(QUESTION, ANSWER))
    assert result.score == expected
    assert result.reason == "The score is fine."
    assert result.scorer_id == "answer-relevancy"
    assert len(llm_server.chat_requests) == 3


async def test_answer_relevancy_prompts_delimit_trace_content(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(*relevancy_replies(["yes", "unsure"]))
    result = await create_answer_relevancy_scorer(judge, scale=10).run(agent_run(QUESTION, ANSWER))
    assert result.score == 6.5
    extract, analyze, reason = (llm_server.user_prompt(i) for i in range(3))
    assert "You are a balanced and nuanced answer relevancy evaluator" in llm_server.system_prompt(0)
    assert extract.startswith("Given the text, break it down into meaningful statements")
    assert f'label="output">\n{ANSWER}\n</data-' in extract
    # The question goes in JSON-quoted (Mastra's JSON.stringify), the statements one per line.
    assert f'label="input">\n"{QUESTION}"\n</data-' in analyze
    assert 'label="statements">\nstatement 0\nstatement 1\n</data-' in analyze
    assert "Number of statements: 2" in analyze
    assert "Score: 6.5" in reason and "0 is the lowest and 10 is the highest" in reason
    results_json = json.dumps(
        [{"result": "yes", "reason": "because 0"}, {"result": "unsure", "reason": "because 1"}],
        separators=(",", ":"),
    )
    assert f'label="results">\n{results_json}\n</data-' in reason
    assert result.generate_reason_prompt == reason


async def test_answer_relevancy_no_statements_scores_zero(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(
        json_reply({"statements": []}), json_reply({"results": []}), text_reply("Nothing to judge.")
    )
    result = await create_answer_relevancy_scorer(judge).run(agent_run(QUESTION, ""))
    assert result.score == 0
    assert "Number of statements: 0" in llm_server.user_prompt(1)
    assert result.reason == "Nothing to judge."


async def test_answer_relevancy_invalid_label_fails_after_repair(llm_server: LLMServer, judge: Judge) -> None:
    bad = json_reply({"results": [{"result": "maybe", "reason": "?"}]})
    llm_server.script(json_reply({"statements": ["s"]}), bad, bad)
    scorer = create_answer_relevancy_scorer(judge)
    with pytest.raises(ScorerError) as caught:
        await scorer.run(agent_run(QUESTION, ANSWER))
    assert caught.value.step == "analyze"
    assert "invalid JSON twice" in str(caught.value) and "'yes', 'no' or 'unsure'" in str(caught.value)
    # The extract call, the analyze call and its one repair round; no score, no reason call.
    assert len(llm_server.chat_requests) == 3
    repair = llm_server.chat_requests[2].messages
    assert repair[-1]["content"].startswith("Your answer was not valid JSON for the required schema")


async def test_answer_relevancy_invalid_label_repaired(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(
        json_reply({"statements": ["s1", "s2"]}),
        json_reply({"results": [{"result": "partly", "reason": "?"}, {"result": "yes", "reason": "ok"}]}),
        json_reply({"results": [{"result": "unsure", "reason": "?"}, {"result": "yes", "reason": "ok"}]}),
        text_reply("Repaired."),
    )
    result = await create_answer_relevancy_scorer(judge).run(agent_run(QUESTION, ANSWER))
    assert result.score == 0.65  # (1 + 0.3) / 2


def test_answer_relevancy_rejects_bad_options() -> None:
    judge = Judge(MODEL)
    with pytest.raises(ValueError, match="uncertainty_weight"):
        create_answer_relevancy_scorer(judge, uncertainty_weight=1.5)
    with pytest.raises(ValueError, match="scale"):
        create_answer_relevancy_scorer(judge, scale=0)
