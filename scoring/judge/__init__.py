"""The LLM judge: a litellm client (``client``), its error classes (``errors``), usage metering
(``usage``), the data markers of judge prompts (``data``) and litellm's one-time setup.

::

    from tracescore.scoring.judge import Judge, delimit

    judge = Judge("openai/gpt-4o-mini", "You grade answers for relevance.")
    result = await judge.structured(f"Rate this answer.\\n{delimit('answer', text)}", Verdict)
"""

from tracescore.scoring.judge.client import Judge, JudgeResult
from tracescore.scoring.judge.data_fences import DATA_PREAMBLE, delimit
from tracescore.scoring.judge.failures import JudgeError, classify, is_timeout
from tracescore.scoring.judge.litellm_setup import close_clients, litellm_module
from tracescore.scoring.judge.usage import JudgeUsage, metered

__all__ = [
    "DATA_PREAMBLE",
    "Judge",
    "JudgeError",
    "JudgeResult",
    "JudgeUsage",
    "classify",
    "close_clients",
    "delimit",
    "is_timeout",
    "litellm_module",
    "metered",
]
