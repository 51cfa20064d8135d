"""A run's ``agent_name``: one precedence for every convention (docs/conventions/README.md, "Agent name").

Frameworks wrap their agents: the OpenAI Agents SDK's "Agent workflow" span around the agent's own
span, a CrewAI crew around its agents, an OpenLLMetry ``@workflow`` around an ``@agent``. The run is
one, rooted at the outermost span, but its name is the agent's, so a rule filtering on
``agent_name`` finds it whatever wraps it:

1. the agent's own name attribute (``gen_ai.agent.name``, ``agent.name``, ...), innermost agent
   span first;
2. an attribute the convention names agents by (``graph.node.id``, ``traceloop.entity.name``,
   ``traceloop.workflow.name``, ``componentName``, ``ai.telemetry.functionId``...), innermost
   first; then the agent the run's own step spans say they work for (LlamaIndex's
   ``current_agent_name``), the first step's;
3. the span name of an agent span (``weather_agent``, ``invoke_agent weather_agent``), innermost
   first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tracescore.ingest.transform.adapters import AgentInfo
from tracescore.ingest.transform.trace_index import Node, read_acting_agent, start_order


def _first(names: Iterable[str | None]) -> str | None:
    return next((name.strip() for name in names if name and name.strip()), None)


def run_agent_name(agents: Sequence[AgentInfo], steps: Iterable[Node]) -> str | None:
    """``agents``: the readings of the run's agent spans, innermost first (the root last);
    ``steps``: the run's other spans, asked only when no agent span names the agent."""
    return (
        _first(a.name for a in agents)
        or _first(a.convention_name for a in agents)
        or (_first(read_acting_agent(n) for n in sorted(steps, key=start_order)) if agents else None)
        or _first(a.span_name for a in agents)
    )
