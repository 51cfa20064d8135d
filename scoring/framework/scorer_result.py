"""The outcome of one scorer run: ``ScorerResult`` (Mastra's run result, snake_case).

A plain slotted class with read-only attributes rather than a pydantic model: a heuristic scorer's
whole run costs about a microsecond, and validating the result's fields cost more than that.
``Scorer.run`` has checked every value it is given (a score in [0, scale], a reason that is a string),
so there is nothing left to validate. Pydantic models may still hold one (``EvalItemResult.scores``),
and ``model_dump`` gives its fields as a dict, as before.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Literal

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema, to_jsonable_python

from tracescore.schemas import Score


@dataclass(frozen=True, slots=True)
class JudgeDetails:
    """What the judges of a run sent and spent: made only for a run that asked a judge.

    Usage is summed over every judge call of the run, prompt-object steps and the steps' own code
    alike (distinct models comma-joined, in first-use order).
    """

    preprocess_prompt: str | None = None
    analyze_prompt: str | None = None
    generate_score_prompt: str | None = None
    generate_reason_prompt: str | None = None
    judge_model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


# The details of a run that asked no judge (most runs): one shared, immutable instance.
NO_JUDGE = JudgeDetails()


def _read_only(path: str, doc: str) -> Any:
    """A read-only attribute read from ``path`` (a slot, or ``_judge.<field>``); ``attrgetter`` runs
    in C."""
    return property(attrgetter(path), doc=doc)


class ScorerResult:
    """The outcome of one scorer run; its attributes are read-only."""

    __slots__ = (
        "_scorer_id",
        "_run_id",
        "_score",
        "_scale",
        "_reason",
        "_label",
        "_preprocess_step_result",
        "_analyze_step_result",
        "_judge",
    )

    def __init__(
        self,
        scorer_id: str,
        run_id: str | None,
        score: float,
        scale: float = 1.0,
        reason: str | None = None,
        label: str | None = None,
        preprocess_step_result: Any = None,
        analyze_step_result: Any = None,
        judge: JudgeDetails = NO_JUDGE,
    ) -> None:
        # Plain slot stores: immutability comes from the read-only properties, which cost nothing here
        # (a frozen dataclass's per-field ``object.__setattr__`` would cost more than the scoring).
        self._scorer_id = scorer_id
        self._run_id = run_id  # None: drawn when first read
        self._score = score
        self._scale = scale
        self._reason = reason
        self._label = label
        self._preprocess_step_result = preprocess_step_result
        self._analyze_step_result = analyze_step_result
        self._judge = judge

    scorer_id: str = _read_only("_scorer_id", "The id of the scorer that ran.")
    score: float = _read_only("_score", "The score, in [0, scale] (``Scorer.run`` checked it).")
    scale: float = _read_only("_scale", "The top of the score's range.")
    reason: str | None = _read_only("_reason", "The generate_reason step's text.")
    label: str | None = _read_only("_label", "The run's label where the scorer gives one.")
    preprocess_step_result: Any = _read_only("_preprocess_step_result", "The preprocess step's result.")
    analyze_step_result: Any = _read_only("_analyze_step_result", "The analyze step's result.")
    preprocess_prompt: str | None = _read_only("_judge.preprocess_prompt", "The preprocess step's prompt.")
    analyze_prompt: str | None = _read_only("_judge.analyze_prompt", "The analyze step's prompt.")
    generate_score_prompt: str | None = _read_only("_judge.generate_score_prompt", "Its prompt.")
    generate_reason_prompt: str | None = _read_only("_judge.generate_reason_prompt", "Its prompt.")
    judge_model: str | None = _read_only("_judge.judge_model", "The judges' models, comma-joined.")
    input_tokens: int = _read_only("_judge.input_tokens", "Input tokens of the run's judge calls.")
    output_tokens: int = _read_only("_judge.output_tokens", "Output tokens of the run's judge calls.")
    cost_usd: float = _read_only("_judge.cost_usd", "The price of the run's judge calls in US dollars.")

    @property
    def run_id(self) -> str:
        """The scored run's id: its trace and span ids; a run without them gets a random id (as
        Mastra's), drawn when first read -- a live run always has ids, and an eval seldom reads it."""
        if self._run_id is None:
            self._run_id = str(uuid.uuid4())
        return self._run_id

    def step_results(self) -> dict[str, Any]:
        """The step results as JSON-safe data (non-finite floats become null)."""
        if self._preprocess_step_result is None and self._analyze_step_result is None:
            return {}  # most code scorers keep none: no conversion to run
        raw = {
            "preprocess_step_result": self._preprocess_step_result,
            "analyze_step_result": self._analyze_step_result,
        }
        data = to_jsonable_python(raw, inf_nan_mode="null", fallback=repr)
        return {key: value for key, value in data.items() if value is not None}

    def to_score(self, name: str | None = None) -> Score:
        """This result as a ``schemas.Score``, its step results as its metadata."""
        return Score(
            name=name or self._scorer_id,
            value=self._score,
            label=self._label,
            reason=self._reason,
            scale=self._scale,
            metadata=self.step_results(),
        )

    def model_dump(self, *, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """The result's fields as a dict (``mode="json"``: JSON-safe values), as pydantic's."""
        fields = {
            "scorer_id": self._scorer_id,
            "run_id": self.run_id,
            "score": self._score,
            "reason": self._reason,
            "label": self._label,
            "scale": self._scale,
            "preprocess_step_result": self._preprocess_step_result,
            "analyze_step_result": self._analyze_step_result,
            **{name: getattr(self._judge, name) for name in JudgeDetails.__dataclass_fields__},
        }
        return to_jsonable_python(fields) if mode == "json" else fields

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScorerResult):
            return NotImplemented
        return self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]  # equal by value, and step results may be unhashable

    def __repr__(self) -> str:
        shown = ", ".join(f"{key}={value!r}" for key, value in self.model_dump().items() if value is not None)
        return f"ScorerResult({shown})"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: type[Any], handler: GetCoreSchemaHandler) -> CoreSchema:
        """Pydantic models may hold a result (taken as it is) and dump it as ``model_dump`` does."""
        dump = core_schema.plain_serializer_function_ser_schema(lambda result: result.model_dump())
        return core_schema.is_instance_schema(cls, serialization=dump)
