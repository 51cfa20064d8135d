"""JavaScript regular expressions on Python's ``re``: what ``checks.matches`` needs to test like Mastra.

Mastra's ``matches`` check takes a JS ``RegExp``; a rule gives its ``source`` and ``flags`` as strings.
``JsRegExp`` translates the source into a Python pattern with the same meaning and tests it the way
``RegExp.prototype.test`` does. The translation, and why each piece is needed:

- ``\\d \\w \\b`` (and negations) are ASCII in JS, Unicode in Python: written out as ASCII classes.
- ``\\s`` is JS's whitespace set (differs from Python's): written out.
- ``.`` excludes JS's four line terminators (Python's only ``\\n``); ``$`` is the end of the input
  (Python's also matches before a final ``\\n``); with ``m`` both anchors know all four terminators.
- ``(?<name>...)`` and ``\\k<name>`` become Python's ``(?P<name>...)`` and ``(?P=name)``; ``\\cX``
  and ``\\u{...}`` become ``\\xHH`` and the character; ``[]`` (matches nothing) and ``[^]``
  (anything) are JS-only spellings.
- Without the ``u`` flag JS matches UTF-16 code units (``/^.$/`` does not match an emoji): the text
  and pattern are then matched as code units too.

Flags: ``i`` -> ``re.IGNORECASE``, ``m`` -> line anchors (as ``re.MULTILINE``, with JS's terminators),
``s`` -> ``re.DOTALL``, ``u`` -> code-point matching; ``g`` and ``d`` do not change whether one
``test`` matches and are accepted (Mastra reuses a ``g`` RegExp across runs, so its ``lastIndex``
leaks from one run into the next; here every test starts at 0). ``y`` (sticky) and ``v``
(unicodeSets) are refused. Syntax Python cannot express the JS way (variable-length lookbehind,
``\\p{...}``, ``\\D \\W \\S`` inside a class, escapes JS does not define) is refused at construction.
A known remaining difference: with ``i``, Python folds U+017F and U+212A into ``s`` and ``k``.
"""

from __future__ import annotations

import re

from tracescore.scoring.framework.message_text import JS_WHITESPACE_CHARS, utf16_units

SUPPORTED_FLAGS = "dgimsu"
_CANONICAL_FLAG_ORDER = "dgimsuvy"  # the order RegExp.prototype.flags prints them in
_TERMINATORS = "\\n\\r\\u2028\\u2029"
_WORD = "A-Za-z0-9_"
_WORD_BOUNDARY = f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))"
_NOT_WORD_BOUNDARY = f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"
_CLASS_ESCAPES = {"d": "0-9", "w": _WORD, "s": JS_WHITESPACE_CHARS}
_JS_LETTER_ESCAPES = set("dDwWsSbBfnrtvcxukpP")
_GROUP_OPENERS = ("(?:", "(?=", "(?!", "(?<=", "(?<!")
_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z_$][\w$]*)>")
_BRACED_CODE_POINT = re.compile(r"\\u\{([0-9A-Fa-f]+)\}")
_SURROGATE_PAIR_ESCAPE = re.compile(r"\\u(D[89AB][0-9A-Fa-f]{2})\\u(D[C-F][0-9A-Fa-f]{2})", re.IGNORECASE)


def js_source(pattern: str) -> str:
    """``new RegExp(pattern).source``: ``/`` escaped outside classes, line terminators as escapes."""
    if not pattern:
        return "(?:)"
    out: list[str] = []
    in_class = escaped = False
    for ch in pattern:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "[":
            in_class = True
        elif ch == "]":
            in_class = False
        elif ch == "/" and not in_class:
            out.append("\\")
        out.append({"\n": "\\n", "\r": "\\r", "\u2028": "\\u2028", "\u2029": "\\u2029"}.get(ch, ch))
    return "".join(out)


class JsRegExp:
    """A JS ``RegExp`` (source + flags) tested with Python's ``re``, as ``regex.test(text)``.

    Example::

        JsRegExp(r"\\d{1,3}°[FC]").test("It is 72°F")  # True
        str(JsRegExp("a/b", "i"))  # '/a\\/b/i' (RegExp.prototype.toString)
    """

    def __init__(self, pattern: str, flags: str = "") -> None:
        unknown = sorted(set(flags) - set(_CANONICAL_FLAG_ORDER))
        if unknown or len(set(flags)) != len(flags):
            raise ValueError(f"invalid regular expression flags {flags!r}")
        if refused := sorted(set(flags) - set(SUPPORTED_FLAGS)):
            raise ValueError(
                f"regular expression flag(s) {''.join(refused)!r} not supported; use {SUPPORTED_FLAGS}"
            )
        self.source = js_source(pattern)
        self.flags = "".join(flag for flag in _CANONICAL_FLAG_ORDER if flag in flags)
        self._unicode = "u" in flags
        translated = _translate(
            self.source, multiline="m" in flags, dotall="s" in flags, unicode=self._unicode
        )
        try:
            self._compiled = re.compile(translated, re.IGNORECASE if "i" in flags else 0)
        except re.error as exc:
            raise ValueError(f"unsupported regular expression /{self.source}/: {exc}") from exc

    def anchored(self) -> JsRegExp:
        """``new RegExp(`^${source}$`, flags)``: Mastra's ``exact`` form (anchors only the ends of an
        alternation's first and last branch, as JS does)."""
        return JsRegExp(f"^{self.source}$", self.flags)

    def test(self, text: str) -> bool:
        return self._compiled.search(text if self._unicode else utf16_units(text)) is not None

    def __str__(self) -> str:
        return f"/{self.source}/{self.flags}"


def _translate(source: str, *, multiline: bool, dotall: bool, unicode: bool) -> str:
    if unicode:
        # JS reads an escaped surrogate pair and \u{...} as one code point only in u mode.
        source = _SURROGATE_PAIR_ESCAPE.sub(
            lambda m: chr(0x10000 + ((int(m[1], 16) - 0xD800) << 10) + int(m[2], 16) - 0xDC00), source
        )
        source = _BRACED_CODE_POINT.sub(lambda m: _code_point(m[1]), source)
    else:
        source = utf16_units(source)
    out: list[str] = []
    i = 0
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            piece, i = _escape(source, i, in_class=False)
        elif ch == "[":
            piece, i = _character_class(source, i)
        elif ch == "(":
            piece, i = _group_opener(source, i)
        elif ch == ".":
            piece, i = ("." if dotall else f"[^{_TERMINATORS}]"), i + 1
        elif ch == "^":
            piece, i = (f"(?<![^{_TERMINATORS}])" if multiline else "^"), i + 1
        elif ch == "$":
            piece, i = (f"(?=[{_TERMINATORS}]|\\Z)" if multiline else "\\Z"), i + 1
        elif ch == "{" and source.startswith(",", i + 1):
            piece, i = "\\{", i + 1  # JS reads "{,n}" literally; Python as a quantifier
        else:
            piece, i = ch, i + 1
        out.append(piece)
    return ("(?s)" if dotall else "") + "".join(out)


def _code_point(hex_digits: str) -> str:
    value = int(hex_digits, 16)
    if value > 0x10FFFF:
        raise ValueError(f"invalid code point escape \\u{{{hex_digits}}}")
    return re.escape(chr(value))


def _escape(source: str, i: int, *, in_class: bool) -> tuple[str, int]:
    """The Python form of the escape at ``source[i]`` and the index after it."""
    if i + 1 >= len(source):
        raise ValueError("regular expression ends with a lone backslash")
    letter = source[i + 1]
    if letter.isascii() and letter.isalpha() and letter not in _JS_LETTER_ESCAPES:
        raise ValueError(f"\\{letter} is not a JavaScript regular expression escape")
    if letter in "dws":
        body = _CLASS_ESCAPES[letter]
        return (body if in_class else f"[{body}]"), i + 2
    if letter in "DWS":
        if in_class:
            raise ValueError(f"\\{letter} inside a character class is not supported")
        return f"[^{_CLASS_ESCAPES[letter.lower()]}]", i + 2
    if letter in "bB" and not in_class:
        return (_WORD_BOUNDARY if letter == "b" else _NOT_WORD_BOUNDARY), i + 2
    if letter == "c" and i + 2 < len(source) and source[i + 2].isascii() and source[i + 2].isalpha():
        return f"\\x{ord(source[i + 2]) % 32:02x}", i + 3
    if letter == "k" and not in_class:
        end = source.find(">", i)
        if not source.startswith("<", i + 2) or end < 0:
            raise ValueError("\\k must name a group: \\k<name>")
        return f"(?P={source[i + 3 : end]})", end + 1
    if letter in "pP":
        raise ValueError("Unicode property escapes (\\p{...}) are not supported")
    return source[i : i + 2], i + 2


def _character_class(source: str, i: int) -> tuple[str, int]:
    """The Python form of the class opening at ``source[i]`` and the index after it."""
    negated = source.startswith("^", i + 1)
    j = i + 2 if negated else i + 1
    if source.startswith("]", j):  # JS: [] matches nothing, [^] matches any character
        return ("(?s:.)" if negated else "(?!)"), j + 1
    body: list[str] = []
    while j < len(source) and source[j] != "]":
        ch = source[j]
        if ch == "\\":
            piece, j = _escape(source, j, in_class=True)
        else:
            # Python reads "[" in a class as a possible nested set, and doubled "-&~|" as set
            # operations (with a FutureWarning): escape them, JS means the characters.
            doubled = ch in "-&~|" and j > 0 and source[j - 1] == ch
            piece, j = ("\\" + ch if ch in "[&~|" or doubled else ch), j + 1
        body.append(piece)
    if j >= len(source):
        raise ValueError("unterminated character class")
    return f"[{'^' if negated else ''}{''.join(body)}]", j + 1


def _group_opener(source: str, i: int) -> tuple[str, int]:
    if not source.startswith("(?", i):
        return "(", i + 1
    for opener in _GROUP_OPENERS:
        if source.startswith(opener, i):
            return opener, i + len(opener)
    if named := _NAMED_GROUP.match(source, i):
        return f"(?P<{named[1]}>", named.end()
    raise ValueError(f"group syntax {source[i : i + 3]!r} is not JavaScript's")
