"""``tracescore scorers``: every prebuilt scorer, what it needs and its options (a table, or ``--json``)."""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from dataclasses import dataclass
from typing import Any

import yaml
from rich.table import Table

from tracescore.ingest.cli.terminal import make_console

# What the needs are computed with for an LLM scorer: the judge is not called, only named.
PLACEHOLDER_JUDGE = "openai/gpt-4o-mini"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "scorers",
        help="list the prebuilt scorers: name (also their stored id), LLM or not, needs, options",
        description=(
            "List the prebuilt scorers. NAME shows one in full, with a rule to start from. A scorer's name "
            "is also its id: what its rows are stored under and what 'tracescore scores --scorer' takes; "
            "'formerly' is the id earlier releases stored it under, still accepted. 'version' is its "
            "code's; a score's version adds a hash of its rule's options, prompts and judge model. "
            "'needs' is what a run must hold to be scored with the default options (without it the "
            "decision is skipped_empty)."
        ),
    )
    parser.add_argument("name", nargs="?", help="one scorer's name or id")
    parser.add_argument("--json", action="store_true", help="print JSON (a list, or one object with NAME)")
    parser.set_defaults(func=cmd_scorers)


@dataclass(frozen=True)
class Option:
    name: str
    required: bool
    default: Any


@dataclass(frozen=True)
class ScorerInfo:
    name: str  # also its id: what the store and filters call it
    former_id: str | None  # the id earlier releases stored it under; still matched
    title: str
    description: str
    llm: bool
    needs: list[str]
    options: list[Option]
    example: dict[str, Any]
    version: str  # its code's declared version (its scores' version adds a hash of its configuration)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "id": self.name,
            "former_id": self.former_id,
            "title": self.title,
            "description": self.description,
            "llm": self.llm,
            "needs": self.needs,
            "options": [
                {
                    "name": o.name,
                    "required": o.required,
                    **({} if o.required else {"default": _plain(o.default)}),
                }
                for o in self.options
            ],
            "example_options": self.example,
            "version": self.version,
        }

    def rule(self) -> str:
        """A rule of the service config that uses this scorer."""
        rule: dict[str, Any] = {"scorer": self.name, **({"options": self.example} if self.example else {})}
        return yaml.safe_dump({"scoring": {"rules": [rule]}}, sort_keys=False, allow_unicode=True)


def scorer_infos() -> list[ScorerInfo]:
    """Every prebuilt scorer, in registration order, described from its declaration and its factory."""
    from tracescore.scoring.prebuilt.registry import build_scorer, registered

    infos = []
    for name, entry in registered().items():
        parameters = inspect.signature(entry.factory).parameters
        llm = "judge" in parameters
        built = build_scorer(name, entry.spec.example, default_judge=PLACEHOLDER_JUDGE if llm else None)
        options = [
            Option(key, parameter.default is inspect.Parameter.empty, parameter.default)
            for key, parameter in parameters.items()
            if key != "judge"
        ]
        infos.append(
            ScorerInfo(
                name=name,
                former_id=entry.spec.former_id,
                title=entry.spec.title,
                description=entry.spec.description,
                llm=llm,
                needs=sorted(built.needs),
                options=options,
                example=dict(entry.spec.example),
                version=entry.spec.version,
            )
        )
    return infos


def find(infos: list[ScorerInfo], name: str) -> ScorerInfo:
    from tracescore.schemas.suggest import did_you_mean

    for info in infos:
        if name in (info.name, info.former_id):
            return info
    known = [key for info in infos for key in (info.name, info.former_id) if key]
    raise ValueError(f"unknown scorer {name!r}{did_you_mean(name, known)} ('tracescore scorers' lists them)")


def cmd_scorers(args: argparse.Namespace) -> int:
    infos = scorer_infos()
    if args.name:
        info = find(infos, args.name)
        if args.json:
            _print_json(info.to_json())
        else:
            _print_one(info)
        return 0
    if args.json:
        _print_json([info.to_json() for info in infos])
        return 0
    table = Table(title=f"{len(infos)} scorers ('tracescore scorers NAME' shows one in full)")
    for column in ("name", "formerly", "version", "LLM", "needs", "options"):
        table.add_column(column, overflow="fold")
    for info in infos:
        table.add_row(
            info.name,
            info.former_id or "",
            info.version,
            "yes" if info.llm else "",
            ", ".join(info.needs) or "(tool calls)",
            ", ".join(_option_text(o) for o in info.options),
        )
    console = make_console()
    if not console.is_terminal:  # piped or redirected: wide enough not to fold the options
        console = make_console(width=160)
    console.print(table)
    return 0


def _print_one(info: ScorerInfo) -> None:
    console = make_console(highlight=False)
    formerly = f" (formerly {info.former_id})" if info.former_id else ""
    console.print(f"[bold]{info.name}[/bold]{formerly}: {info.title}")
    console.print(info.description)
    console.print(
        f"version: {info.version} (its scores carry {info.version}+<hash of the rule's options, "
        "prompts and judge model>)"
    )
    console.print(f"LLM judge: {'yes' if info.llm else 'no'}")
    console.print(f"needs: {', '.join(info.needs) or 'nothing but the tool calls'}")
    console.print("options: " + (", ".join(_option_text(o) for o in info.options) or "none"))
    console.print("\na rule using it:\n")
    console.print(info.rule(), markup=False)


def _option_text(option: Option) -> str:
    if option.required:
        return f"{option.name} (required)"
    if option.default is None:
        return option.name
    return f"{option.name}={json.dumps(_plain(option.default))}"


def _plain(value: Any) -> Any:
    """A default as JSON can show it (a tuple as a list, anything else as its text)."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return str(value)


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
