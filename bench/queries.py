"""Scenario 4: database queries of a turn, of a tool round trip (5 vs 500 messages) and of a budget check.

Run with the bench environment (budgets at their defaults so every bucket is checked):
`python -m bench.queries` prints one JSON object. Uses Django's CaptureQueriesContext.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from decimal import Decimal

import django

TOOL_CALL = [
    {"kind": "tool_use", "id": "tu_1", "name": "list_posts", "input": {}},
    {"kind": "done", "stop_reason": "tool_use"},
]
TEXT = [{"kind": "text", "text": "Here you are."}, {"kind": "done", "stop_reason": "end_turn"}]


def main() -> None:
    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from agent import budget, turns
    from agent.models import Message
    from agent.transcript import add_message
    from bench.project import owner_scopes, start_session, use_fake_script
    from blog.models import Blog, Consent, Post, Seat

    settings.AGENT_TURN_EXECUTOR = "inline"
    User = get_user_model()
    user, _ = User.objects.get_or_create(username="bench_queries")
    blog, _ = Blog.objects.get_or_create(slug="bench-queries", defaults={"title": "Q", "owner": user})
    Seat.objects.get_or_create(user=user, blog=blog, defaults={"role": Seat.OWNER, "may_use_assistant": True})
    Consent.objects.get_or_create(user=user, blog=blog, client="", defaults={"scopes": owner_scopes()})
    if not Post.objects.filter(blog=blog).exists():
        for i in range(3):
            Post.objects.create(blog=blog, author=user, title=f"Post {i}", slug=f"post-{i}", body="Body.")
    tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)

    try:  # a tree where a run's state is passed explicitly (agent.state.Run)
        from agent.state import Run
    except ImportError:  # an older tree: the transcript's writes take the session
        Run = None  # noqa: N806

    def session_with(n_messages: int):
        session = start_session(user, blog)
        writer = Run(session) if Run is not None else session
        for i in range(n_messages):
            role = Message.USER if i % 2 == 0 else Message.ASSISTANT
            add_message(writer, role, [{"type": "text", "text": f"message {i} " * 20}])
        return session

    def turn_queries(n_messages: int, calls: list[list[dict]]) -> list[str]:
        session = session_with(n_messages)
        k = Message.objects.filter(session=session, role=Message.ASSISTANT).count()
        with open(tmp.name, "w") as fh:
            json.dump({"calls": [TEXT] * k + calls}, fh)
        use_fake_script(tmp.name)
        # Steady state: the grant was used within the last minute, so a tool run does not re-stamp it,
        # and today's running total for the global cap exists (only the day's first call creates it).
        Consent.objects.filter(user=user, blog=blog).update(last_used_at=timezone.now())
        budget.add_to_day(timezone.now().date(), Decimal("0.01"))
        with CaptureQueriesContext(connection) as ctx:
            started, _ = turns.begin(session, "List my posts.")  # a Run (a Turn in an older tree)
            events = [name for name, _ in turns.drive(started)]  # as turns.start runs it
        assert events[-1] == "done", events
        return [q["sql"] for q in ctx.captured_queries]

    out: dict = {}
    breakdown = {}
    for n in (5, 500):
        text = turn_queries(n, [TEXT])
        tool = turn_queries(n, [TOOL_CALL, TEXT])
        out[f"turn_text_{n}_msgs"] = len(text)
        out[f"turn_one_tool_{n}_msgs"] = len(tool)
        out[f"tool_round_trip_{n}_msgs"] = len(tool) - len(text)
        breakdown[n] = _by_table(tool)
    out["tool_turn_by_table_500_msgs"] = breakdown[500]

    with CaptureQueriesContext(connection) as ctx:
        budget.check(user)
    out["budget_check"] = len(ctx.captured_queries)
    with CaptureQueriesContext(connection) as ctx:
        r = budget.reserve(user, "fake", input_estimate=1000, max_tokens=4096)
    out["budget_reserve"] = len(ctx.captured_queries)
    with CaptureQueriesContext(connection) as ctx:
        budget.settle(r, {"input_tokens": 10, "output_tokens": 10})
    out["budget_settle"] = len(ctx.captured_queries)
    out["budget_limits"] = [
        settings.AGENT_BUDGET_TOKENS_PER_MINUTE,
        settings.AGENT_BUDGET_TOKENS_PER_HOUR,
        settings.AGENT_BUDGET_USD_PER_MONTH,
        settings.AGENT_BUDGET_GLOBAL_USD_PER_MONTH,
    ]
    print(json.dumps(out))


def _by_table(sqls: list[str]) -> dict[str, int]:
    c: Counter[str] = Counter()
    for sql in sqls:
        verb = sql.split(None, 1)[0].upper()
        m = re.search(r'(?:FROM|INTO|UPDATE)\s+"(\w+)"', sql)
        c[f"{verb} {m.group(1) if m else '?'}"] += 1
    return dict(c.most_common())


if __name__ == "__main__":
    main()
