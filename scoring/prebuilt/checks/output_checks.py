"""Quick checks on the output text: Mastra's ``checks.includes``, ``excludes``, ``equals``, ``matches``
and ``similarity``.

Ports of ``@mastra/evals`` ``scorers/code/checks``: four pass/fail assertions (1 or 0) and a string
similarity (0 to 1, or pass/fail at a threshold) on the output text, with no reason, and with
Mastra's ids (``check-includes``, ...), names, descriptions and preprocess step results (keys in
snake_case). Option checks Mastra lacks: ``threshold`` within 0..1, and a pattern must be one Python
can match the JavaScript way.

The output text is the text of each assistant message, joined with ``" "`` (includes, excludes,
similarity) or ``""`` (equals, matches), as Mastra does. One deliberate difference, the one
``scoring.framework.message_text.output_text`` makes for the same reason: messages without text are left
out. Our
runs hold one assistant message per LLM step and a step that only calls tools has none; Mastra merges
a run's steps into one message and never sees them, so joining them would add stray spaces.
"""

from __future__ import annotations

from collections.abc import Callable

from tracescore.schemas import AgentRun
from tracescore.scoring.framework.message_text import message_text
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.checks.js_regex import JsRegExp
from tracescore.scoring.prebuilt.checks.pass_fail import pass_fail, passed
from tracescore.scoring.prebuilt.heuristic.content_similarity import compare_two_strings
from tracescore.scoring.prebuilt.registry import ScorerSpec, register


def _assistant_text(run: AgentRun, separator: str) -> str:
    return separator.join(
        text for message in run.output if message.role == "assistant" and (text := message_text(message))
    )


def _output_check(
    spec: ScorerSpec, description: str, preprocess: Callable[[StepContext], dict[str, object]], key: str
) -> Scorer:
    return (
        spec.create_scorer(description=description, needs={"output"}, label=pass_fail)
        .preprocess(preprocess)
        .generate_score(lambda ctx: passed(ctx, key))
    )


def _cased(output: str, target: str, ignore_case: bool) -> tuple[str, str]:
    # str.lower is JavaScript's toLowerCase for these purposes (full mappings, final sigma).
    return (output.lower(), target.lower()) if ignore_case else (output, target)


INCLUDES = ScorerSpec(
    name="check-includes",
    title="Includes Check",
    description="Checks if the output includes a text",
    example={"expected": "Paris"},
)


@register(INCLUDES)
def create_includes_check(expected: str, ignore_case: bool = True) -> Scorer:
    """1 when the output text contains ``expected`` (case-insensitive unless ``ignore_case=False``).

    Example::

        create_includes_check("sunny")  # "It is Sunny" -> 1; "It is raining" -> 0
    """

    def preprocess(ctx: StepContext) -> dict[str, object]:
        output, target = _cased(_assistant_text(ctx.run, " "), expected, ignore_case)
        return {"output": output, "target": target, "found": target in output}

    return _output_check(INCLUDES, f'Checks if output includes "{expected}"', preprocess, "found")


EXCLUDES = ScorerSpec(
    name="check-excludes",
    title="Excludes Check",
    description="Checks that the output does not include a text",
    example={"unwanted": "As an AI"},
)


@register(EXCLUDES)
def create_excludes_check(unwanted: str, ignore_case: bool = True) -> Scorer:
    """1 when the output text does not contain ``unwanted`` (an empty ``unwanted`` is always contained).

    Example::

        create_excludes_check("error")  # "All good" -> 1; "An ERROR occurred" -> 0
    """

    def preprocess(ctx: StepContext) -> dict[str, object]:
        output, target = _cased(_assistant_text(ctx.run, " "), unwanted, ignore_case)
        return {"output": output, "target": target, "excluded": target not in output}

    return _output_check(
        EXCLUDES,
        f'Checks that output does not include "{unwanted}"',
        preprocess,
        "excluded",
    )


EQUALS = ScorerSpec(
    name="check-equals",
    title="Equals Check",
    description="Checks if the output equals a text",
    example={"expected": "Paris"},
)


@register(EQUALS)
def create_equals_check(expected: str, ignore_case: bool = True) -> Scorer:
    """1 when the output text is exactly ``expected`` (whitespace counts; case only if asked).

    Example::

        create_equals_check("Hello, world!")  # "HELLO, world!" -> 1; "Hello, world! " -> 0
    """

    def preprocess(ctx: StepContext) -> dict[str, object]:
        output, target = _cased(_assistant_text(ctx.run, ""), expected, ignore_case)
        return {"output": output, "target": target, "is_equal": output == target}

    return _output_check(EQUALS, f'Checks if output equals "{expected}"', preprocess, "is_equal")


MATCHES = ScorerSpec(
    name="check-matches",
    title="Matches Check",
    description="Checks if the output matches a regular expression",
    example={"pattern": "^\\d+$"},
)


@register(MATCHES)
def create_matches_check(pattern: str, flags: str = "", exact: bool = False) -> Scorer:
    """1 when the output text matches the JavaScript regular expression ``/pattern/flags``.

    ``pattern`` is the RegExp source, ``flags`` its flags: ``i`` (``re.IGNORECASE``), ``m``
    (``re.MULTILINE``, with JS's line terminators), ``s`` (``re.DOTALL``), ``u`` (match code points,
    not UTF-16 units); ``g`` and ``d`` are accepted and change nothing; ``y`` and ``v`` are refused.
    The pattern is read with JS semantics (``\\d``/``\\w`` ASCII, ``$`` only at the very end, ...;
    see ``scoring.prebuilt.checks.js_regex``), and refused at construction when Python cannot match
    it the JS way. ``exact`` tests ``^pattern$`` (Mastra's anchoring: ``cat|dog`` exact still
    matches "cat food").

    Example::

        create_matches_check(r"\\d{1,3}°[FC]")  # "It is 72°F" -> 1
        create_matches_check(r"\\d{1,3}°[FC]", exact=True)  # "It is 72°F" -> 0; "72°F" -> 1
    """
    regex = JsRegExp(pattern, flags)
    tested = regex.anchored() if exact else regex

    def preprocess(ctx: StepContext) -> dict[str, object]:
        output = _assistant_text(ctx.run, "")
        return {"output": output, "pattern": str(regex), "matched": tested.test(output)}

    return _output_check(MATCHES, f"Checks if output matches pattern {regex}", preprocess, "matched")


SIMILARITY = ScorerSpec(
    name="check-similarity",
    title="Similarity Check",
    description="Checks string similarity of the output to a text",
    example={"expected": "The capital of France is Paris.", "threshold": 0.7},
)


@register(SIMILARITY)
def create_similarity_check(
    expected: str, threshold: float | None = None, ignore_case: bool = True
) -> Scorer:
    """Bigram (Sørensen-Dice) similarity of the output text to ``expected``, 0 to 1.

    Mastra's algorithm (string-similarity's ``compareTwoStrings``, the same as the
    ``content-similarity`` scorer). With ``threshold`` the score is 1 when the similarity reaches it,
    else 0.

    Example::

        create_similarity_check("Sunny, 72°F")  # "It is sunny and 72°F" -> 0.5833333333333334
        create_similarity_check("Sunny, 72°F", threshold=0.5)  # the same run -> 1
    """
    if threshold is not None and not (0 <= threshold <= 1):  # NaN fails too
        raise ValueError(f"threshold must be between 0 and 1, got {threshold}")

    def preprocess(ctx: StepContext) -> dict[str, object]:
        output, target = _cased(_assistant_text(ctx.run, " "), expected, ignore_case)
        score = compare_two_strings(output, target)
        return {"output": output, "target": target, "score": score, "threshold": threshold}

    def generate_score(ctx: StepContext) -> float:
        score: float = ctx.preprocessed(dict)["score"]
        if threshold is None:
            return score
        return 1 if score >= threshold else 0

    return (
        SIMILARITY.create_scorer(
            description=f'Checks string similarity to "{expected}"',
            needs={"output"},
            label=None if threshold is None else pass_fail,
        )
        .preprocess(preprocess)
        .generate_score(generate_score)
    )
