"""Thinking on demand: `AGENT_REASONING` (`off`, `low`, `medium`, `high`, or a token budget) read once,
in the two forms providers ask for it: an effort level (OpenAI `reasoning_effort`, OpenRouter, Claude's
adaptive thinking) or a token budget (Claude's manual thinking `thinking.budget_tokens`, OpenRouter).

Which of its two ways of thinking a Claude model takes (`claude_thinking`) is shared by the
Anthropic and Bedrock adapters: Claude 3.7 to 4.5 think within a token budget; Opus and Sonnet from
4.6, Haiku from 5, Fable and Mythos think adaptively, steered by an effort level, and the newest of
them refuse a budget with a 400. With the setting off, `claude_thinking_off` asks each for as little
thinking as it takes: from 5 on they think unless told otherwise, and some cannot be told.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agent.values import NeutralMessage

LEVELS = ("low", "medium", "high")
# A level as a budget, and a budget as a level (the upper bound of each level's budgets).
LEVEL_BUDGETS = {"low": 2048, "medium": 8192, "high": 24576}
MIN_BUDGET = 1024  # Claude's smallest thinking budget


@dataclass(frozen=True)
class Reasoning:
    """How hard the model should think: a level, or a token budget (one of the two is set)."""

    level: str | None = None
    budget: int | None = None

    @property
    def effort(self) -> str:
        if self.level:
            return self.level
        budget = self.budget or 0
        return next((level for level in LEVELS if budget <= LEVEL_BUDGETS[level]), "high")

    def budget_below(self, max_tokens: int) -> int | None:
        """A thinking budget that leaves room for the answer in `max_tokens` (Claude wants the budget
        below max_tokens, and at least 1,024); None when `max_tokens` is too small to think at all."""
        budget = self.budget or LEVEL_BUDGETS[self.level or "medium"]
        budget = min(budget, max_tokens - MIN_BUDGET)
        return budget if budget >= MIN_BUDGET else None

    def __str__(self) -> str:
        return self.level or f"{self.budget} tokens"


ClaudeThinking = Literal["budget", "adaptive"]

#: What a Claude model that thinks adaptively is asked with AGENT_REASONING on (beside its effort):
#: the newest return no thinking text unless the display is "summarized".
ADAPTIVE_THINKING = {"type": "adaptive", "display": "summarized"}

# A Claude model id, from the Anthropic API (`claude-sonnet-5`, `claude-opus-4-1-20250805`) or Bedrock
# (`us.anthropic.claude-opus-4-6-v1`, `anthropic.claude-3-7-sonnet-20250219-v1:0`): its family and
# version (a minor version has one or two digits; eight are a date).
_CLAUDE = re.compile(
    r"claude-(?:(?P<old>3-7|[4-9])-|(?P<family>opus|sonnet|haiku|fable|mythos)"
    r"(?:-(?P<major>\d+)(?:-(?P<minor>\d{1,2})(?=$|[-:@.]))?)?)"
)
# The first version of each family that thinks adaptively; families not named here always do.
_ADAPTIVE_FROM = {"opus": (4, 6), "sonnet": (4, 6), "haiku": (5, 0)}


def claude_thinking(model: str) -> ClaudeThinking | None:
    """How a Claude model is asked to think: "budget" (`thinking.type: enabled` with budget_tokens),
    "adaptive" (`thinking.type: adaptive` with an effort), or None (no thinking: Claude before 3.7,
    another provider's model)."""
    found = _CLAUDE.search(model)
    if found is None:
        return None
    if found["old"]:
        return "budget"
    family, major = found["family"], found["major"]
    if family not in _ADAPTIVE_FROM or major is None:
        return "adaptive"  # Fable, Mythos, or a family's unversioned alias: the newest kind
    version = (int(major), int(found["minor"] or 0))
    if version >= _ADAPTIVE_FROM[family]:
        return "adaptive"
    return "budget" if version >= (4, 0) else None


# Claude's models from 5 on think by default; asked nothing, they would think with AGENT_REASONING
# off. Haiku from 5 and Opus and Sonnet 5 to 5.4 take "disabled"; Sonnet 5.5 and later refuse it but
# take "between_tools", their lowest setting (no thinking up front, short progress notes between tool
# calls); Opus 5.5 and later, Fable and Mythos always think.
_REFUSES_DISABLED_FROM = {"opus": (5, 5), "sonnet": (5, 5)}


def claude_thinking_off(model: str) -> dict[str, str] | None:
    """The `thinking` request for a Claude model with `AGENT_REASONING` off: None for a model that
    thinks only when asked (Claude before 5), `{"type": "disabled"}` where the model takes it,
    `{"type": "between_tools"}` for Sonnet 5.5 and later, and for a model that always thinks
    (Opus 5.5 and later, Fable, Mythos, an unversioned alias) adaptive thinking whose text is shown:
    its default display returns none, and the newest models write what they say between tool calls
    as thinking, so the page would go silent there."""
    found = _CLAUDE.search(model)
    if found is None or found["old"]:
        return None
    family, major = found["family"], found["major"]
    if major is None or family not in ("opus", "sonnet", "haiku"):
        return dict(ADAPTIVE_THINKING)
    version = (int(major), int(found["minor"] or 0))
    if version < (5, 0):
        return None
    if family == "haiku" or version < _REFUSES_DISABLED_FROM[family]:
        return {"type": "disabled"}
    return {"type": "between_tools"} if family == "sonnet" else dict(ADAPTIVE_THINKING)


def claude_off_request(
    model: str, messages: Sequence[NeutralMessage]
) -> tuple[dict[str, str] | None, Sequence[NeutralMessage]]:
    """With `AGENT_REASONING` off: the model's `thinking` (`claude_thinking_off`) and the messages to
    send with it. A request that says `"disabled"` sends no reasoning back: a model that binds its
    thinking to the conversation may refuse the blocks a request without thinking cannot vouch for."""
    thinking = claude_thinking_off(model)
    if thinking is not None and thinking["type"] == "disabled":
        messages = [
            {**message, "parts": [part for part in message["parts"] if part["type"] != "reasoning"]}
            for message in messages
        ]
    return thinking, messages


# The models that bind each thinking block to the conversation before it (preserved thinking): a
# block replayed after its prefix changed is refused with a 400 unless the request lets them drop it.
_BINDS_FROM = {"fable": (5, 1), "mythos": (5, 1), "opus": (5, 5), "sonnet": (5, 5), "haiku": (5, 5)}


def binds_thinking(model: str) -> bool:
    """Whether a Claude model checks that what came before a thinking block is unchanged when the
    block is sent back (Fable and Mythos 5.1, Opus, Sonnet and Haiku 5.5, and later)."""
    found = _CLAUDE.search(model)
    if found is None or not found["major"] or found["family"] not in _BINDS_FROM:
        return False
    return (int(found["major"]), int(found["minor"] or 0)) >= _BINDS_FROM[found["family"]]


def parse(value: object) -> Reasoning | None:
    """`AGENT_REASONING`'s value → a Reasoning, or None for off; ValueError for anything else."""
    text = str(value or "off").strip().lower()
    if text in ("off", "0", "none", "false", "no", ""):
        return None
    if text in LEVELS:
        return Reasoning(level=text)
    if text.isdigit():
        return Reasoning(budget=int(text))
    raise ValueError(f"AGENT_REASONING must be off, low, medium, high or a number of tokens; got {value!r}.")


def configured() -> Reasoning | None:
    """The setting in force (read at call time, the Django way)."""
    from django.conf import settings

    return parse(getattr(settings, "AGENT_REASONING", "off"))
