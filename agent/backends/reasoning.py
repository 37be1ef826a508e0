"""Thinking on demand: `AGENT_REASONING` (`off`, `low`, `medium`, `high`, or a token budget) read once,
in the two forms providers ask for it: an effort level (OpenAI `reasoning_effort`, OpenRouter) or a
token budget (Claude `thinking.budget_tokens`, OpenRouter)."""

from __future__ import annotations

from dataclasses import dataclass

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
