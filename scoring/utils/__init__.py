"""Mastra's scorer utils in Python: read a run's user message, answer, reasoning and system prompt.

Same names as ``@mastra/evals/scorers/utils`` in snake_case, same behaviour on our ``AgentRun``::

    from tracescore.scoring.utils import (
        get_assistant_message_from_run_output,
        get_user_message_from_run_input,
    )

    scorer = create_scorer(id="echo", description="...").preprocess(lambda ctx: {
        "question": get_user_message_from_run_input(ctx.run),
        "answer": get_assistant_message_from_run_output(ctx.run),
    })

Where Mastra accepts several shapes, so do these: an ``AgentRun`` (read through its ``input`` or
``output``), a ``RunInput`` or message list, their JSON dicts (snake_case or camelCase), Mastra's
stored messages (``content: {format: 2, parts, content, toolInvocations, reasoning}``) and plain
strings. ``create_test_message`` and ``create_agent_test_run`` build runs for tests and evals.
"""

from tracescore.scoring.framework.message_text import ToolCallInfo, extract_tool_calls
from tracescore.scoring.utils.builders import (
    create_agent_test_run,
    create_test_message,
    create_tool_invocation,
)
from tracescore.scoring.utils.messages import merge_tool_invocations, to_message
from tracescore.scoring.utils.readers import (
    DEFAULT_CONVERSATION_HISTORY_MESSAGES,
    extract_agent_response_messages,
    extract_input_messages,
    get_assistant_message_from_run_output,
    get_combined_system_prompt,
    get_conversation_history_from_run_input,
    get_reasoning_from_run_output,
    get_system_messages_from_run_input,
    get_user_message_from_run_input,
)

__all__ = [
    "DEFAULT_CONVERSATION_HISTORY_MESSAGES",
    "ToolCallInfo",
    "create_agent_test_run",
    "create_test_message",
    "create_tool_invocation",
    "extract_agent_response_messages",
    "extract_input_messages",
    "extract_tool_calls",
    "get_assistant_message_from_run_output",
    "get_combined_system_prompt",
    "get_conversation_history_from_run_input",
    "get_reasoning_from_run_output",
    "get_system_messages_from_run_input",
    "get_user_message_from_run_input",
    "merge_tool_invocations",
    "to_message",
]
