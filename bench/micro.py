"""Micro benchmarks: the heuristic scorers against the libraries whose numbers they reproduce.

- ``heuristics_vs_autoevals``: exact match, Levenshtein, JSON diff, list contains and numeric diff
  against the ``autoevals`` Python package (``Scorer.eval``, its fastest entry point), in this process.
- ``heuristics_vs_mastra``: textual difference, content similarity, keyword coverage, completeness and
  tone against the published ``@mastra/evals`` 1.10.2 in Node 20 (``bench/mastra``; ``npm ci`` runs
  when its ``node_modules`` is missing), ``await scorer.run(run)`` on both sides.

Each cell is one scorer on a set of short (a sentence) or long (about 3 kB) inputs; both sides score
the same inputs, their scores must be equal (the bench fails otherwise), and each side's time is the
best of many short warm batches (``best_per_call``), the two sides measured back to back, cell by
cell. Ours is ``await scorer.run(run)`` on a prebuilt ``AgentRun`` carrying the same texts (no trace
id, so a run id is drawn, as Mastra draws one). A row's value and baseline are the geometric means
of the cells' calls per second, so its ratio is the geometric mean of the cells' ratios; its
``_min`` row is the slowest cell, held to >= 1.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from autoevals import ExactMatch, JSONDiff, Levenshtein, ListContains, NumericDiff

from bench.mastra import MastraTimer
from bench.micro_inputs import AUTOEVALS_CELLS, MASTRA_CELLS
from bench.report import Metric
from tracescore.schemas import AgentRun
from tracescore.scoring.framework.scorer import Scorer, create_scorer
from tracescore.scoring.prebuilt import (
    create_completeness_scorer,
    create_content_similarity_scorer,
    create_exact_match_scorer,
    create_json_diff_scorer,
    create_keyword_coverage_scorer,
    create_levenshtein_scorer,
    create_list_contains_scorer,
    create_numeric_diff_scorer,
    create_textual_difference_scorer,
    create_tone_scorer,
)

TARGET_SECONDS = 0.005  # a timed batch lasts at least this long
WARMUP_PASSES = 20  # untimed passes over a cell's inputs before its batches are timed
CELL_SECONDS = 0.4  # the batches of one side of one cell last about this long together
MIN_REPEATS, MAX_REPEATS = 3, 40

AUTOEVALS = {
    "exact-match": (create_exact_match_scorer, ExactMatch),
    "levenshtein": (create_levenshtein_scorer, Levenshtein),
    "json-diff": (create_json_diff_scorer, JSONDiff),
    "list-contains": (create_list_contains_scorer, ListContains),
    "numeric-diff": (create_numeric_diff_scorer, NumericDiff),
}
MASTRA: dict[str, Callable[[], Scorer]] = {
    "textual-difference": create_textual_difference_scorer,
    "content-similarity": create_content_similarity_scorer,
    "keyword-coverage": create_keyword_coverage_scorer,
    "completeness": create_completeness_scorer,
    "tone": create_tone_scorer,
}


@dataclass
class Cell:
    """One scorer on one set of inputs: seconds per call on each side."""

    name: str
    ours: float
    theirs: float

    @property
    def ratio(self) -> float:
        return self.theirs / self.ours


def best_per_call(batch: Callable[[int], float], size: int) -> float:
    """The best batch's seconds per call; ``batch(n)`` times n passes over ``size`` inputs.

    First WARMUP_PASSES untimed passes: a first call's one-time costs (a library imported on first
    use, in this process and in a step worker, for hundreds of ms) would otherwise make the first
    batch long enough to end the warm-up, and the timed batches would still be warming. Passes
    double until a batch lasts TARGET_SECONDS (warming up on the way); then as many
    batches as fit in CELL_SECONDS (MIN_REPEATS to MAX_REPEATS) are timed. Short batches, many
    of them: on a loaded machine some run without being preempted, and the best shows the cost.
    """
    batch(WARMUP_PASSES)
    calls = 1
    elapsed = batch(calls)
    while elapsed < TARGET_SECONDS:
        calls *= 2
        elapsed = batch(calls)
    repeats = min(MAX_REPEATS, max(MIN_REPEATS, round(CELL_SECONDS / elapsed)))
    return min(elapsed, *(batch(calls) for _ in range(repeats))) / (calls * size)


class OurRuns:
    """Times ``await scorer.run(run)`` over prebuilt runs on one event loop (kept for the whole part)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def close(self) -> None:
        self.loop.close()

    def scores(self, scorer: Scorer, runs: Sequence[AgentRun]) -> list[float]:
        return [self.loop.run_until_complete(scorer.run(run)).score for run in runs]

    def per_call(self, scorer: Scorer, runs: Sequence[AgentRun]) -> float:
        async def passes(calls: int) -> float:
            start = time.perf_counter()
            for _ in range(calls):
                for run in runs:
                    await scorer.run(run)
            return time.perf_counter() - start

        return best_per_call(lambda calls: self.loop.run_until_complete(passes(calls)), len(runs))


def _sync_per_call(fn: Callable[[Any, Any], object], pairs: Sequence[tuple[Any, Any]]) -> float:
    def passes(calls: int) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            for output, expected in pairs:
                fn(output, expected)
        return time.perf_counter() - start

    return best_per_call(passes, len(pairs))


def _check_equal(cell: str, ours: Sequence[float], theirs: Sequence[float | None], rel_tol: float) -> None:
    for i, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        if reference is None or not math.isclose(mine, reference, rel_tol=rel_tol, abs_tol=rel_tol):
            raise AssertionError(f"{cell}, input {i}: our score {mine!r} != the reference's {reference!r}")


def autoevals_cells(runs: OurRuns) -> list[Cell]:
    cells = []
    for case in AUTOEVALS_CELLS:
        ours_factory, theirs_class = AUTOEVALS[case.scorer]
        ours, theirs = ours_factory(), theirs_class()
        agent_runs = case.runs()
        # autoevals' JSONDiff sums an object's keys in set order, which varies between processes:
        # equal to 1e-12 (the tests' bound); every other score must be identical.
        tolerance = 1e-12 if case.scorer == "json-diff" else 0.0
        _check_equal(
            case.name,
            runs.scores(ours, agent_runs),
            [theirs.eval(output, expected).score for output, expected in case.autoevals_pairs],
            tolerance,
        )
        theirs_s = _sync_per_call(theirs.eval, case.autoevals_pairs)
        cells.append(Cell(case.name, runs.per_call(ours, agent_runs), theirs_s))
    return cells


def mastra_cells(runs: OurRuns) -> tuple[list[Cell], str]:
    cells = []
    with MastraTimer() as node:
        for case in MASTRA_CELLS:
            scorer = MASTRA[case.scorer]()
            agent_runs = case.runs()
            answer = node.time(
                case.name,
                case.scorer,
                case.pairs,
                target_seconds=TARGET_SECONDS,
                cell_seconds=CELL_SECONDS,
                min_repeats=MIN_REPEATS,
                max_repeats=MAX_REPEATS,
            )
            _check_equal(case.name, runs.scores(scorer, agent_runs), answer["scores"], 0.0)
            cells.append(Cell(case.name, runs.per_call(scorer, agent_runs), answer["seconds_per_call"]))
        version = node.version
    return cells, version


def pipeline_floor(runs: OurRuns) -> float:
    """Seconds per ``await scorer.run(run)`` of a scorer whose one step returns 1.0, on the short
    exact-match runs: what the pipeline itself costs (the run's checks, metering, the result)."""
    noop = create_scorer(id="noop", description="one constant step", needs={"output"})
    noop = noop.generate_score(lambda ctx: 1.0)
    short_exact = next(case for case in AUTOEVALS_CELLS if case.name == "exact-match short")
    return runs.per_call(noop, short_exact.runs())


def _rows(name: str, cells: list[Cell], peer: str, **extra: Any) -> list[Metric]:
    geo_ours = math.exp(sum(math.log(1 / cell.ours) for cell in cells) / len(cells))
    geo_theirs = math.exp(sum(math.log(1 / cell.theirs) for cell in cells) / len(cells))
    detail: dict[str, Any] = {
        cell.name: {
            "ratio": round(cell.ratio, 3),
            "ours_us": round(cell.ours * 1e6, 2),
            "baseline_us": round(cell.theirs * 1e6, 2),
        }
        for cell in cells
    }
    worst = min(cells, key=lambda cell: cell.ratio)
    detail["min"] = {"cell": worst.name, "ratio": round(worst.ratio, 3)}
    detail.update(extra)
    return [
        Metric(
            name,
            geo_ours,
            "calls/s (geometric mean)",
            geo_theirs,
            ">= 5",
            baseline_label=peer,
            detail=detail,
        ),
        Metric(
            f"{name}_min",
            1 / worst.ours,
            f"calls/s ({worst.name})",
            1 / worst.theirs,
            ">= 1",
            baseline_label=f"{peer}, {worst.name}",
            detail={"cell": worst.name},
        ),
    ]


def metrics() -> list[Metric]:
    runs = OurRuns()
    try:
        autoevals = autoevals_cells(runs)
        floor = pipeline_floor(runs)
        mastra, node = mastra_cells(runs)
    finally:
        runs.close()
    inputs = "short: parity sentences (50-200 characters); long: about 3,000 characters a text"
    return [
        *_rows(
            "heuristics_vs_autoevals",
            autoevals,
            f"autoevals {version('autoevals')} Scorer.eval",
            inputs=inputs,
            scorer_run_floor_us=round(floor * 1e6, 2),
        ),
        *_rows(
            "heuristics_vs_mastra",
            mastra,
            f"@mastra/evals 1.10.2 scorer.run, Node {node}",
            inputs=inputs,
        ),
    ]
