"""The query expander of tests.support.grafana against the expansions its sources test for.

Expected strings are the upstream projects' own: grafana/clickhouse-datasource ``pkg/macros/macros_test.go``
(backend macros) and ``src/data/CHDatasource.test.ts`` (``$__conditionalAll``), and Grafana's variable
format documentation ("Advanced variable format options").
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.grafana import (
    ALL,
    Selection,
    TimeRange,
    builtin_variables,
    conditional_all,
    expand_macros,
    interpolate,
    render,
)

# The time ranges of macros_test.go.
FROM = datetime(2014, 11, 12, 11, 45, 26, 371_000, tzinfo=UTC)
TO = datetime(2015, 11, 12, 11, 45, 26, 371_000, tzinfo=UTC)
YEAR = TimeRange(FROM, TO, timedelta(0))
INTERPOLATE = TimeRange(
    datetime(2014, 11, 12, 11, 45, 26, 123_000, tzinfo=UTC),
    datetime(2015, 11, 12, 11, 45, 26, 456_000, tzinfo=UTC),
    timedelta(0),
)
TWENTY_SECONDS = TimeRange(FROM, TO, timedelta(seconds=20))


@pytest.mark.parametrize(
    ("sql", "expanded"),
    [
        ("$__fromTime", "toDateTime(1415792726)"),
        ("$__toTime", "toDateTime(1447328726)"),
        ("$__fromTime_ms", "fromUnixTimestamp64Milli(1415792726371)"),
        ("$__toTime_ms", "fromUnixTimestamp64Milli(1447328726371)"),
        ("$__dateFilter(dateCol)", "dateCol >= toDate('2014-11-12') AND dateCol <= toDate('2015-11-12')"),
        (
            "$__dateTimeFilter(dateCol, timeCol)",
            "(dateCol >= toDate('2014-11-12') AND dateCol <= toDate('2015-11-12')) AND "
            "(timeCol >= toDateTime(1415792726) AND timeCol <= toDateTime(1447328726))",
        ),
        ("$__timeFrom(ts)", "ts >= toDateTime(1415792726)"),
        ("$__timeTo(ts)", "ts <= toDateTime(1447328726)"),
        ("$__timeGroup(ts, 5m)", "toStartOfInterval(toDateTime(ts), INTERVAL 300 second)"),
        ("$__timeGroup(ts, 1h)", "toStartOfInterval(toDateTime(ts), INTERVAL 3600 second)"),
    ],
)
def test_time_range_macros(sql: str, expanded: str) -> None:
    assert expand_macros(sql, YEAR) == expanded


@pytest.mark.parametrize(
    ("sql", "expanded"),
    [
        ("$__timeInterval(col)", "toStartOfInterval(toDateTime(col), INTERVAL 20 second)"),
        ("$__timeInterval_ms(col)", "toStartOfInterval(toDateTime64(col, 3), INTERVAL 20000 millisecond)"),
        ("$__interval_s", "20"),
    ],
)
def test_interval_macros(sql: str, expanded: str) -> None:
    assert expand_macros(sql, TWENTY_SECONDS) == expanded


def test_interval_seconds_is_at_least_one() -> None:
    assert expand_macros("$__interval_s", TimeRange(FROM, TO, timedelta(milliseconds=200))) == "1"


@pytest.mark.parametrize(
    ("sql", "expanded"),
    [
        (
            "select * from foo where $__timeFilter(cast(sth as timestamp))",
            "select * from foo where cast(sth as timestamp) >= toDateTime(1415792726) AND "
            "cast(sth as timestamp) <= toDateTime(1447328726)",
        ),
        (
            "select * from foo where $__timeFilter(cast(sth as timestamp) )",
            "select * from foo where cast(sth as timestamp) >= toDateTime(1415792726) AND "
            "cast(sth as timestamp) <= toDateTime(1447328726)",
        ),
        (
            "select * from foo where $__timeFilter_ms(cast(sth as timestamp))",
            "select * from foo where cast(sth as timestamp) >= fromUnixTimestamp64Milli(1415792726123) AND "
            "cast(sth as timestamp) <= fromUnixTimestamp64Milli(1447328726456)",
        ),
        (
            "select * from foo where ( date >= $__fromTime and date <= $__toTime ) limit 100",
            "select * from foo where ( date >= toDateTime(1415792726) and "
            "date <= toDateTime(1447328726) ) limit 100",
        ),
        (
            "select * from foo where ( date >= $__fromTime_ms ) and ( date <= $__toTime_ms ) limit 100",
            "select * from foo where ( date >= fromUnixTimestamp64Milli(1415792726123) ) and "
            "( date <= fromUnixTimestamp64Milli(1447328726456) ) limit 100",
        ),
        # Nested macros expand from the longest name down.
        (
            "select * from foo where $__timeFilter(coalesce(closed_at, $__toTime))",
            "select * from foo where coalesce(closed_at, toDateTime(1447328726)) >= toDateTime(1415792726) "
            "AND coalesce(closed_at, toDateTime(1447328726)) <= toDateTime(1447328726)",
        ),
        # Quoted regions keep what looks like comments; comments are blanked.
        (
            "select * from foo where msg = 'it\\'s -- fine' and $__fromTime",
            "select * from foo where msg = 'it\\'s -- fine' and toDateTime(1415792726)",
        ),
        (
            "select * from foo where msg = 'it''s' and $__fromTime",
            "select * from foo where msg = 'it''s' and toDateTime(1415792726)",
        ),
        (
            "SELECT `it's` AS x, msg FROM t WHERE msg = 'a--b' AND $__timeFilter(ts)",
            "SELECT `it's` AS x, msg FROM t WHERE msg = 'a--b' AND ts >= toDateTime(1415792726) AND "
            "ts <= toDateTime(1447328726)",
        ),
        (
            "SELECT $doc$a--b$doc$ AS x FROM t WHERE $__toTime",
            "SELECT $doc$a--b$doc$ AS x FROM t WHERE toDateTime(1447328726)",
        ),
    ],
)
def test_interpolate_like_the_plugin(sql: str, expanded: str) -> None:
    assert expand_macros(sql, INTERPOLATE) == expanded


def test_nested_interval_macros() -> None:
    minute = TimeRange(INTERPOLATE.start, INTERPOLATE.end, timedelta(minutes=1))
    assert (
        expand_macros("SELECT $__timeInterval($__fromTime) AS from_time", minute)
        == "SELECT toStartOfInterval(toDateTime(toDateTime(1415792726)), INTERVAL 60 second) AS from_time"
    )


def test_macros_in_comments_are_not_expanded_and_comments_are_blanked() -> None:
    line, block = "-- $__timeFilter(x)", "/* $__toTime */"
    assert expand_macros(f"SELECT 1 {line}\nFROM t", YEAR) == f"SELECT 1 {' ' * len(line)}\nFROM t"
    assert expand_macros(f"SELECT {block} 1", YEAR) == f"SELECT {' ' * len(block)} 1"


def test_unknown_macros_stay_and_bad_arguments_fail() -> None:
    assert expand_macros("SELECT $__nothing(a)", YEAR) == "SELECT $__nothing(a)"
    with pytest.raises(ValueError, match="expected 1 argument"):
        expand_macros("$__timeFilter(a, b)", YEAR)
    with pytest.raises(ValueError, match="invalid interval"):
        expand_macros("$__timeGroup(ts, not-a-duration)", YEAR)
    with pytest.raises(ValueError, match="statement macro"):
        expand_macros("SELECT $__columns(t, k, v) FROM x", YEAR)


# --- $__conditionalAll (CHDatasource.test.ts) ---------------------------------------------------------


def test_conditional_all_with_all_selected_is_always_true() -> None:
    sql = "select stuff from table where $__conditionalAll(fieldVal in ($fieldVal), $fieldVal);"
    everything = Selection((), multi=True, is_all=True)
    assert conditional_all(sql, {"fieldVal": everything}) == "select stuff from table where 1=1;"
    assert conditional_all("$__conditionalAll(foo, $fieldVal)", {"fieldVal": everything}) == "1=1"


def test_conditional_all_with_values_selected_keeps_the_condition() -> None:
    sql = "select stuff from table where $__conditionalAll(fieldVal in ($fieldVal), $fieldVal);"
    picked = Selection(("val1", "val2"), multi=True)
    assert (
        conditional_all(sql, {"fieldVal": picked}) == "select stuff from table where fieldVal in ($fieldVal);"
    )
    assert conditional_all("$__conditionalAll(foo, $fieldVal)", {"fieldVal": picked}) == "foo"


def test_every_conditional_all_is_replaced() -> None:
    sql = (
        "select stuff from table where $__conditionalAll(fieldVal in ($fieldVal), $fieldVal) "
        "and $__conditionalAll(fieldVal in ($fieldVal2), $fieldVal2);"
    )
    variables = {
        "fieldVal": Selection(("val1", "val2"), multi=True),
        "fieldVal2": Selection((), multi=True, is_all=True),
    }
    assert conditional_all(sql, variables) == "select stuff from table where fieldVal in ($fieldVal) and 1=1;"


def test_conditional_all_of_an_empty_variable_is_true() -> None:
    assert conditional_all("$__conditionalAll(x = '${v}', ${v})", {"v": Selection.one("")}) == "1=1"


# --- template variables (Grafana's variable syntax and formats) -----------------------------------------

SERVERS = Selection(("test'1", "test2"), multi=True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${servers:singlequote}", "'test\\'1','test2'"),
        ("${servers:doublequote}", '"test\'1","test2"'),
        ("${servers:sqlstring}", "'test''1','test2'"),
        ("${servers:csv}", "test'1,test2"),
        # The ClickHouse plugin's own format when none is named.
        ("$servers", "'test'1','test2'"),
        ("${servers}", "'test'1','test2'"),
        ("[[servers]]", "'test'1','test2'"),
    ],
)
def test_multi_value_formats(text: str, expected: str) -> None:
    assert interpolate(text, {"servers": SERVERS}, {}) == expected


def test_all_stands_for_every_option_unless_the_variable_has_a_custom_all_value() -> None:
    every = Selection((), multi=True, is_all=True, options=("a", "b"))
    custom = Selection((), multi=True, is_all=True, options=("a", "b"), all_value=".*")
    assert interpolate("IN (${v:singlequote})", {"v": every}, {}) == "IN ('a','b')"
    assert interpolate("${v:singlequote}", {"v": custom}, {}) == ".*"
    assert interpolate("${v:text}", {"v": every}, {}) == "All"


def test_single_values_unknown_variables_and_builtins() -> None:
    one = Selection.one("abc")
    builtins = builtin_variables(TimeRange(FROM, TO, timedelta(minutes=1)))
    assert interpolate("$v ${v:singlequote} $unknown $__timeFilter(x)", {"v": one}, builtins) == (
        "abc 'abc' $unknown $__timeFilter(x)"
    )
    assert interpolate("$__from $__to $__interval", {}, builtins) == "1415792726371 1447328726371 1m"
    with pytest.raises(ValueError, match="format"):
        interpolate("${v:lucene}", {"v": one}, {})


def test_render_runs_conditional_all_then_variables_then_macros() -> None:
    sql = "WHERE $__timeFilter(t) AND $__conditionalAll(s IN (${s:singlequote}), $s) AND k = ${k:singlequote}"
    picked = {"s": Selection(("x", "y"), multi=True), "k": Selection((ALL,), multi=True, is_all=True)}
    assert render(sql, picked, YEAR, scoped={"k": Selection.one("z")}) == (
        "WHERE t >= toDateTime(1415792726) AND t <= toDateTime(1447328726) AND s IN ('x','y') AND k = 'z'"
    )
    everything = {"s": Selection((), multi=True, is_all=True, options=("x", "y")), "k": Selection.one("z")}
    assert "AND 1=1 AND" in render(sql, everything, YEAR)
