"""The judge flags of the commands that score (serve, score, eval, demo) and the variables they default to.

``--judge-model``, ``--judge-api-base`` and ``--judge-api-key`` set ``scoring.judge``; unset, the
``TRACESCORE_JUDGE_*`` variables do. ``serve`` reads the variables with the rest of its config
(``ingest.configuration.config_loader``); the commands without a config file read them here
(``judge_config``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from pydantic import SecretStr

from tracescore.ingest.configuration.service_secrets import read_secret_file
from tracescore.schemas.config import JudgeConfig

# Each judge flag and the config key it sets (``serve`` loads them with the rest of its config).
JUDGE_FLAG_KEYS = {
    "--judge-model": "scoring.judge.model",
    "--judge-api-base": "scoring.judge.api_base",
    "--judge-api-key": "scoring.judge.api_key",
}


def add_judge_arguments(parser: argparse.ArgumentParser, *, model_flag: str = "--judge-model") -> None:
    parser.add_argument(
        model_flag,
        dest="judge_model",
        metavar="MODEL",
        help="the LLM judge of scorers that name none, a litellm model such as openai/gpt-4o-mini "
        "(default $TRACESCORE_JUDGE_MODEL)",
    )
    parser.add_argument(
        "--judge-api-base",
        metavar="URL",
        help="the judge's OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1; a local one needs "
        "no key (default $TRACESCORE_JUDGE_API_BASE)",
    )
    parser.add_argument(
        "--judge-api-key",
        metavar="KEY",
        help="the judge's API key (default $TRACESCORE_JUDGE_API_KEY, the file named by "
        "$TRACESCORE_JUDGE_API_KEY_FILE, else the provider's variable such as OPENAI_API_KEY); "
        "a flag shows in the process list, a variable does not",
    )


def judge_config(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> JudgeConfig | None:
    """The judge the flags give, over the ``TRACESCORE_JUDGE_*`` variables (its key read from the file
    ``TRACESCORE_JUDGE_API_KEY_FILE`` names, unless a key is given); None when neither does."""
    env = os.environ if environ is None else environ
    key = args.judge_api_key or env.get("TRACESCORE_JUDGE_API_KEY")
    fields = {
        "model": args.judge_model or env.get("TRACESCORE_JUDGE_MODEL"),
        "api_base": args.judge_api_base or env.get("TRACESCORE_JUDGE_API_BASE"),
        "api_key": key,
        "api_key_file": None if key else env.get("TRACESCORE_JUDGE_API_KEY_FILE"),
    }
    given = {name: value for name, value in fields.items() if value}
    if not given:
        return None
    judge = JudgeConfig.model_validate(given)
    if judge.api_key_file:
        try:
            judge.api_key = SecretStr(read_secret_file(judge.api_key_file))
        except ValueError as exc:
            raise ValueError(f"environment variable TRACESCORE_JUDGE_API_KEY_FILE: {exc}") from None
    return judge
