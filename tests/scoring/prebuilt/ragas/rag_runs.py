"""The runs the RAGAS scorer tests score: a boiling-point question with its context and ground truth,
and VoltAgent's penicillin question (its spec's BASE_CONTEXT)."""

from __future__ import annotations

from tests.support.runs import agent_run
from tracescore.schemas import AgentRun

QUESTION = "What is the boiling point of water?"
ANSWER = "Water boils at 100 C at sea level."  # 8 whitespace words (embedding tokens)
GROUND_TRUTH = "Water boils at 100 C (212 F) at sea level; it changes with altitude."  # 14 words
CONTEXT = ["Water boils at 100 C at sea level.", "Boiling points fall with altitude."]

# VoltAgent's context-entity-recall.spec.ts BASE_CONTEXT
FLEMING_EXPECTED = "Alexander Fleming discovered penicillin in 1928."
FLEMING_CONTEXT = "Penicillin was discovered in 1928 by Alexander Fleming at St. Mary's Hospital."


def rag_run(ground_truth: str | None = GROUND_TRUTH, context: list[str] | None = None) -> AgentRun:
    """The boiling-point question and answer, with ``CONTEXT`` unless another context is given."""
    return agent_run(
        QUESTION, ANSWER, ground_truth=ground_truth, context=CONTEXT if context is None else context
    )


def qa_run(
    answer: str = ANSWER, *, ground_truth: object = GROUND_TRUTH, context: list[str] | None = None
) -> AgentRun:
    """VoltAgent's penicillin question, answered with ``answer``, its context ``[FLEMING_CONTEXT]``."""
    return agent_run(
        "Who discovered penicillin?",
        answer,
        ground_truth=ground_truth,
        context=[FLEMING_CONTEXT] if context is None else context,
    )


def classification(tp: int, fp: int, fn: int) -> dict[str, list[str]]:
    """An answer-correctness judge answer with ``tp`` TP, ``fp`` FP and ``fn`` FN statements."""
    return {
        "TP": [f"tp {i}" for i in range(tp)],
        "FP": [f"fp {i}" for i in range(fp)],
        "FN": [f"fn {i}" for i in range(fn)],
    }
