"""Grafana's query pipeline for the ClickHouse plugin, re-done in Python so tests can run dashboard SQL.

A panel's ``rawSql`` goes through three steps before ClickHouse sees it, and ``render`` applies them
in the same order:

1. ``conditional_all``: the plugin's frontend macro ``$__conditionalAll(condition, $var)``
   (grafana/clickhouse-datasource ``src/data/CHDatasource.ts``, ``applyConditionalAll`` and
   ``getMacroArgs``): the condition, or ``1=1`` while the variable is All or empty. It reads the
   variable's dashboard-wide value, never a repeated panel's own.
2. ``interpolate``: Grafana's template service (``templateSrv.replace``: ``$var``, ``${var}``,
   ``${var:format}``, ``[[var]]``), with the plugin's own default format for multi-value variables
   (``CHDatasource.format``: ``'a','b'``) and Grafana's format registry for the named formats.
3. ``expand_macros``: the plugin's backend macros (``pkg/macros/macros.go`` on grafana/macropro's
   engine: comments blanked first, names tried longest first so nested macros expand, arguments
   split at top-level commas outside quotes). Statement macros (``$__columns`` and the like,
   ``pkg/macros/statement.go``) are refused rather than imitated.

Alert rules skip steps 1 and 2: Grafana evaluates them on the server, where only the backend macros run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

ALL = "$__all"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class TimeRange:
    """A query's time range and interval, as the plugin backend receives them."""

    start: datetime
    end: datetime
    interval: timedelta = timedelta(seconds=60)

    @classmethod
    def relative(cls, now: datetime, from_s: int, to_s: int, interval: timedelta) -> TimeRange:
        """An alert rule's ``relativeTimeRange`` ({from, to} in seconds before now)."""
        return cls(now - timedelta(seconds=from_s), now - timedelta(seconds=to_s), interval)


@dataclass(frozen=True)
class Selection:
    """A template variable's current value: one value, several (``multi``), or All.

    ``options`` are every value the variable offers (what All stands for); ``all_value`` is the
    variable's custom ``allValue``, if it has one.
    """

    values: tuple[str, ...]
    multi: bool = False
    is_all: bool = False
    options: tuple[str, ...] = ()
    all_value: str | None = None

    @classmethod
    def one(cls, value: str) -> Selection:
        return cls((value,))

    def current_value(self) -> str:
        """``current.value.toString()`` in JavaScript: what ``$__conditionalAll`` compares."""
        if self.is_all:
            return ALL
        return ",".join(self.values) if self.multi else self.values[0]


# --- step 1: $__conditionalAll (frontend) -------------------------------------------------------------

_CONDITIONAL_ALL = "$__conditionalAll("
_VARIABLE_REFERENCE = re.compile(r"(?<=\$\{)\w+(?=\})|(?<=\$)\w+")


def _macro_args(query: str, args_index: int) -> list[str]:
    """``getMacroArgs``: the arguments of the call whose ``(`` is at ``args_index``, untrimmed, split
    at commas one parenthesis deep (quotes are not considered, as in the plugin)."""
    args: list[str] = []
    depth = 0
    last = 1
    rest = query[args_index:]
    for found in re.finditer(r"[(),]", rest):
        token = found.group()
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
        if token == "," and depth == 1:
            args.append(rest[last : found.start()])
            last = found.end()
        if depth == 0:
            args.append(rest[last : found.start()])
            return args
    return []


def _js_replacement(replacement: str, matched: str, before: str, after: str) -> str:
    """JavaScript ``String.replace`` with a string pattern: ``$$``, ``$&``, ``$``` and ``$'`` in the
    replacement mean something."""
    special = {"$$": "$", "$&": matched, "$`": before, "$'": after}
    return re.sub(r"\$[$&`']", lambda m: special[m.group()], replacement)


def conditional_all(query: str, variables: Mapping[str, Selection]) -> str:
    index = query.rfind(_CONDITIONAL_ALL)
    while index != -1:
        params = _macro_args(query, index + len(_CONDITIONAL_ALL) - 1)
        if len(params) != 2:
            return query
        phrase = params[0]
        reference = _VARIABLE_REFERENCE.search(params[1].strip())
        if reference:
            selection = variables.get(reference.group())
            if selection is not None and selection.current_value() in ("", ALL):
                phrase = "1=1"
        call = f"{_CONDITIONAL_ALL}{params[0]},{params[1]})"
        at = query.find(call)
        replacement = _js_replacement(phrase, call, query[:at], query[at + len(call) :])
        query = query[:at] + replacement + query[at + len(call) :]
        index = query.rfind(_CONDITIONAL_ALL)
    return query


# --- step 2: template variables (frontend) ------------------------------------------------------------

# Grafana's variable syntax (public/app/features/variables/utils.ts, variableRegex).
_VARIABLE = re.compile(r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}")


def _quoted(value: str | list[str], quote: str, escaped: str) -> str:
    values = value if isinstance(value, list) else [value]
    return ",".join(f"{quote}{v.replace(quote, escaped)}{quote}" for v in values)


def _format(value: str | list[str], fmt: str | None, text: str) -> str:
    if fmt is None:  # the plugin's default (CHDatasource.format)
        return "'" + "','".join(value) + "'" if isinstance(value, list) else value
    if fmt == "singlequote":
        return _quoted(value, "'", "\\'")
    if fmt == "doublequote":
        return _quoted(value, '"', '\\"')
    if fmt == "sqlstring":
        return _quoted(value, "'", "''")
    if fmt in ("csv", "raw"):
        return ",".join(value) if isinstance(value, list) else value
    if fmt == "text":
        return text
    raise ValueError(f"template variable format {fmt!r} is not implemented by this expander")


def builtin_variables(time_range: TimeRange) -> dict[str, str]:
    """Grafana's global variables a query may use ($__from and $__to are epoch milliseconds)."""
    interval_s = time_range.interval.total_seconds()
    return {
        "__from": str((time_range.start - EPOCH) // timedelta(milliseconds=1)),
        "__to": str((time_range.end - EPOCH) // timedelta(milliseconds=1)),
        "__interval": _go_duration(time_range.interval),
        "__interval_ms": str(int(interval_s * 1000)),
        "__range_s": str(int((time_range.end - time_range.start).total_seconds())),
    }


def interpolate(text: str, variables: Mapping[str, Selection], builtins: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2) or match.group(4)
        fmt = match.group(3) or match.group(6)
        if match.group(5):
            raise ValueError(f"field paths in variables ({match.group()}) are not implemented here")
        if name in builtins:
            if fmt is not None:
                raise ValueError(f"formats of built-in variables ({match.group()}) are not implemented here")
            return builtins[name]
        selection = variables.get(name)
        if selection is None:
            return match.group()  # Grafana leaves unknown variables as they are
        value: str | list[str]
        if selection.is_all:
            if selection.all_value is not None and fmt not in ("text", "percentencode"):
                return selection.all_value  # custom all values are never formatted
            value, text_value = list(selection.options), "All"
        elif selection.multi:
            value, text_value = list(selection.values), " + ".join(selection.values)
        else:
            value = text_value = selection.values[0]
        return _format(value, fmt, text_value)

    return _VARIABLE.sub(replace, text)


# --- step 3: backend macros ---------------------------------------------------------------------------

_STATEMENT_MACROS = ("columns", "rateColumns", "perSecondColumns", "increaseColumns", "lttb")


def _scan_quoted(s: str, pos: int) -> int:
    """The index after the quoted region opening at ``pos``: '…' and "…" with doubled quotes and
    backslash escapes (ClickHouse's), `…` identifiers."""
    quote = s[pos]
    j = pos + 1
    while j < len(s):
        if s[j] == "\\" and quote != "`":
            j += 2
            continue
        if s[j] == quote:
            if j + 1 < len(s) and s[j + 1] == quote:
                j += 2
                continue
            return j + 1
        j += 1
    return len(s)


_DOLLAR_TAG = re.compile(r"\$([A-Za-z0-9_]*)\$")


def strip_comments(query: str) -> str:
    """``macropro.StripComments`` with the plugin's style: ``--`` and ``/* */`` comments blanked to
    spaces (same length); quoted strings, backtick identifiers and $tag$ strings left alone."""
    out: list[str] = []
    i = 0
    while i < len(query):
        c = query[i]
        if c in "'\"`":
            j = _scan_quoted(query, i)
            out.append(query[i:j])
            i = j
            continue
        tag = _DOLLAR_TAG.match(query, i) if c == "$" else None
        if tag is not None:
            close = query.find(tag.group(), tag.end())
            if close >= 0:
                out.append(query[i : close + len(tag.group())])
                i = close + len(tag.group())
                continue
        if query.startswith("--", i):
            j = i
            while j < len(query) and query[j] not in "\r\n":
                j += 1
        elif query.startswith("/*", i):
            end = query.find("*/", i + 2)
            j = len(query) if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
            continue
        out.append(" " * (j - i))
        i = j
    return "".join(out)


def _closing_paren(s: str, open_at: int) -> int:
    depth = 0
    i = open_at
    while i < len(s):
        if s[i] in "'\"":
            i = _scan_quoted(s, i)
            continue
        if s[i] == "(":
            depth += 1
        elif s[i] == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _split_args(raw: str) -> list[str]:
    raw = raw.strip()
    if not raw:
        return []
    args, depth, start, i = [], 0, 0, 0
    while i < len(raw):
        if raw[i] in "'\"":
            i = _scan_quoted(raw, i)
            continue
        if raw[i] == "(":
            depth += 1
        elif raw[i] == ")":
            if depth == 0:
                raise ValueError(f"unexpected ')' at position {i}")
            depth -= 1
        elif raw[i] == "," and depth == 0:
            args.append(raw[start:i].strip())
            start = i + 1
        i += 1
    if depth:
        raise ValueError("unbalanced parentheses in arguments")
    args.append(raw[start:].strip())
    return args


def _go_duration(d: timedelta) -> str:
    """``macropro.FormatDuration``: the largest whole unit."""
    ms = round(d.total_seconds() * 1000)
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms" if ms else "0s"


_GO_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def _parse_go_duration(text: str) -> float:
    if not text or _GO_DURATION_PART.sub("", text) != "":
        raise ValueError(f"invalid interval {text!r}")
    return sum(float(n) * _GO_UNITS[u] for n, u in _GO_DURATION_PART.findall(text))


Macro = Callable[[list[str]], str]


def _macros(tr: TimeRange) -> dict[str, Macro]:
    start, end = tr.start.astimezone(UTC), tr.end.astimezone(UTC)

    def date_time(t: datetime) -> str:
        return f"toDateTime({(t - EPOCH) // timedelta(seconds=1)})"

    def date_time64(t: datetime) -> str:
        return f"fromUnixTimestamp64Milli({(t - EPOCH) // timedelta(milliseconds=1)})"

    def date(t: datetime) -> str:
        return f"toDate('{t:%Y-%m-%d}')"

    def needs(name: str, count: int, args: list[str]) -> list[str]:
        if len(args) != count:
            raise ValueError(f"$__{name} expected {count} argument(s), received {len(args)}")
        return args

    def between(name: str, args: list[str], bound: Callable[[datetime], str]) -> str:
        (col,) = needs(name, 1, args)
        return f"{col} >= {bound(start)} AND {col} <= {bound(end)}"

    def date_time_filter(args: list[str]) -> str:
        date_col, time_col = needs("dateTimeFilter", 2, args)
        return (
            f"({date_col} >= {date(start)} AND {date_col} <= {date(end)}) AND "
            f"({time_col} >= {date_time(start)} AND {time_col} <= {date_time(end)})"
        )

    def time_group(args: list[str]) -> str:
        col, period = needs("timeGroup", 2, args)
        seconds = round(_parse_go_duration(period.strip().strip("'\"")))
        if seconds <= 0:
            raise ValueError(f"$__timeGroup: interval must be positive, got {period!r}")
        return f"toStartOfInterval(toDateTime({col.strip()}), INTERVAL {seconds} second)"

    def no_context(name: str) -> Macro:
        def fail(args: list[str]) -> str:
            raise ValueError(f"$__{name}: no {name} name in query context")

        return fail

    interval_s = int(max(tr.interval.total_seconds(), 1))
    interval_ms = int(tr.interval.total_seconds() * 1000)
    return {
        "interval": lambda args: _go_duration(tr.interval),
        "interval_ms": lambda args: str(interval_ms),
        "interval_s": lambda args: str(interval_s),
        "timeFilter": lambda args: between("timeFilter", args, date_time),
        "timeFilter_ms": lambda args: between("timeFilter_ms", args, date_time64),
        "dateFilter": lambda args: between("dateFilter", args, date),
        "dateTimeFilter": date_time_filter,
        "dt": date_time_filter,
        "timeFrom": lambda args: f"{needs('timeFrom', 1, args)[0]} >= {date_time(start)}",
        "timeTo": lambda args: f"{needs('timeTo', 1, args)[0]} <= {date_time(end)}",
        "timeGroup": time_group,
        "fromTime": lambda args: date_time(start),
        "toTime": lambda args: date_time(end),
        "fromTime_ms": lambda args: date_time64(start),
        "toTime_ms": lambda args: date_time64(end),
        "timeInterval": lambda args: (
            f"toStartOfInterval(toDateTime({needs('timeInterval', 1, args)[0]}), "
            f"INTERVAL {interval_s} second)"
        ),
        "timeInterval_ms": lambda args: (
            f"toStartOfInterval(toDateTime64({needs('timeInterval_ms', 1, args)[0]}, 3), "
            f"INTERVAL {max(interval_ms, 1)} millisecond)"
        ),
        "table": no_context("table"),
        "column": no_context("column"),
    }


_NAME_CHAR = re.compile(r"[A-Za-z0-9_]")


def _replace_macro(s: str, token: str, macro: Macro) -> str:
    out: list[str] = []
    while True:
        idx = s.find(token)
        if idx == -1:
            out.append(s)
            return "".join(out)
        after = idx + len(token)
        if after < len(s) and _NAME_CHAR.match(s[after]):
            out.append(s[:after])  # the prefix of a longer name
            s = s[after:]
            continue
        out.append(s[:idx])
        s = s[after:]
        raw = ""
        if s.startswith("("):
            end = _closing_paren(s, 0)
            if end >= 0:
                raw, s = s[1:end], s[end + 1 :]
        out.append(macro(_split_args(raw)))


def expand_macros(sql: str, time_range: TimeRange) -> str:
    stripped = strip_comments(sql)
    for name in _STATEMENT_MACROS:
        if re.search(rf"\$__{name}\b", stripped):
            raise ValueError(f"statement macro $__{name} is not implemented by this expander")
    macros = _macros(time_range)
    for name in sorted(macros, key=lambda n: (-len(n), n)):
        stripped = _replace_macro(stripped, "$__" + name, macros[name])
    return stripped


def render(
    sql: str,
    variables: Mapping[str, Selection],
    time_range: TimeRange,
    scoped: Mapping[str, Selection] | None = None,
) -> str:
    """A panel's SQL as ClickHouse receives it; ``scoped`` holds a repeated panel's own values."""
    text = conditional_all(sql, variables)
    text = interpolate(text, {**variables, **(scoped or {})}, builtin_variables(time_range))
    return expand_macros(text, time_range)
