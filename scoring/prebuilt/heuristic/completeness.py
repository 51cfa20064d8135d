"""Completeness: how many of the input's elements (words) the output covers, after @mastra/evals.

Mastra extracts elements with the JavaScript NLP library compromise: the words of a text's nouns,
verbs, topics and terms, after ``verbs().toInfinitive()`` has rewritten the text in place. Every
word belongs to ``terms()``, so the elements are the text's words with its verbs rewritten:
auxiliaries disappear ("has been processed" -> "process"), a lone copula becomes "be", negative
contractions become "do/does not", past forms become infinitives ("exceeded" -> "exceed").

compromise decides what is a verb with a lexicon and a tagger; this port uses a few rules on the
words around (no model, no download), which is close but not identical: on the shared parity cases
it agrees exactly on most scores (the floor is asserted in the tests). The coverage rule itself
(exact match for words of up to 3 letters, a >60% substring for longer ones) is Mastra's.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TypedDict

from tracescore.scoring.framework.message_text import input_text, js_trim, output_text
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.framework.steps import StepContext
from tracescore.scoring.prebuilt.registry import ScorerSpec, register

_NOT_ALNUM = re.compile(r"[^a-z0-9]+")
_COMBINING_MARKS = re.compile("[\u0300-\u036f]")

# Words as compromise sees them, keeping contractions ("isn't", "they're") whole.
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)*")
_BE = frozenset({"am", "is", "are", "was", "were", "be", "been", "being"})
_HAVE = frozenset({"have", "has", "had"})
_MODALS = frozenset({"will", "would", "could", "should", "can", "may", "might", "must", "shall"})
_DO = frozenset({"do", "does", "did"})
_PRONOUNS = frozenset(
    {"i", "you", "we", "they", "he", "she", "it", "that", "what", "there", "who", "here", "where"}
)
_DETERMINERS = frozenset(
    {"the", "a", "an", "this", "that", "these", "those", "my", "your", "our", "their", "his", "her", "its"}
)
_BE_SUFFIXES = ("'re", "'m", "'s")
_PLURAL_SUBJECTS = frozenset({"i", "we", "they", "you"})  # compromise: "I didn't" -> "do not"
_IRREGULAR = {
    "won": "win", "sat": "sit", "got": "get", "gone": "go", "went": "go", "made": "make", "told": "tell",
    "written": "write", "wrote": "write", "built": "build", "fell": "fall", "lost": "lose", "took": "take",
    "taken": "take", "gave": "give", "given": "give", "found": "find", "said": "say", "came": "come",
    "knew": "know", "known": "know", "saw": "see", "seen": "see", "ran": "run", "sent": "send",
    "kept": "keep", "left": "leave", "felt": "feel", "brought": "bring", "thought": "think",
    "bought": "buy", "paid": "pay", "met": "meet", "held": "hold", "began": "begin", "begun": "begin",
    "broke": "break", "chose": "choose", "chosen": "choose", "drove": "drive", "ate": "eat",
    "grew": "grow", "grown": "grow", "spent": "spend", "stood": "stand", "understood": "understand",
}  # fmt: skip
# Words some rule of infinitive_words reads, beyond contractions and -ed / -ing forms.
_RULED = _BE | _HAVE | _MODALS | _DO | frozenset(_IRREGULAR)
_VERB_SUFFIXES = ("ed", "ing")
# Stems that take their "e" back: releas(ed) -> release, creat(ed) -> create, solv(ing) -> solve.
_E_ENDING = re.compile(r"(?:[aeiou]s|[aeiou]z|at|[^aeiou]iz|[^aeiou]is|v|[aeiou]c|rg|dg|ur)$")


def _stem(word: str, suffix: str) -> str:
    stem = word[: -len(suffix)]
    if suffix == "ed" and stem.endswith("i"):
        return stem[:-1] + "y"  # applied -> apply
    if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
        return stem[:-1]  # stopped -> stop (but called, processed keep theirs)
    if _E_ENDING.search(stem):
        return stem + "e"
    return stem


def _is_verb_form(word: str) -> bool:
    return word in _IRREGULAR or (len(word) > 4 and word.endswith(("ed", "ing")))


def _contraction(token: str, before: str, after: str) -> list[str]:
    if token.endswith("n't"):  # "isn't" -> does not be; "didn't" -> do not
        words = ["do" if before in _PLURAL_SUBJECTS else "does", "not"]
        return [*words, "be"] if token[:-3] in _BE else words
    base, _, rest = token.partition("'")
    words = [base, *rest.split("'")]  # "it's" -> it s; "rock'n'roll" -> rock n roll
    if rest in ("s", "m", "re") and base in _PRONOUNS and not _is_verb_form(after):
        words.append("be")  # "it's fine": a copula; "they're planning": an auxiliary, gone
    return words


def infinitive_words(text: str) -> list[str]:
    """The text's words after compromise-style ``verbs().toInfinitive()`` (text already normalised).

    >>> infinitive_words("the refund has been processed and it isn't lost")
    ['the', 'refund', 'process', 'and', 'it', 'does', 'not', 'be', 'lose']
    """
    tokens = _TOKEN.findall(text)
    words: list[str] = []
    for before, token, after in zip(["", *tokens], tokens, [*tokens[1:], ""], strict=False):
        if "'" not in token and token not in _RULED and not token.endswith(_VERB_SUFFIXES):
            words.append(token)  # most words: no rule below applies (the last branch's case)
            continue
        asks = after in _PRONOUNS or after in _DETERMINERS  # "did the server crash?" keeps "do"
        if "'" in token:
            words += _contraction(token, before, after)
        elif token in _BE:
            if not _is_verb_form(after):  # an auxiliary before a participle disappears
                words += ["be", "do"] if after == "not" else ["be"]
        elif (token in _HAVE and (_is_verb_form(after) or after == "been")) or (
            token in _MODALS and after and after != "not" and not asks
        ):
            continue  # auxiliaries and modals before the main verb disappear
        elif token in _DO and after and after != "not":
            if asks:
                words.append("do")
        elif token.endswith("ing") and len(token) > 5 and (before in _BE or before.endswith(_BE_SUFFIXES)):
            words.append(_stem(token, "ing"))  # "is running" -> run; a gerund ("Running is") stays
        elif token in _IRREGULAR:
            words.append(_IRREGULAR[token])
        elif token.endswith("ed") and len(token) > 4:
            words.append(_stem(token, "ed"))
        else:
            words.append(token)
    return words


def normalize(text: str) -> str:
    """NFD, combining diacritics dropped, lower-cased (Mastra's ``normalizeString``)."""
    return _COMBINING_MARKS.sub("", unicodedata.normalize("NFD", text)).lower()


def extract_elements(text: str) -> list[str]:
    """The text's distinct ASCII-alphanumeric words with verbs as infinitives, in order, accents folded.

    >>> extract_elements("Café crème, café 2x! It was released.")
    ['cafe', 'creme', '2x', 'it', 'release']
    """
    text = normalize(js_trim(text)).replace("\u2019", "'").replace("\u2018", "'")
    # Each word split at anything but a-z0-9, in one pass over them all (no word holds a space).
    words = _NOT_ALNUM.sub(" ", " ".join(infinitive_words(text))).split()
    return list(dict.fromkeys(words))


def covers(element: str, candidate: str) -> bool:
    """Mastra's rule: words of up to 3 letters match exactly; longer ones when the shorter word lies
    inside the longer one and has more than 60% of its length."""
    if len(element) <= 3:
        return element == candidate
    longer, shorter = (element, candidate) if len(element) > len(candidate) else (candidate, element)
    return shorter in longer and len(shorter) / len(longer) > 0.6


def _close_parts(word: str, shortest: int) -> list[str]:
    """The substrings of ``word`` (but itself) that ``covers`` pairs with it: more than 60% of its
    length (the same float test), at least ``shortest`` long."""
    n = len(word)
    return [
        word[start : start + size]
        for size in range(n - 1, shortest - 1, -1)
        if size / n > 0.6
        for start in range(n - size + 1)
    ]


def coverage(original: list[str], simplified: list[str]) -> float:
    """Share of ``original`` elements matched (``covers``) by some ``simplified`` element.

    Sets instead of trying every pair (for long texts, hundreds of thousands of calls): an element
    is covered when it is a candidate, or (longer than 3) one of its close parts is a candidate, or
    it is a close part of a candidate (then it is at least 4 long).
    """
    if not original:
        return 1 if not simplified else 0
    candidates = set(simplified)
    inside_candidates = {part for candidate in candidates for part in _close_parts(candidate, 4)}
    covered = 0
    for element in original:
        if element in candidates or (
            len(element) > 3
            and (element in inside_candidates or not candidates.isdisjoint(_close_parts(element, 1)))
        ):
            covered += 1
    return covered / len(original)


class Elements(TypedDict):
    """The preprocess step's result: each text's elements and the input's the output lacks."""

    input_elements: list[str]
    output_elements: list[str]
    missing_elements: list[str]
    element_counts: dict[str, int]


def _preprocess(ctx: StepContext) -> Elements:
    input_elements = extract_elements(input_text(ctx.run))
    output_elements = extract_elements(output_text(ctx.run))
    present = set(output_elements)
    return {
        "input_elements": input_elements,
        "output_elements": output_elements,
        "missing_elements": [element for element in input_elements if element not in present],
        "element_counts": {"input": len(input_elements), "output": len(output_elements)},
    }


def _score(ctx: StepContext) -> float:
    elements: dict[str, list[str]] = ctx.preprocessed(dict)
    return coverage(elements["input_elements"], elements["output_elements"])


COMPLETENESS = ScorerSpec(
    name="completeness",
    former_id="completeness-scorer",
    title="Completeness Scorer",
    description=(
        "Extracts the words of the input and output (verbs as infinitives) and calculates how many of "
        "the input's the output covers."
    ),
)


@register(COMPLETENESS)
def create_completeness_scorer() -> Scorer:
    """Scores the share of the input's elements (words, verbs as infinitives) the output covers.

    Reads the input and output texts. An input without words scores 1 if the output has none
    either, else 0 (as Mastra).

    Example::

        run = {"input": {"input_messages": [{"role": "user", "content": "solar eclipses"}]},
               "output": [{"role": "assistant", "content": "A solar eclipse."}]}
        result = await create_completeness_scorer().run(run)
        result.score  # 1.0: "eclipse" covers "eclipses" (7 of 8 letters)
    """
    return COMPLETENESS.create_scorer().preprocess(_preprocess).generate_score(_score)
