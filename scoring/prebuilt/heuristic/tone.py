"""Tone: how steady the output's sentiment is, or how close to a reference tone, as @mastra/evals scores it.

Sentiment is the npm package sentiment 5.0.2's AFINN-165 analysis, ported: its tokenizer, its word
and emoji scores (``data/afinn_165_en.json``, licences in ``data/NOTICE.md``), its negation rule
(a negator right before a word flips the word's score) and ``comparative = score / tokens``.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache
from importlib import resources
from itertools import accumulate, compress

from tracescore.scoring.framework.message_text import JS_WHITESPACE, JS_WHITESPACE_CHARS, js_trim, output_text
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

_PUNCTUATION = re.compile(r"[.,/#!?$%^&*;:{}=_`\"~()]")
# The same without the sentence ends . ! ?: the whole text is tokenised at once (see sentence_sentiments).
_INNER_PUNCTUATION = re.compile(r"[,/#$%^&*;:{}=_`\"~()]")
_WHITESPACE_RUN = re.compile(f"[{JS_WHITESPACE_CHARS}][{JS_WHITESPACE_CHARS}]+")  # JS /\s\s+/: 2 or more
# Mastra's sentences: text up to and including a run of . ! ? (a tail without one is dropped); the
# group is the sentence without that closing run.
_SENTENCE_BODY = re.compile(r"([^.!?]+)[.!?]+")


@dataclass(frozen=True, slots=True)
class Lexicon:
    scores: dict[str, int]
    negators: frozenset[str]


@cache
def afinn_lexicon() -> Lexicon:
    """The AFINN-165 word and emoji scores and the negators of the sentiment package."""
    text = (
        resources.files("tracescore.scoring.prebuilt.heuristic")
        .joinpath("data/afinn_165_en.json")
        .read_text("utf-8")
    )
    data = json.loads(text)
    return Lexicon(scores=data["labels"], negators=frozenset(data["negators"]))


def sentiment_tokens(phrase: str) -> list[str]:
    """The sentiment package's tokenizer: lower-case, punctuation to spaces, split on single spaces.

    >>> sentiment_tokens("Not bad,  at ALL!")
    ['not', 'bad', 'at', 'all']
    """
    phrase = _PUNCTUATION.sub(" ", phrase.lower().replace("\n", " "))
    return js_trim(_WHITESPACE_RUN.sub(" ", phrase)).split(" ")


def comparative_sentiment(phrase: str) -> float:
    """``new Sentiment().analyze(phrase).comparative``: summed word scores over the token count.

    >>> comparative_sentiment("not good")  # "good" is +3, flipped by "not"
    -1.5
    """
    tokens = sentiment_tokens(phrase)
    return _summed_scores(tokens, afinn_lexicon()) / len(tokens)  # never empty: "".split(" ") is [""]


def _summed_scores(tokens: list[str], lexicon: Lexicon) -> int:
    """The tokens' word scores, each flipped when a negator comes right before it."""
    scores, negators = lexicon.scores, lexicon.negators
    score = 0
    # Only the tokens that have a score (a few in a sentence), found by a C-level scan; the package
    # sums right to left, but the scores are integers: the order cannot change the sum.
    for i in compress(range(len(tokens)), map(scores.__contains__, tokens)):
        word_score = scores[tokens[i]]
        if i > 0 and tokens[i - 1] in negators:
            word_score = -word_score
        score += word_score
    return score


def sentence_sentiments(text: str) -> list[float]:
    """``comparative_sentiment`` of each of Mastra's sentences of ``text`` (of the whole text when it
    has none).

    The text is lower-cased and its punctuation other than the sentence ends turned into spaces once,
    rather than sentence by sentence: neither step makes or removes a ``.``, ``!`` or ``?``, and a
    whitespace run never spans a sentence end, so each sentence's tokens are those the package's
    tokenizer gives the sentence alone. (The one context-dependent lower-casing, Greek final sigma,
    can differ at a sentence end; no lexicon word holds a sigma, so no score can.)

    >>> sentence_sentiments("Great! This is terrible.")
    [3.0, -1.0]
    """
    normalized = _WHITESPACE_RUN.sub(" ", _INNER_PUNCTUATION.sub(" ", text.lower().replace("\n", " ")))
    # The closing run became spaces in the package's tokenizer, which its trim removes.
    bodies = [body.strip(JS_WHITESPACE) for body in _SENTENCE_BODY.findall(normalized)]
    if not bodies:
        return [comparative_sentiment(text)]
    counts = [body.count(" ") + 1 for body in bodies]  # len(body.split(" "))
    # Every sentence's tokens in one list, a "\0" token (never a word, never a negator) between two
    # sentences; the few tokens with a score are found in one C-level scan.
    tokens = " \0 ".join(bodies).split(" ")
    lexicon = afinn_lexicon()
    scores, negators = lexicon.scores, lexicon.negators
    sums = [0] * len(bodies)
    starts = list(accumulate([count + 1 for count in counts[:-1]], initial=0))
    for i in compress(range(len(tokens)), map(scores.__contains__, tokens)):
        word_score = scores[tokens[i]]
        if i > 0 and tokens[i - 1] in negators:
            word_score = -word_score
        sums[bisect_right(starts, i) - 1] += word_score
    return [total / count for total, count in zip(sums, counts, strict=True)]


def tone_result(text: str, reference_tone: str | None) -> dict[str, float]:
    """Mastra's tone preprocess result: the score with the sentiments it came from."""
    if reference_tone:
        response = comparative_sentiment(text)
        reference = comparative_sentiment(reference_tone)
        difference = abs(response - reference)
        return {
            "score": max(0.0, 1 - difference),
            "response_sentiment": response,
            "reference_sentiment": reference,
            "difference": difference,
        }
    sentiments = sentence_sentiments(text)
    average = 0.0
    for value in sentiments:  # left to right, as JavaScript's reduce adds
        average += value
    average /= len(sentiments)
    variance = 0.0
    for value in sentiments:
        variance += (value - average) * (value - average)
    variance /= len(sentiments)
    return {"score": max(0.0, 1 - variance), "avg_sentiment": average, "sentiment_variance": variance}


TONE = ScorerSpec(
    name="tone",
    former_id="tone-scorer",
    title="Tone Scorer",
    description=(
        "Analyzes the tone and sentiment of agent responses using sentiment analysis. Can compare "
        "against a reference tone or evaluate sentiment stability."
    ),
)


@register(TONE)
def create_tone_scorer(reference_tone: str | None = None) -> Scorer:
    """Scores the output's tone: 1 - |sentiment - reference sentiment|, or without a reference
    1 - the variance of its sentences' sentiments (1 = steady tone). Reads the output text only.

    Example::

        run = {"output": [{"role": "assistant", "content": "Great! This is terrible."}]}
        result = await create_tone_scorer().run(run)
        result.score  # 0.0: sentence sentiments 3 and -1 (-3 over 3 tokens), variance 4
        # create_tone_scorer(reference_tone="Great!"): 1 - |(3 - 3) / 4 - 3| = 0.0 as well
    """

    def preprocess(ctx: StepContext) -> dict[str, float]:
        return tone_result(output_text(ctx.run), reference_tone)

    return (
        TONE.create_scorer(needs={"output"})
        .preprocess(preprocess)
        .generate_score(lambda ctx: ctx.preprocessed(dict)["score"])
    )
