"""Per-turn limits on tool calls: how many one model answer may make, and how many changes a turn may make.

A model that asks for three hundred `create_post` calls in one answer (or eight changes in each of
eight answers) is refused past the limits: each call beyond them gets an error result the model can
read, and is never run. The limits are counted in the order the model made its calls, so the first
ones run; 0 turns a limit off.
"""

from __future__ import annotations

from django.conf import settings

from agent.state import Run
from agent.tools import writes
from agent.values import ToolCall

TOO_MANY_CALLS = (
    "Not run: one answer may make at most {limit} tool calls and this was call {n}. "
    "Make the calls that matter most first; ask for more in your next answer."
)
TOO_MANY_CHANGES = (
    "Not run: one turn may make at most {limit} changes and they are used up. "
    "Tell the user what was done; they can ask again to go on."
)


def refusals(run: Run, tool_uses: list[ToolCall]) -> dict[str, str]:
    """The calls of one model answer that must not run, by tool_use id, with the error the model reads.

    Calls that do run and can change something are counted in `run.mutations` (a call waiting for a
    person counts too: it runs as soon as it is approved).
    """
    per_answer = getattr(settings, "AGENT_MAX_TOOL_CALLS_PER_ANSWER", 16)
    per_turn = getattr(settings, "AGENT_MAX_MUTATIONS_PER_TURN", 8)
    refused: dict[str, str] = {}
    for n, tool_use in enumerate(tool_uses, start=1):
        if per_answer and n > per_answer:
            refused[tool_use["id"]] = TOO_MANY_CALLS.format(limit=per_answer, n=n)
        elif tool_use.get("input_error") or not writes(tool_use["name"]):
            continue  # (a call whose arguments did not parse never runs: it changes nothing)
        elif per_turn and run.mutations >= per_turn:
            refused[tool_use["id"]] = TOO_MANY_CHANGES.format(limit=per_turn)
        else:
            run.mutations += 1
    return refused
