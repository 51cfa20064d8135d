"""The output-text checks where our message model differs from Mastra's, and their edge cases."""

from __future__ import annotations

from tracescore.scoring.prebuilt.checks.output_checks import (
    create_includes_check,
    create_matches_check,
    create_similarity_check,
)
from tracescore.scoring.utils import create_agent_test_run, create_test_message, create_tool_invocation


async def test_messages_without_text_are_left_out_of_the_joined_output() -> None:
    # Our runs hold a text-less assistant message per tool-calling step; Mastra, which merges the
    # steps into one message, would see "" + " " + "It is sunny" here. We join only texts.
    step = create_test_message("", "assistant", tool_invocations=[create_tool_invocation("c1", "weather")])
    run = create_agent_test_run(
        input_messages="go", output=[step, create_test_message("It is sunny", "assistant")]
    )
    result = await create_includes_check("sunny").run(run)
    assert result.preprocess_step_result == {"output": "it is sunny", "target": "sunny", "found": True}
    result = await create_similarity_check("it is sunny").run(run)
    assert result.preprocess_step_result["output"] == "it is sunny"  # no leading space
    assert result.score == 1.0


async def test_a_global_regex_gives_the_same_answer_every_run() -> None:
    # Mastra reuses one /\d/g RegExp, so its lastIndex makes a second test of "a1" fail; a scorer
    # here holds no per-run state.
    scorer = create_matches_check(r"\d", "g")
    run = create_agent_test_run(input_messages="go", output="a1")
    assert [(await scorer.run(run)).score for _ in range(3)] == [1, 1, 1]


async def test_similarity_example_and_threshold_edge() -> None:
    run = create_agent_test_run(input_messages="go", output="It is sunny and 72°F")
    # Reference case similarity-partial: 0.5833333333333334; a threshold equal to it passes (>=).
    assert (await create_similarity_check("Sunny, 72°F").run(run)).score == 0.5833333333333334
    assert (await create_similarity_check("Sunny, 72°F", threshold=0.5833333333333334).run(run)).score == 1
