"""The report's charts, as plotly figures (JSON): each scorer's scores over time with its drift findings
and version changes marked, each scorer's score distribution, and the decision mix.

The page draws them with plotly.js, inlined once (``ingest.reporting.report_page``); a figure here is
data only, so the text in it (scorer ids, versions) is never markup.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from tracescore.ingest.reporting.report_reads import (
    DriftMark,
    Histogram,
    ReportData,
    ScorerVersionSpan,
    SeriesPoint,
)

CHART_HEIGHT = 280
DRIFT_COLOR = "#d62728"
VERSION_COLOR = "#7f3fbf"
# Each decision kind's colour; a kind not listed (a new one) gets plotly's next colour.
DECISION_COLORS = {
    "scored": "#2ca02c",
    "sampled_out": "#9e9e9e",
    "filtered": "#c7c7c7",
    "gated": "#9467bd",
    "budget_exceeded": "#ff7f0e",
    "skipped_empty": "#bcbd22",
    "skipped_too_large": "#8c564b",
    "failed": DRIFT_COLOR,
}


@dataclass(frozen=True)
class Chart:
    """One figure of the page: the id of its element, and the plotly figure as JSON data."""

    element_id: str
    figure: dict[str, Any]


def score_charts(data: ReportData) -> dict[str, tuple[Chart, Chart]]:
    """Per scorer: its scores over time, and its score distribution."""
    charts = {}
    for number, summary in enumerate(data.scorers):
        scorer = summary.scorer_id
        drift = [mark for mark in data.drift if mark.scorer_id == scorer]
        over_time = _over_time(data.series.get(scorer, ()), drift, data.versions.get(scorer, ()))
        over_time.update_xaxes(range=[data.since.isoformat(), data.until.isoformat()])
        distribution = _distribution(data.histograms[scorer]) if scorer in data.histograms else go.Figure()
        charts[scorer] = (
            Chart(f"scores-over-time-{number}", _json(over_time)),
            Chart(f"score-distribution-{number}", _json(distribution)),
        )
    return charts


def decision_chart(data: ReportData) -> Chart:
    """Every scorer's decisions in one stacked bar per scorer, a colour per decision kind."""
    scorers = sorted(data.decisions)
    kinds = sorted({kind for counts in data.decisions.values() for kind in counts}, key=_kind_order)
    figure = go.Figure(
        [
            go.Bar(
                name=kind,
                y=scorers,
                x=[data.decisions[scorer].get(kind, 0) for scorer in scorers],
                orientation="h",
                marker_color=DECISION_COLORS.get(kind),
            )
            for kind in kinds
        ]
    )
    figure.update_layout(barmode="stack", xaxis_title="decisions", legend_orientation="h")
    _style(figure, height=max(CHART_HEIGHT, 60 + 40 * len(scorers)))
    return Chart("decision-mix", _json(figure))


def _over_time(
    points: Sequence[SeriesPoint], drift: Sequence[DriftMark], versions: Sequence[ScorerVersionSpan]
) -> go.Figure:
    times = [point.at.isoformat() for point in points]
    figure = go.Figure(
        [
            go.Scatter(x=times, y=[p.high for p in points], name="highest", mode="lines", line_width=0),
            go.Scatter(
                x=times,
                y=[p.low for p in points],
                name="lowest",
                mode="lines",
                line_width=0,
                fill="tonexty",
                fillcolor="rgba(31,119,180,0.15)",
            ),
            go.Scatter(
                x=times,
                y=[p.mean for p in points],
                name="mean",
                mode="lines+markers",
                customdata=[p.n for p in points],
                hovertemplate="%{x}<br>mean %{y:.3f} of %{customdata} scores<extra></extra>",
                line_color="#1f77b4",
            ),
        ]
    )
    for mark in drift:
        where = ", ".join(part for part in (mark.service_name, mark.agent_name) if part)
        text = f"drift ({mark.severity})" + (f": {where}" if where else "")
        _mark(figure, mark.checked_at.isoformat(), text, DRIFT_COLOR, "solid", label_at=1.0)
    for change in versions[1:]:  # the first version seen is no change
        label = f"version {change.version}"
        _mark(figure, change.first_seen.isoformat(), label, VERSION_COLOR, "dash", label_at=0.9)
    figure.update_layout(yaxis_title="score", showlegend=False)
    _style(figure)
    return figure


def _mark(figure: go.Figure, at: str, text: str, color: str, dash: str, label_at: float) -> None:
    """A vertical line at ``at``, labelled at height ``label_at`` (a share of the plot: drift and
    version labels apart). A shape and an annotation: plotly's add_vline cannot place its label on a
    date axis given as text."""
    figure.add_shape(
        type="line", x0=at, x1=at, xref="x", y0=0, y1=1, yref="paper", line={"color": color, "dash": dash}
    )
    figure.add_annotation(
        x=at,
        y=label_at,
        xref="x",
        yref="paper",
        text=text,
        showarrow=False,
        font_color=color,
        yanchor="bottom",
        xanchor="right",
    )


def _distribution(histogram: Histogram) -> go.Figure:
    width = (histogram.high - histogram.low) / len(histogram.counts)
    centres = [histogram.low + width * (i + 0.5) for i in range(len(histogram.counts))]
    figure = go.Figure(
        go.Bar(
            x=centres,
            y=list(histogram.counts),
            width=width * 0.95,
            hovertemplate="%{x:.3f}: %{y} scores<extra></extra>",
            marker_color="#1f77b4",
        )
    )
    figure.update_layout(xaxis_title="score", yaxis_title="scores", showlegend=False)
    _style(figure)
    return figure


def _style(figure: go.Figure, height: int = CHART_HEIGHT) -> None:
    figure.update_layout(template="plotly_white", height=height, margin={"l": 50, "r": 20, "t": 30, "b": 40})


def _kind_order(kind: str) -> tuple[int, str]:
    known = list(DECISION_COLORS)
    return (known.index(kind) if kind in known else len(known), kind)


def _json(figure: go.Figure) -> dict[str, Any]:
    """The figure as plain JSON data (plotly's encoder: dates, numpy values)."""
    decoded: dict[str, Any] = json.loads(figure.to_json())
    return decoded
