"""A conversation as one scoring unit: the runs of a session joined in the order they started.

The unit is an ``AgentRun`` that single-run scorers can read as they read any run, and that
multi-turn scorers read turn by turn:

- ``turns``: every run as a ``Turn`` (its new user input, its answer with tool calls and results,
  times and status), in order;
- ``input.input_messages`` and ``output``: the last turn's, as in the last run;
  ``input.remembered_messages``: every earlier turn's input and output, in order;
  ``input.system_messages``: the last run's;
- ``trace_id``, ``span_id``, names and model: the last run's (its root span is where the scores land);
  ``start_time`` the first run's start, ``end_time`` the last run's end; ``status`` ``error`` when a
  turn ended in error; ``context`` and ``usage`` of every turn together.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from tracescore.schemas import AgentRun, Usage

_EARLIEST = datetime.min.replace(tzinfo=UTC)


def conversation_unit(session_id: str, runs: Sequence[AgentRun]) -> AgentRun:
    """The session unit of ``runs`` (at least one), whatever order they come in."""
    ordered = sorted(runs, key=lambda run: (run.start_time or _EARLIEST, run.trace_id, run.span_id))
    last = ordered[-1]
    turns = [run.as_turn() for run in ordered]
    history = [message for turn in turns[:-1] for message in (*turn.input, *turn.output)]
    return last.model_copy(
        update={
            "session_id": session_id,
            "turns": turns,
            "start_time": ordered[0].start_time,
            "status": "error" if any(run.status == "error" for run in ordered) else "ok",
            "input": last.input.model_copy(update={"remembered_messages": history}),
            "context": [text for run in ordered for text in run.context],
            "usage": Usage(
                input_tokens=sum(run.usage.input_tokens for run in ordered),
                output_tokens=sum(run.usage.output_tokens for run in ordered),
            ),
            "content_missing": all(run.content_missing for run in ordered),
        }
    )
