"""transform: the spans of one trace -> typed AgentRuns, whatever convention wrote them.

``adapters/`` reads single spans, one module per convention; ``trace_index`` indexes a trace's spans
with their adapter readings; ``runs`` joins them into runs (``build_runs``) with ``run_output``
building each run's assistant messages; ``correlate`` attaches log records to their spans;
``run_builder`` is the pipeline stage; ``diagnose`` says why a trace gives no run, or a run no text.
"""

from tracescore.ingest.transform.diagnose import explain_missing_content, explain_no_run
from tracescore.ingest.transform.runs import build_runs

__all__ = ["build_runs", "explain_missing_content", "explain_no_run"]
