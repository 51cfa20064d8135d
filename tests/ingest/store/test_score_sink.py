"""Scores and decisions written to and read back from real chDB, and the scored-spans view.

Expected values are written by hand from the inputs built in ``tests.ingest.store.samples``, following
the OpenTelemetry Collector clickhouseexporter's row mapping and pdata's ``AsString()`` rendering.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tests.ingest.store.samples import (
    CHILD_SPAN,
    CREATED,
    LATER,
    OTHER_TRACE,
    ROOT_SPAN,
    TRACE,
    agent_span,
    relevancy,
    tool_span,
)
from tests.support.store import count_queries
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.ledger import Ledger, PriorRounds
from tracescore.ingest.store.score_reads import ScoreResults
from tracescore.ingest.store.score_sink import ClickHouseScoreSink, read_prior_outcomes
from tracescore.ingest.store.span_sink import insert_spans
from tracescore.schemas import Decision
from tracescore.schemas.assembly_rounds import UnitOutcome
from tracescore.schemas.consumers import PriorOutcomes
from tracescore.schemas.score import score_id


async def test_scores_are_idempotent_and_the_latest_write_wins(store: Store) -> None:
    await ClickHouseScoreSink(store).write_scores([relevancy(), relevancy()], [])
    expected = {
        "trace_id": TRACE, "span_id": ROOT_SPAN, "scorer_id": "answer-relevancy", "scorer_version": "1",
        "score": 0.75, "label": "relevant", "reason": "answers the question",
        "step_results": {"statements": ["a", "b"], "n": 2}, "judge_model": "gpt-4o-mini",
        "input_tokens": 120, "output_tokens": 30, "cost_usd": 0.0004, "latency_ms": 812.5,
        "sample_rate": 0.5, "source": "live", "agent_name": "weather_agent", "service_name": "weather-svc",
        "session_id": "", "created_at": "2025-01-02T03:04:05.678901+00:00",
        "score_id": score_id(TRACE, ROOT_SPAN, "answer-relevancy"),
    }  # fmt: skip
    assert await ScoreResults(store).trace_scores(TRACE) == [expected]

    # A replay re-scores the run later with a different verdict: one row, the new values.
    await ClickHouseScoreSink(store).write_scores(
        [relevancy(score=0.25, reason="replayed", label="partial", created_at=LATER)], []
    )
    replayed = {**expected, "score": 0.25, "reason": "replayed", "label": "partial",
                "created_at": "2025-01-02T03:09:00.000001+00:00"}  # fmt: skip
    assert await ScoreResults(store).trace_scores(TRACE) == [replayed]

    # A late, older write does not roll the score back.
    await ClickHouseScoreSink(store).write_scores([relevancy(reason="stale")], [])
    assert await ScoreResults(store).trace_scores(TRACE) == [replayed]

    # Same created_at (same Version): the last insert wins.
    await ClickHouseScoreSink(store).write_scores(
        [relevancy(score=0.25, reason="again", label="partial", created_at=LATER)], []
    )
    assert await ScoreResults(store).trace_scores(TRACE) == [{**replayed, "reason": "again"}]

    # Other spans, scorers and traces are separate rows, ordered by span then scorer.
    await ClickHouseScoreSink(store).write_scores(
        [
            relevancy(scorer_id="toxicity", score=0.0),
            relevancy(span_id=CHILD_SPAN, scorer_id="tool-accuracy"),
            relevancy(trace_id=OTHER_TRACE),
        ],
        [],
    )
    keys = [(row["span_id"], row["scorer_id"]) for row in await ScoreResults(store).trace_scores(TRACE)]
    assert keys == [(CHILD_SPAN, "tool-accuracy"), (ROOT_SPAN, "answer-relevancy"), (ROOT_SPAN, "toxicity")]
    assert await ScoreResults(store).trace_scores("ffffffffffffffffffffffffffffffff") == []


async def test_decisions_keep_one_current_row_per_run_and_scorer(store: Store) -> None:
    failed = Decision(
        trace_id=TRACE,
        span_id=ROOT_SPAN,
        scorer_id="answer-relevancy",
        decision="failed",
        detail="judge timed out",
        sample_rate=0.5,
        created_at=CREATED,
    )
    sampled_out = Decision(
        trace_id=TRACE,
        span_id=ROOT_SPAN,
        scorer_id="toxicity",
        decision="sampled_out",
        sample_rate=0.1,
        source="backfill",
        created_at=CREATED,
    )
    await ClickHouseScoreSink(store).write_scores([], [failed, sampled_out, failed])
    scored = failed.model_copy(update={"decision": "scored", "detail": "", "created_at": LATER})
    await ClickHouseScoreSink(store).write_scores([relevancy()], [scored])

    assert await ScoreResults(store).trace_decisions(TRACE) == [
        {"trace_id": TRACE, "span_id": ROOT_SPAN, "scorer_id": "answer-relevancy", "decision": "scored",
         "detail": "", "sample_rate": 0.5, "source": "live",
         "created_at": "2025-01-02T03:09:00.000001+00:00", "agent_name": "", "service_name": "",
         "session_id": ""},
        {"trace_id": TRACE, "span_id": ROOT_SPAN, "scorer_id": "toxicity", "decision": "sampled_out",
         "detail": "", "sample_rate": 0.1, "source": "backfill",
         "created_at": "2025-01-02T03:04:05.678901+00:00", "agent_name": "", "service_name": "",
         "session_id": ""},
    ]  # fmt: skip
    assert len(await ScoreResults(store).trace_scores(TRACE)) == 1


async def test_view_shows_scores_as_genai_evaluation_span_attributes(store: Store) -> None:
    await insert_spans(store, [agent_span(), tool_span()])
    await ClickHouseScoreSink(store).write_scores(
        [relevancy(), relevancy(scorer_id="toxicity", score=1.0, label="", reason="no toxic content")], []
    )
    await ClickHouseScoreSink(store).write_scores([relevancy(reason="replayed", created_at=LATER)], [])

    rows = await store.query(
        "SELECT SpanId, SpanAttributes, SpanKind, Duration, Events.Name AS EventNames "
        "FROM otel_traces_scored WHERE TraceId = {t:String} ORDER BY SpanId",
        {"t": TRACE},
    )
    assert [row["SpanId"] for row in rows] == [CHILD_SPAN, ROOT_SPAN]
    assert rows[0]["SpanAttributes"] == {"gen_ai.tool.name": "get_weather"}
    scored = rows[1]["SpanAttributes"]
    assert scored["gen_ai.evaluation.answer-relevancy.score"] == "0.75"
    assert scored["gen_ai.evaluation.answer-relevancy.label"] == "relevant"
    assert scored["gen_ai.evaluation.answer-relevancy.explanation"] == "replayed"
    assert scored["gen_ai.evaluation.toxicity.score"] == "1"
    assert scored["gen_ai.evaluation.toxicity.explanation"] == "no toxic content"
    assert scored["gen_ai.system"] == "openai"  # the span's own attributes stay
    assert len(scored) == 11 + 6
    assert (rows[1]["SpanKind"], rows[1]["Duration"], rows[1]["EventNames"]) == (
        "Client", 2_500_000_001, ["gen_ai.choice", "exception"])  # fmt: skip


async def test_the_by_scorer_companions_order_by_time_and_count_a_replayed_pair_once(store: Store) -> None:
    sink = ClickHouseScoreSink(store)
    started = datetime(2025, 1, 2, 3, 0, tzinfo=UTC)
    first = Decision(
        trace_id=TRACE, span_id=ROOT_SPAN, scorer_id="answer-relevancy", decision="failed",
        agent_name="weather_agent", service_name="weather-svc", span_start=started, created_at=CREATED,
    )  # fmt: skip
    await sink.write_scores([relevancy(span_start=started)], [first])
    # The replay scores the same span later, with another verdict and a later created_at.
    replayed = first.model_copy(update={"decision": "scored", "created_at": LATER})
    await sink.write_scores([relevancy(span_start=started, score=0.25, created_at=LATER)], [replayed])
    # Another span of the trace, scored without a known start: its created_at stands in.
    await sink.write_scores([relevancy(span_id=CHILD_SPAN, score=1.0)], [])

    database = store.quoted_database
    scores = await store.query(
        f"SELECT SpanId, Score, SpanStart, ServiceName, AgentName FROM {database}.scores_by_scorer FINAL "
        "WHERE ScorerId = 'answer-relevancy' ORDER BY SpanStart",
        {},
    )
    assert [(r["SpanId"], r["Score"], r["SpanStart"]) for r in scores] == [
        (ROOT_SPAN, 0.25, started.replace(tzinfo=None)),
        (CHILD_SPAN, 1.0, CREATED.replace(tzinfo=None)),
    ]
    assert {(r["ServiceName"], r["AgentName"]) for r in scores} == {("weather-svc", "weather_agent")}
    decisions = await store.query(
        f"SELECT Decision, ServiceName, AgentName FROM {database}.decisions_by_scorer FINAL", {}
    )
    assert decisions == [{"Decision": "scored", "ServiceName": "weather-svc", "AgentName": "weather_agent"}]


async def test_prior_outcomes_of_a_whole_batch_come_in_one_query_each_trace_from_its_own_since(
    store: Store,
) -> None:
    sink = ClickHouseScoreSink(store)
    at = datetime(2025, 1, 2, 3, 4, 0, tzinfo=UTC)
    decided = Decision(trace_id=TRACE, span_id=ROOT_SPAN, scorer_id="answer-relevancy", decision="scored")
    # TRACE: one decision, and a score whose decision was never written (a crash between the two).
    # OTHER_TRACE: a decision written before its since (an earlier round's): not this round's.
    await sink.write_scores(
        [relevancy(span_id=CHILD_SPAN, created_at=LATER)],
        [
            decided.model_copy(update={"created_at": LATER}),
            decided.model_copy(update={"trace_id": OTHER_TRACE, "created_at": at}),
        ],
    )
    since = {TRACE: _ns(CREATED), OTHER_TRACE: _ns(CREATED), "f" * 32: 0}
    queries = count_queries(store)
    prior = await read_prior_outcomes(store, since)
    assert queries == [1]
    assert set(prior) == {TRACE}  # nothing written at or after its since: absent
    assert prior[TRACE].decided == {(ROOT_SPAN, "answer-relevancy")}
    assert prior[TRACE].scored_undecided == {(CHILD_SPAN, "answer-relevancy")}
    # One trace alone, as the executor asks when it has no store-read round: the same answer.
    assert await sink.prior_outcomes(TRACE, _ns(CREATED)) == prior[TRACE]
    assert await sink.prior_outcomes(OTHER_TRACE, _ns(at)) != PriorOutcomes()


async def test_prior_outcomes_say_what_each_pair_came_to_for_a_cascade_s_gated_rules(store: Store) -> None:
    sink = ClickHouseScoreSink(store)
    held = Decision(trace_id=TRACE, span_id=CHILD_SPAN, scorer_id="judge", decision="gated", created_at=LATER)
    await sink.write_scores(
        # ROOT_SPAN: scored and decided; CHILD_SPAN: a score without its decision, and another
        # scorer's gated decision.
        [
            relevancy(created_at=LATER, score=0.3, label="partly"),
            relevancy(span_id=CHILD_SPAN, created_at=LATER),
        ],
        [
            Decision(
                trace_id=TRACE,
                span_id=ROOT_SPAN,
                scorer_id="answer-relevancy",
                decision="scored",
                created_at=LATER,
            ),
            held,
        ],
    )
    prior = await sink.prior_outcomes(TRACE, _ns(CREATED))
    assert prior.outcomes == {
        (ROOT_SPAN, "answer-relevancy"): UnitOutcome("scored", 0.3, "partly"),
        (CHILD_SPAN, "answer-relevancy"): UnitOutcome("scored", 0.75, "relevant"),
        (CHILD_SPAN, "judge"): UnitOutcome("gated"),
    }


async def test_status_tells_score_rows_written_without_their_decisions(store: Store) -> None:
    sink = ClickHouseScoreSink(store)
    await sink.write_scores([relevancy()], [])
    await sink.write_scores(
        [], [Decision(trace_id=OTHER_TRACE, span_id=ROOT_SPAN, scorer_id="x", decision="scored")]
    )
    status = await Ledger(store).status([TRACE, OTHER_TRACE, "f" * 32])
    assert status == {
        TRACE: PriorRounds(done_through=0, has_decisions=False, has_scores=True),
        OTHER_TRACE: PriorRounds(done_through=0, has_decisions=True, has_scores=False),
    }
    assert status[TRACE].has_rows and status[OTHER_TRACE].has_rows


def _ns(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1_000


async def test_outcomes_stored_under_a_former_id_count_for_the_scorer_s_name(store: Store) -> None:
    # A round decided by an earlier release (as "answer-relevancy-scorer") and resumed after the
    # upgrade: its rule, which stores as "answer-relevancy" now, is not decided a second time.
    sink = ClickHouseScoreSink(store)
    former = Decision(
        trace_id=TRACE, span_id=ROOT_SPAN, scorer_id="answer-relevancy-scorer", decision="scored"
    )
    await sink.write_scores(
        [relevancy(span_id=CHILD_SPAN, scorer_id="answer-relevancy-scorer")],
        [former.model_copy(update={"created_at": LATER})],
    )
    prior = await sink.prior_outcomes(TRACE, _ns(CREATED))
    assert prior.decided == {(ROOT_SPAN, "answer-relevancy-scorer"), (ROOT_SPAN, "answer-relevancy")}
    assert prior.scored_undecided == {
        (CHILD_SPAN, "answer-relevancy-scorer"),
        (CHILD_SPAN, "answer-relevancy"),
    }
