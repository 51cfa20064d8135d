"""What the Mastra scorers' tests script the judge to answer, the runs several of them score, and
readers of the prompts the judge was sent."""

from __future__ import annotations

from typing import Any

from tests.support.llm_server import Reply, json_reply, text_reply
from tests.support.runs import agent_run
from tracescore.schemas import AgentRun, Message, RunInput
from tracescore.schemas.agent_run import Role

MODEL = "openai/gpt-4o-mini"


# --- the prompts the judge was sent --------------------------------------------------------------


def data_block(prompt: str, label: str = "context") -> str:
    """The text inside the first data block with this label."""
    start = prompt.index(f'label="{label}">\n') + len(f'label="{label}">\n')
    return prompt[start : prompt.index("\n</data-", start)]


# --- runs ----------------------------------------------------------------------------------------


def deal_run(
    answer: str = "The executive closed the deal.",
    question: str = "Who closed the deal?",
    context: list[str] | None = None,
) -> AgentRun:
    """The run the bias, toxicity and context scorers' tests score (its agent is called "agent")."""
    return agent_run(
        question, answer, context=context, agent_name="agent", trace_id=f"{1:032x}", span_id=f"{1:016x}"
    )


def haiku_run(
    user: str = "Write a haiku about rain.",
    answer: str = "Soft rain on the roof",
    system: str | None = "Answer in English only.",
) -> AgentRun:
    """The prompt-alignment tests' run; an empty ``user`` or ``answer`` leaves that message out."""
    return agent_run(
        user or None, answer or None, system=system, agent_name="poet", trace_id="1" * 32, span_id="1" * 16
    )


# Noise sensitivity in CI/offline: the run answers a noisy query; the options hold the clean answer.
BASELINE = "Exercise improves heart health and mood."
NOISY_QUERY = "What are the benefits of exercise? Also, aliens built the pyramids."


def noisy_run() -> AgentRun:
    return haiku_run(
        user="What are the benefits of exercise?",
        answer="Exercise improves heart health. The pyramids are old.",
        system=None,
    )


# --- answers -------------------------------------------------------------------------------------


def relevancy_replies(labels: list[str], reason: str = "The score is fine.") -> list[Reply]:
    """Answer relevancy: one statement per label, then a result per statement, then the reason."""
    statements = [f"statement {i}" for i in range(len(labels))]
    return [
        json_reply({"statements": statements}),
        json_reply(
            {"results": [{"result": label, "reason": f"because {i}"} for i, label in enumerate(labels)]}
        ),
        text_reply(reason),
    ]


def claim_replies(verdicts: list[str], reason: str = "Because.", key: str = "claim") -> list[Reply]:
    """Faithfulness (``key="claim"``) and hallucination (``key="statement"``): claims, verdicts, reason."""
    claims = [f"claim {i}" for i in range(len(verdicts))]
    return [
        json_reply({"claims": claims}),
        json_reply(
            {
                "verdicts": [
                    {key: c, "verdict": v, "reason": "r"} for c, v in zip(claims, verdicts, strict=True)
                ]
            }
        ),
        text_reply(reason),
    ]


def similarity_replies(
    match_types: list[str], *, contradictions: int = 0, extras: int = 0, units: list[str] | None = None
) -> list[Reply]:
    """Answer similarity: the semantic units, the analysis of ``match_types``, then the reason."""
    analysis = {
        "matches": [
            {
                "groundTruthUnit": f"truth {i}",
                "outputUnit": None if kind == "missing" else f"out {i}",
                "matchType": kind,
                "explanation": "e",
            }
            for i, kind in enumerate(match_types)
        ],
        "extraInOutput": [f"extra {i}" for i in range(extras)],
        "contradictions": [
            {"outputUnit": f"out {i}", "groundTruthUnit": f"truth {i}", "explanation": "opposite"}
            for i in range(contradictions)
        ],
    }
    return [
        json_reply({"outputUnits": units or ["out 0"], "groundTruthUnits": ["truth 0", "truth 1"]}),
        json_reply(analysis),
        text_reply("Similar enough."),
    ]


def verdicts(key: str, label: str, labels: list[str]) -> Reply:
    """``{key: [{label: value, "reason": ...}, ...]}`` (bias, toxicity, context recall)."""
    return json_reply({key: [{label: value, "reason": f"r{i}"} for i, value in enumerate(labels)]})


def evaluations(rated: list[tuple[str, bool]], missing: list[str] | None = None) -> Reply:
    """Context relevance: a (relevance level, used) evaluation per context piece, missing context."""
    rows = [
        {
            "context_index": i,
            "contextPiece": f"piece {i}",
            "relevanceLevel": level,
            "wasUsed": used,
            "reasoning": f"why {i}",
        }
        for i, (level, used) in enumerate(rated)
    ]
    return json_reply({"evaluations": rows, "missingContext": missing or [], "overallAssessment": "ok"})


def alignment_analysis(
    intent: float, requirements: float, completeness: float, appropriateness: float
) -> dict[str, Any]:
    """Prompt alignment: an analysis with these four dimension scores (1 of 2 requirements met)."""
    return {
        "intentAlignment": {
            "score": intent,
            "primaryIntent": "a haiku about rain",
            "isAddressed": True,
            "reasoning": "it is about rain",
        },
        "requirementsFulfillment": {
            "requirements": [
                {"requirement": "haiku form", "isFulfilled": False, "reasoning": "one line only"},
                {"requirement": "about rain", "isFulfilled": True, "reasoning": "mentions rain"},
            ],
            "overallScore": requirements,
        },
        "completeness": {"score": completeness, "missingElements": ["two lines"], "reasoning": "short"},
        "responseAppropriateness": {
            "score": appropriateness,
            "formatAlignment": False,
            "toneAlignment": True,
            "reasoning": "poetic tone",
        },
        "overallAssessment": "partly aligned",
    }


NOISE_DIMENSIONS = [
    "content_accuracy",
    "completeness",
    "relevance",
    "consistency",
    "hallucination_resistance",
]


def noise_analysis(robustness: Any, levels: list[str], issues: list[str] | None = None) -> dict[str, Any]:
    """Noise sensitivity: the judge's robustness score, an impact level per dimension, major issues."""
    answer: dict[str, Any] = {
        "dimensions": [
            {
                "dimension": NOISE_DIMENSIONS[i],
                "impactLevel": level,
                "specificChanges": "c",
                "noiseInfluence": "n",
            }
            for i, level in enumerate(levels)
        ],
        "overallAssessment": "mostly robust",
        "robustnessScore": robustness,
    }
    if issues is not None:
        answer["majorIssues"] = issues
    return answer


def rubric_answer(*verdicts: tuple[str, bool, bool], overall: str = "Overall.") -> Reply:
    """Rubric: a (criterion, satisfied, required) verdict per criterion."""
    criteria = [
        {"criterion": c, "satisfied": s, "required": r, "reasoning": f"why {i}"}
        for i, (c, s, r) in enumerate(verdicts)
    ]
    return json_reply({"criteria": criteria, "overallAssessment": overall})


def source_judgement(*supported: bool, questions: int) -> Reply:
    """Summarization's preprocess: whether the source supports each claim, and the questions q0.."""
    claims = [{"claim": f"claim {i}", "supported": s, "reason": "r"} for i, s in enumerate(supported)]
    return json_reply({"alignment": claims, "questions": [f"q{i}" for i in range(questions)]})


def coverage(*answered: bool) -> Reply:
    """Summarization's analyze: whether the summary answers each question q0.."""
    return json_reply(
        {"coverage": [{"question": f"q{i}", "answered": a, "reason": "r"} for i, a in enumerate(answered)]}
    )


# --- rubric, summarization and multi-turn judge: conversations -----------------------------------

ACME_QUESTION = "Summarize: Acme was founded in Boston in 2015 and moved to Seattle in 2018."
ACME_ANSWER = "Acme, founded in Boston in 2015, later moved to Seattle."


def conversation_run(
    output: list[tuple[Role, str]] | str = ACME_ANSWER,
    *,
    inputs: list[tuple[Role, str]] | str = ACME_QUESTION,
    remembered: list[tuple[Role, str]] | None = None,
) -> AgentRun:
    """A run whose output, input and remembered messages are (role, text) pairs; a string is one
    assistant message (output) or one user message (input)."""

    def messages(value: list[tuple[Role, str]] | str, role: Role) -> list[Message]:
        pairs = [(role, value)] if isinstance(value, str) else value
        return [Message(role=r, content=text) for r, text in pairs]

    return AgentRun(
        trace_id=f"{7:032x}",
        span_id=f"{7:016x}",
        input=RunInput(
            input_messages=messages(inputs, "user"), remembered_messages=messages(remembered or [], "user")
        ),
        output=messages(output, "assistant"),
    )
