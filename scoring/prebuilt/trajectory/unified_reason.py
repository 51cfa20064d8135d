"""The unified trajectory scorer's reason: Mastra's ``generateReason``, one line per active dimension."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracescore.scoring.prebuilt.judge_helpers import js_number
from tracescore.scoring.prebuilt.trajectory.unified_scoring import has_blacklist_violation

_ACCURACY_LISTS = (("missing", "missing_steps"), ("extra", "extra_steps"),
                   ("out of order", "out_of_order_steps"))  # fmt: skip


def trajectory_reason(result: Mapping[str, Any], score: float) -> str:
    """Mastra's ``generateReason``: the score, then one line per active dimension."""
    parts = [f"Score: {js_number(score)}"]
    accuracy, efficiency, blacklist = (
        result.get("accuracy"),
        result.get("efficiency"),
        result.get("blacklist"),
    )
    failures, nested = result.get("tool_failures"), result.get("nested")
    if blacklist and blacklist["score"] == 0:
        violations = []
        if blacklist["violated_tools"]:
            violations.append(f"forbidden tools used: {', '.join(blacklist['violated_tools'])}")
        if blacklist["violated_sequences"]:
            seqs = "; ".join(" → ".join(s) for s in blacklist["violated_sequences"])
            violations.append(f"forbidden sequences: {seqs}")
        return "\n".join([*parts, f"Blacklist violation: {'. '.join(violations)}."])
    if nested and has_blacklist_violation(nested):
        names = ", ".join(r["step_name"] for r in nested if has_blacklist_violation([r]))
        return "\n".join([*parts, f"Nested blacklist violation in: {names}."])
    if accuracy:
        details = [f"{accuracy['matched_steps']}/{accuracy['total_expected_steps']} expected steps matched"]
        for label, key in _ACCURACY_LISTS:
            if accuracy[key]:
                details.append(f"{label}: {', '.join(accuracy[key])}")
        parts.append(f"Accuracy ({js_number(accuracy['score'])}): {'. '.join(details)}.")
    if efficiency:
        details = []
        if efficiency["over_step_budget"]:
            details.append(f"over step budget ({efficiency['total_steps']} steps)")
        if efficiency["over_token_budget"]:
            details.append(f"over token budget ({js_number(efficiency['total_tokens'])} tokens)")
        if efficiency["over_duration_budget"]:
            details.append(f"over duration budget ({js_number(efficiency['total_duration_ms'])}ms)")
        if efficiency["redundant_calls"]:
            details.append(f"redundant calls: {', '.join(c['name'] for c in efficiency['redundant_calls'])}")
        summary = ". ".join(details) if details else "all budgets met, no redundant calls"
        parts.append(f"Efficiency ({js_number(efficiency['score'])}): {summary}.")
    if failures and failures["patterns"]:
        details = [f"{failures['total_retries']} total retries"] if failures["total_retries"] > 0 else []
        if failures["excessive_retry_tools"]:
            details.append(f"excessive retries: {', '.join(failures['excessive_retry_tools'])}")
        parts.append(f"Tool failures ({js_number(failures['score'])}): {'. '.join(details)}.")
    if nested:
        summary = ", ".join(f"{r['step_name']}: {js_number(r['score'])}" for r in nested)
        parts.append(f"Nested scores: {summary}.")
    return "\n".join(parts)
