"""The tool-call checks on runs as the ingest adapters record them."""

from __future__ import annotations

from tracescore.scoring.prebuilt.checks.tool_checks import create_no_tool_errors_check
from tracescore.scoring.utils import create_agent_test_run, create_test_message, create_tool_invocation


async def test_ingested_tool_errors_fail_no_tool_errors() -> None:
    # The ingest adapters record a failed tool span (Mastra's isError / output-error) as state "error".
    calls = [
        create_tool_invocation("c1", "search", result={"hits": 3}),
        create_tool_invocation("c2", "save", result="disk full", state="error"),
    ]
    run = create_agent_test_run(
        input_messages="go", output=[create_test_message("", "assistant", tool_invocations=calls)]
    )
    result = await create_no_tool_errors_check().run(run)
    assert result.preprocess_step_result == {"error_count": 1, "total_calls": 2, "passed": False}
    assert result.score == 0
