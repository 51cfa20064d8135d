"""RAGAS context entity recall (VoltAgent's ``createContextEntityRecallScorer``).

The judge lists the distinct entities (proper nouns, years, events, places, organisations, other
identifying phrases) of the run's ``ground_truth``, then, in a second call, those of its
``context``. Recall = expected entities found in the context / distinct expected entities, both
sides compared lower-cased as sets (so duplicates and case differences count once). No expected
entity scores 0.

As in VoltAgent, a text is used as it is when it is a string and as its ``JSON.stringify`` text
otherwise: the run's ``context`` list is sent as a JSON array, a non-string ground truth as JSON.
An empty text has no entities and costs no judge call.

Deviation, on purpose: VoltAgent reads the answer with a free-text parse that turns any answer that
is not valid JSON for ``{"entities": [string]}`` into an empty list -- a silent score of 0. Here the
answer is validated by its pydantic schema, a bad answer gets one repair round, and a second bad
answer fails the scorer (a ``failed`` decision), never a made-up score.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.judge import Judge, delimit
from tracescore.scoring.prebuilt.judge_helpers import js_json, normalize_text
from tracescore.scoring.prebuilt.judge_templates import JudgeTemplate
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


class Entities(BaseModel):
    entities: list[str] = Field(description="The distinct entities of the text")


RAGAS_CONTEXT_ENTITY_RECALL = JudgeTemplate(
    ScorerSpec(
        name="ragas-context-entity-recall",
        former_id="contextEntityRecall",
        title="Context Entity Recall",
        description="RAGAS context entity recall: share of the ground truth's entities in the context",
    ),
    __package__,
    "context_entity_recall",  # the steps' own code asks the judge, twice
    instructions_file=None,  # VoltAgent sends the extraction prompt alone, without a system prompt
)


def entity_recall(expected: list[str], context: list[str]) -> float:
    """Share of the distinct (lower-cased) expected entities that the context names; 0 without any.

    >>> entity_recall(["Fleming", "1928", "fleming"], ["FLEMING", "London"])
    0.5
    """
    expected_set = {entity.lower() for entity in expected}
    if not expected_set:
        return 0.0
    context_set = {entity.lower() for entity in context}
    return len(expected_set & context_set) / len(expected_set)


@register(RAGAS_CONTEXT_ENTITY_RECALL.spec)
def create_ragas_context_entity_recall_scorer(judge: Judge) -> Scorer:
    """VoltAgent's context entity recall: the run's ``ground_truth`` entities found in its ``context``."""
    extractor = RAGAS_CONTEXT_ENTITY_RECALL.instructed(judge)
    extract_entities = RAGAS_CONTEXT_ENTITY_RECALL.prompt("extract_entities")

    async def entities_of(text: str) -> list[str]:
        if not text:
            return []
        prompt = extract_entities.render(text=delimit("text", text))
        return (await extractor.structured(prompt, Entities)).value.entities

    async def preprocess(ctx: StepContext) -> list[str]:
        return await entities_of(normalize_text(ctx.run.ground_truth))

    async def analyze(ctx: StepContext) -> list[str]:
        # Asked after the ground truth's entities, as VoltAgent does, also when there are none.
        return await entities_of(js_json(list(ctx.run.context)) if ctx.run.context else "")

    def generate_score(ctx: StepContext) -> float:
        return entity_recall(ctx.preprocessed(list), ctx.analyzed(list))

    return (
        RAGAS_CONTEXT_ENTITY_RECALL.scorer(judge, needs={"context", "ground_truth"}, score=generate_score)
        .preprocess(preprocess)
        .analyze(analyze)
    )
