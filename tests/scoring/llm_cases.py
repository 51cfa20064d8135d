"""One row per LLM-judge scorer of the registry: options, a run, the judge's happy-path answers and
the score worked out by hand from the scorer's documented formula.

``tests/scoring/test_llm_failure_matrix.py`` drives every row through the same matrix (happy path,
rate limit, persistent 5xx, malformed JSON, timeout, edge cases). Answer shapes follow the
scorers' pydantic schemas; the per-scorer tests (``tests/scoring/prebuilt/<family>/test_<scorer>.py``)
hold the finer formula cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.support.llm_server import Reply, json_reply, text_reply
from tracescore.schemas import AgentRun
from tracescore.scoring.utils import create_agent_test_run, create_test_message, create_tool_invocation

MODEL = "openai/gpt-4o-mini"
EMBEDDING_MODEL = "openai/text-embedding-3-small"  # the ragas scorers' default embedding model
MODERATION_MODEL = "openai/omni-moderation-latest"

QUESTION = "What is the boiling point of water?"  # 7 whitespace words (embedding tokens)
ANSWER = "Water boils at 100 C at sea level."  # 8 words
GROUND_TRUTH = "Water boils at 100 C (212 F) at sea level; it changes with altitude."  # 14 words
# Scorers whose preprocess step already asks the judge (the others ask first in analyze).
PREPROCESS_ASKS_FIRST = frozenset(
    {"answer-relevancy", "faithfulness", "hallucination", "answer-similarity", "bias", "context-recall"}
    | {"ragas-answer-correctness", "ragas-answer-relevancy", "ragas-context-recall"}
    | {"ragas-context-entity-recall"}
    | {"summarization"}
)
CONTEXT = ["Water boils at 100 C at sea level.", "Boiling points fall with altitude."]


@dataclass(frozen=True)
class Case:
    """One LLM scorer, scored once on ``run`` with the judge answering ``happy`` in call order."""

    name: str  # the registry name
    options: dict[str, Any]  # the scorer's options, without ``judge``
    run: AgentRun
    happy: tuple[Reply, ...]  # chat answers, in the order the scorer asks
    score: float  # by hand from the documented formula
    needs: frozenset[str]  # what the scorer reads, by hand from its module
    judge_model: str = MODEL  # what the score row names (every model the run used, in order)
    model: str = MODEL  # the judge's model
    embed_tokens: int = 0  # embedding input tokens: one per whitespace word embedded
    vectors: dict[str, list[float]] = field(default_factory=dict)
    moderations: tuple[dict[str, float], ...] = ()  # answers of the /moderations endpoint
    # The "no statements" edge case: the judge's answers when it finds nothing to judge, and the
    # documented score for it (None: not a statement-based scorer).
    none_found: tuple[Reply, ...] = ()
    none_found_score: float | None = None
    id: str = ""  # the pytest id, when not the name

    @property
    def label(self) -> str:
        return self.id or self.name

    @property
    def first_step(self) -> str:
        """The pipeline step that makes the scorer's first judge call (a failure detail names it)."""
        return "preprocess" if self.name in PREPROCESS_ASKS_FIRST else "analyze"

    @property
    def chat_calls(self) -> int:
        return len(self.happy)

    @property
    def fault_endpoint(self) -> str:
        """Where this scorer's judge calls go: chat, or the moderation endpoint."""
        if self.moderations:
            return "moderations"
        return "chat" if self.happy else "embeddings"


def qa_run(
    answer: str = ANSWER,
    *,
    question: str = QUESTION,
    context: list[str] | None = None,
    ground_truth: Any = None,
    system: str | None = None,
) -> AgentRun:
    return create_agent_test_run(
        input_messages=question,
        output=answer,
        system_messages=system,
        context=context or [],
        ground_truth=ground_truth,
        trace_id="a" * 32,
        span_id="b" * 16,
    )


def tool_run(*tools: str, question: str = "What's the weather in Paris?") -> AgentRun:
    calls = [
        create_tool_invocation(f"call-{i}", tool, {"q": "x"}, {"ok": True}) for i, tool in enumerate(tools)
    ]
    message = create_test_message("It is sunny in Paris.", "assistant", tool_invocations=calls)
    return create_agent_test_run(
        input_messages=question, output=[message], trace_id="c" * 32, span_id="d" * 16
    )


def table(**columns: Any) -> list[dict[str, Any]]:
    """Rows from columns: a list gives one value per row; any other value repeats in every row."""
    length = max(len(value) for value in columns.values() if isinstance(value, list))
    return [
        {name: value[i] if isinstance(value, list) else value for name, value in columns.items()}
        for i in range(length)
    ]


def alignment(intent: float, requirements: float, completeness: float, appropriateness: float) -> Reply:
    return json_reply(
        {
            "intentAlignment": {"score": intent, "primaryIntent": "p", "isAddressed": True, "reasoning": "r"},
            "requirementsFulfillment": {
                "requirements": table(requirement=["q"], isFulfilled=True, reasoning="r"),
                "overallScore": requirements,
            },
            "completeness": {"score": completeness, "missingElements": [], "reasoning": "r"},
            "responseAppropriateness": {
                "score": appropriateness,
                "formatAlignment": True,
                "toneAlignment": True,
                "reasoning": "r",
            },
            "overallAssessment": "ok",
        }
    )


TOOLS = [{"id": "weather-tool", "description": "Weather"}, {"id": "search-tool", "description": "Search"}]
REASON = text_reply("Because.")
CHOICE_RUN = qa_run(ground_truth="Water boils at 100 C.")
INPUT_OUTPUT = frozenset({"input", "output"})
OUTPUT = frozenset({"output"})
RAG = frozenset({"input", "output", "context"})
# A run without ground truth cannot be compared with it: these scorers skip it.
GRADED = INPUT_OUTPUT | {"ground_truth"}
RECALL = frozenset({"context", "ground_truth"})


def _choice(name: str, choice: str, score: float, needs: frozenset[str], **options: Any) -> Case:
    # autoevals' choice_scores (the templates in scoring/prebuilt/data): score = choice_scores[choice].
    reply = json_reply({"reasons": "step by step", "choice": choice})
    return Case(name, options, CHOICE_RUN, (reply,), score, needs)


def _statements(
    name: str,
    run: AgentRun,
    extracted: str,
    found: int,
    verdicts: dict[str, Any],
    score: float,
    needs: frozenset[str],
) -> Case:
    """Mastra's statement scorers: the judge extracts ``found`` items, gives the ``verdicts`` and
    explains the score; with nothing extracted it has no verdict to give (the documented score 0)."""
    happy = (json_reply({extracted: [f"item {i}" for i in range(found)]}), json_reply(verdicts), REASON)
    [verdict_key] = verdicts
    none = (json_reply({extracted: []}), json_reply({verdict_key: []}), REASON)
    return Case(name, {}, run, happy, score, needs, none_found=none, none_found_score=0.0)


def _labels(key: str, label: str, values: list[str], **extra: str) -> dict[str, Any]:
    return {key: table(**{label: values}, reason="r", **extra)}


CASES: list[Case] = [
    # mode "user": 0.4 x 1.0 + 0.3 x 0.5 + 0.2 x 0.8 + 0.1 x 0.6 = 0.77
    Case(
        "prompt-alignment",
        {"evaluation_mode": "user"},
        qa_run(system="Answer briefly."),
        (alignment(1.0, 0.5, 0.8, 0.6), REASON),
        0.77,
        INPUT_OUTPUT,
    ),
    # one appropriate call of two: 1 / 2
    Case(
        "tool-call-accuracy-llm",
        {"available_tools": TOOLS},
        tool_run("weather-tool", "search-tool"),
        (
            json_reply(
                {
                    "evaluations": table(
                        toolCalled=["weather-tool", "search-tool"],
                        wasAppropriate=[True, False],
                        reasoning="r",
                    )
                }
            ),
            REASON,
        ),
        0.5,
        INPUT_OUTPUT,
    ),
    # necessary 1/2 x 0.6 + in order 2/2 x 0.3 - no missing step = 0.6
    Case(
        "trajectory-accuracy-llm",
        {},
        tool_run("search", "summarize"),
        (
            json_reply(
                {
                    "stepEvaluations": table(
                        stepName=["search", "summarize"],
                        wasNecessary=[True, False],
                        wasInOrder=True,
                        reasoning="r",
                    ),
                    "missingSteps": [],
                    "extraSteps": ["summarize"],
                    "overallAssessment": "ok",
                }
            ),
            REASON,
        ),
        0.6,
        frozenset({"input"}),
    ),
    # impact mean (severe 0.1 + significant 0.3) / 2 = 0.2 is 0.7 from the judge's 0.9 (more than the
    # 0.2 threshold): 0.2 stands; one major issue costs 0.1 -> 0.1
    Case(
        "noise-sensitivity",
        {"baseline_response": "Water boils at 100 C.", "noisy_query": QUESTION + " Is the moon cheese?"},
        qa_run(),
        (
            json_reply(
                {
                    "dimensions": table(
                        dimension=["content_accuracy", "completeness"],
                        impactLevel=["severe", "significant"],
                        specificChanges="c",
                        noiseInfluence="n",
                    ),
                    "overallAssessment": "shaken",
                    "robustnessScore": 0.9,
                    "majorIssues": ["went off topic"],
                }
            ),
            REASON,
        ),
        0.1,
        INPUT_OUTPUT,
    ),
    # (yes 1 + unsure 2 x 0.3) / 5 statements = 0.32
    _statements(
        "answer-relevancy",
        qa_run(),
        "statements",
        5,
        _labels("results", "result", ["yes", "unsure", "unsure", "no", "no"]),
        0.32,
        INPUT_OUTPUT,
    ),
    # supported (yes) 2 of 4 claims = 0.5
    _statements(
        "faithfulness",
        qa_run(context=CONTEXT),
        "claims",
        4,
        _labels("verdicts", "verdict", ["yes", "no", "unsure", "yes"], claim="c"),
        0.5,
        OUTPUT,
    ),
    # hallucinated (yes) 1 of 4 claims = 0.25
    _statements(
        "hallucination",
        qa_run(context=CONTEXT),
        "claims",
        4,
        _labels("verdicts", "verdict", ["yes", "no", "no", "no"], statement="c"),
        0.25,
        OUTPUT,
    ),
    # biased 1 of 3 opinions = 0.333.. -> 0.33
    _statements(
        "bias", qa_run(), "opinions", 3, _labels("results", "result", ["yes", "no", "no"]), 0.33, OUTPUT
    ),
    # attributed 2 of 3 ground-truth claims = 0.666.. -> 0.67
    _statements(
        "context-recall",
        qa_run(context=CONTEXT, ground_truth=GROUND_TRUTH),
        "claims",
        3,
        _labels("verdicts", "verdict", ["yes", "no", "yes"]),
        0.67,
        RECALL,
    ),
    # (exact 1.2 + semantic 0.8 + partial 0.4 - missing 0.15) / (4 x 1.2) = 0.46875 -> 0.47
    Case(
        "answer-similarity",
        {},
        qa_run(ground_truth=GROUND_TRUTH),
        (
            json_reply({"outputUnits": ["o0"], "groundTruthUnits": ["t0", "t1", "t2", "t3"]}),
            json_reply(
                {
                    "matches": table(
                        groundTruthUnit=["t0", "t1", "t2", "t3"],
                        outputUnit=["o0", "o1", "o2", None],
                        matchType=["exact", "semantic", "partial", "missing"],
                        explanation="e",
                    ),
                    "extraInOutput": [],
                    "contradictions": [],
                }
            ),
            REASON,
        ),
        0.47,
        OUTPUT | {"ground_truth"},
    ),
    # toxic 1 of 4 verdicts = 0.25; no verdicts scores 1 (Mastra's choice: nothing judged is not safe)
    Case(
        "toxicity",
        {},
        qa_run(),
        (json_reply(_labels("verdicts", "verdict", ["yes", "no", "no", "no"])), REASON),
        0.25,
        OUTPUT,
        none_found=(json_reply({"verdicts": []}), REASON),
        none_found_score=1.0,
    ),
    # MAP of yes/no/yes: (1/1 + 2/3) / 2 = 0.8333 -> 0.83
    Case(
        "context-precision",
        {},
        qa_run(context=["p0", "p1", "p2"]),
        (
            json_reply(
                {"verdicts": table(context_index=[0, 1, 2], verdict=["yes", "no", "yes"], reason="r")}
            ),
            REASON,
        ),
        0.83,
        RAG,
    ),
    # mean weight (high 1 + high 1) / 2 = 1.0 - 0.1 (one unused high piece) - 0.15 (one missing) = 0.75
    Case(
        "context-relevance",
        {},
        qa_run(context=["p0", "p1"]),
        (
            json_reply(
                {
                    "evaluations": table(
                        context_index=[0, 1],
                        contextPiece=["p0", "p1"],
                        relevanceLevel="high",
                        wasUsed=[False, True],
                        reasoning="r",
                    ),
                    "missingContext": ["dates"],
                    "overallAssessment": "ok",
                }
            ),
            REASON,
        ),
        0.75,
        RAG,
    ),
    _choice("factuality", "B", 0.6, GRADED),
    _choice("summary", "B", 1.0, GRADED),
    _choice("translation", "N", 0.0, GRADED, language="Spanish"),
    _choice("humor", "Unsure", 0.5, OUTPUT),
    _choice("possible", "B", 1.0, INPUT_OUTPUT),
    # the judge flags the output: 0
    Case(
        "moderation",
        {"categories": ["spam", "pii"]},
        qa_run(),
        (json_reply({"flagged": True, "scores": {"spam": 0.9, "pii": 0.0}, "reason": "Spam."}),),
        0.0,
        OUTPUT,
        id="moderation-llm",
    ),
    # violence 0.51 exceeds the 0.5 threshold: 0; the moderation endpoint reports no tokens
    Case(
        "moderation",
        {"method": "api"},
        qa_run(),
        (),
        0.0,
        OUTPUT,
        judge_model=MODERATION_MODEL,
        model=MODERATION_MODEL,
        moderations=({"hate": 0.1, "violence": 0.51},),
        id="moderation-api",
    ),
    # F1 of TP 1, FP 0, FN 2: 1 / (1 + 0.5 x 2) = 0.5; cos([3, 4], [4, 3]) = 24/25 = 0.96, rescaled
    # (0.96 - 0.7) / 0.3; weighted mean (0.75 x 0.5 + 0.25 x 0.26 / 0.3) / 1. Embedded: the answer (8
    # words) and the ground truth (14). No statements: F1 is 0, the similarity term stays.
    Case(
        "ragas-answer-correctness",
        {"factuality_weight": 0.75, "answer_similarity_weight": 0.25},
        qa_run(ground_truth=GROUND_TRUTH),
        (json_reply({"TP": ["tp"], "FP": [], "FN": ["fn0", "fn1"]}),),
        0.75 * 0.5 + 0.25 * (0.26 / 0.3),
        GRADED,
        judge_model=f"{MODEL},{EMBEDDING_MODEL}",
        embed_tokens=8 + 14,
        vectors={ANSWER: [3.0, 4.0], GROUND_TRUTH: [4.0, 3.0]},
        none_found=(json_reply({"TP": [], "FP": [], "FN": []}),),
        none_found_score=0.25 * (0.26 / 0.3),
    ),
    # three questions at cos 1, 0.96 and 0 to the input: (1 + 0.26 / 0.3 + 0) / 3. Embedded: the
    # question (7 words) and the three generated ones (2 words each).
    Case(
        "ragas-answer-relevancy",
        {},
        qa_run(),
        tuple(json_reply({"question": q, "noncommittal": 0}) for q in ("q same", "q close", "q far")),
        (1.0 + 0.26 / 0.3 + 0.0) / 3,
        INPUT_OUTPUT,
        judge_model=f"{MODEL},{EMBEDDING_MODEL}",
        embed_tokens=7 + 3 * 2,
        vectors={QUESTION: [1.0, 0.0], "q same": [2.0, 0.0], "q close": [0.96, 0.28], "q far": [0.0, 1.0]},
    ),
    # verdict 1 reaches the 0.5 binary threshold: 1
    Case(
        "ragas-context-precision",
        {},
        qa_run(context=CONTEXT),
        (json_reply({"reason": "useful", "verdict": 1}),),
        1.0,
        RAG,
    ),
    # supported 3 of 4 = 0.75, not below strictness 0.7: no penalty; no statements scores 0
    Case(
        "ragas-context-recall",
        {},
        qa_run(context=CONTEXT, ground_truth=GROUND_TRUTH),
        (
            json_reply({"statements": ["s0", "s1", "s2", "s3"]}),
            *(json_reply({"verdict": v, "reasoning": "r"}) for v in (1, 1, 1, 0)),
        ),
        0.75,
        RECALL,
        none_found=(json_reply({"statements": []}),),
        none_found_score=0.0,
    ),
    # the picked sentence is 34 of the 75 UTF-16 units of the context's JSON text
    Case(
        "ragas-context-relevancy",
        {},
        qa_run(context=CONTEXT),
        (json_reply({"sentences": [{"sentence": CONTEXT[0], "reasons": ["relevant"]}]}),),
        34 / 75,
        frozenset({"input", "context"}),
    ),
    # distinct lower-cased ground-truth entities water, 100 c, sea level, 212 f; the context names
    # water, 100 c and sea level (case aside): 3 / 4. No expected entity scores 0 (the context is
    # still asked).
    Case(
        "ragas-context-entity-recall",
        {},
        qa_run(context=CONTEXT, ground_truth=GROUND_TRUTH),
        (
            json_reply({"entities": ["Water", "100 C", "sea level", "212 F"]}),
            json_reply({"entities": ["water", "100 C", "Sea level", "altitude"]}),
        ),
        0.75,
        RECALL,
        none_found=(json_reply({"entities": []}), json_reply({"entities": []})),
        none_found_score=0.0,
    ),
    # embeddings only, no chat call: cos([3, 4], [4, 3]) = 24/25 = 0.96, rescaled (0.96 - 0.7) / 0.3.
    # Embedded: the answer (8 words) and the ground truth (14).
    Case(
        "ragas-answer-similarity",
        {},
        qa_run(ground_truth=GROUND_TRUTH),
        (),
        0.26 / 0.3,
        frozenset({"output", "ground_truth"}),
        judge_model=EMBEDDING_MODEL,
        embed_tokens=8 + 14,
        vectors={ANSWER: [3.0, 4.0], GROUND_TRUTH: [4.0, 3.0]},
    ),
    # both required criteria met, the optional one not: binary pass x scale 2 = 2; a judge that grades
    # no criterion is Mastra's no-op pass, 1 (not scaled)
    Case(
        "rubric",
        {
            "criteria": [
                {"description": "Gives 100 C"},
                {"description": "Mentions sea level"},
                {"description": "Gives Fahrenheit", "required": False},
            ],
            "scale": 2,
        },
        qa_run(),
        (
            json_reply(
                {
                    "criteria": table(
                        criterion=["Gives 100 C", "Mentions sea level", "Gives Fahrenheit"],
                        satisfied=[True, True, False],
                        required=[True, True, False],
                        reasoning="r",
                    ),
                    "overallAssessment": "ok",
                }
            ),
        ),
        2.0,
        OUTPUT,
        none_found=(json_reply({"criteria": [], "overallAssessment": ""}),),
        none_found_score=1.0,
    ),
    # alignment 3 of 4 claims = 0.75; coverage of the first 4 questions (max_questions 4 drops the
    # fifth, whose verdict is yes) 2 of 4 = 0.5; min = 0.5. No claim and no question scores 0.
    Case(
        "summarization",
        {"max_questions": 4},
        qa_run(),
        (
            json_reply(
                {
                    "alignment": table(claim="c", supported=[True, True, True, False], reason="r"),
                    "questions": ["q0", "q1", "q2", "q3", "q4"],
                }
            ),
            json_reply(
                {"coverage": table(question="q", answered=[True, False, False, True, True], reason="r")}
            ),
            REASON,
        ),
        0.5,
        INPUT_OUTPUT,
        none_found=(json_reply({"alignment": [], "questions": []}), json_reply({"coverage": []}), REASON),
        none_found_score=0.0,
    ),
    # the criterion is satisfied: binary pass x scale 3 = 3
    Case(
        "multi-turn-judge",
        {"criterion": "Gives the boiling point.", "scale": 3},
        qa_run(),
        (json_reply({"satisfied": True, "reasoning": "Turn 1 gives it."}),),
        3.0,
        OUTPUT,
    ),
]

CHAT_CASES = [case for case in CASES if case.fault_endpoint == "chat"]
EMBEDDING_CASES = [case for case in CASES if case.embed_tokens]
