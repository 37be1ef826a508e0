"""The denial-of-wallet guard: each bucket, retry times, reservations under concurrency, the meter."""

from __future__ import annotations

import functools
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, connections
from django.utils import timezone

from agent import budget, transcript
from agent.exceptions import BudgetExceeded
from agent.loop import run_agent
from agent.models import Message, Spend, SpendDay
from agent.state import Run

DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}


def spend(user, ago, tokens=0, usd="0"):
    """A settled ledger row from the past, with the day's running total kept in step as reserve/settle do."""
    row = Spend.objects.create(
        user=user, created_at=timezone.now() - ago, tokens=tokens, cost_usd=Decimal(usd), settled=True
    )
    budget.add_to_day(row.created_at.date(), row.cost_usd)
    return row


@pytest.mark.django_db
@pytest.mark.parametrize(
    "bucket,setup,message",
    [
        (
            "minute",
            lambda u, o: spend(u, timedelta(seconds=30), tokens=20000),
            "You've sent a lot in the last minute.",
        ),
        (
            "hour",
            lambda u, o: spend(u, timedelta(minutes=10), tokens=200000),
            "You've reached this hour's usage limit for the assistant.",
        ),
        (
            "month",
            lambda u, o: spend(u, timedelta(days=10), usd="5"),
            "You've reached your monthly usage limit for the assistant.",
        ),
        (
            "global",
            lambda u, o: spend(o, timedelta(days=1), usd="100"),
            "The assistant has reached its overall monthly usage limit.",
        ),
    ],
)
def test_each_bucket_refuses_on_the_stream_and_keeps_the_message(
    api, chat, script, user, other_user, bucket, setup, message
):
    script([[{"kind": "text", "text": "never"}, DONE]])
    setup(user, other_user)
    events = api.turn(chat, "hello")
    assert len(events) == 1
    name, payload = events[0]
    assert name == "error"
    assert payload["code"] == "budget_exceeded"
    assert payload["message"] == message
    window = {"minute": 30, "hour": 50 * 60, "month": 20 * 86400, "global": 29 * 86400}[bucket]
    assert window - 5 <= payload["retry_after_seconds"] <= window + 5
    assert [m.role for m in Message.objects.filter(session=chat)] == ["user"]


@pytest.mark.django_db
def test_old_usage_outside_the_window_does_not_count(api, chat, script, user):
    script([[{"kind": "text", "text": "ok"}, DONE]])
    spend(user, timedelta(minutes=2), tokens=20000)  # outside the minute, inside the hour
    assert api.turn(chat, "hi")[-1][0] == "done"


@pytest.mark.django_db
def test_budget_checked_before_every_model_call_in_a_turn(api, chat, script, user, settings):
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE = 1000
    settings.AGENT_MAX_TOKENS = 100
    script(
        [
            [
                {"kind": "tool_use", "id": "t1", "name": "missing", "input": {}},
                {"kind": "done", "stop_reason": "tool_use", "usage": {"input_tokens": 995, "output_tokens": 5}},
            ],
            [{"kind": "text", "text": "never"}, DONE],
        ]
    )
    events = api.turn(chat, "go")
    assert [n for n, _ in events] == ["tool_use", "tool_result", "error"]
    assert events[-1][1]["code"] == "budget_exceeded"
    assert Message.objects.filter(session=chat, role="assistant").count() == 1


@pytest.mark.django_db
def test_settle_replaces_the_reservation_with_real_usage_and_cost(user):
    reservation = budget.reserve(user, "gpt-4o-mini", input_estimate=1000, max_tokens=4000)
    row = Spend.objects.get(pk=reservation.spend_id)
    assert (row.tokens, row.settled) == (5000, False)
    cost = budget.settle(
        reservation,
        {
            "input_tokens": 1_000_000,
            "output_tokens": 1_000_000,
            "cache_read_tokens": 1_000_000,
            "cache_write_tokens": 0,
        },
    )
    assert cost == Decimal("0.825")  # 0.15 + 0.6 + 0.075
    row.refresh_from_db()
    assert (row.tokens, row.cost_usd, row.settled) == (3_000_000, Decimal("0.825"), True)


def test_unknown_model_is_priced_as_the_dearest(settings):
    settings.AGENT_PRICES = {}
    prices, known = budget.price_for("some-new-model")
    assert not known
    assert prices == max(budget.PRICES.values(), key=lambda p: (p["output"], p["input"]))
    assert budget.price_for("us.anthropic.claude-3-5-haiku-20241022-v1:0") == (
        budget.PRICES["anthropic.claude-3-5-haiku-20241022-v1:0"],
        True,
    )


@pytest.mark.parametrize(
    ("model", "input_output"),
    [
        ("claude-sonnet-5", (2.0, 10.0)),
        ("claude-opus-5-5", (4.0, 20.0)),
        ("claude-opus-4-7", (5.0, 25.0)),
        ("claude-haiku-5-5", (0.1, 0.5)),
        ("global.anthropic.claude-sonnet-5-5", (2.0, 10.0)),  # a Bedrock inference profile
        ("us.anthropic.claude-opus-4-6-v1", (5.0, 25.0)),
    ],
)
def test_todays_claude_models_are_budgeted_at_their_own_prices(settings, model, input_output):
    """Not at the dearest model's (Opus 4.1, 15 / 75): a cap would trip at a fraction of the spend."""
    settings.AGENT_PRICES = {}
    prices, known = budget.price_for(model)
    assert known and (prices["input"], prices["output"]) == input_output


def test_a_long_prompt_costs_what_the_provider_charges_for_it(settings):
    """Haiku 5.5 charges five times as much for a prompt of more than 100,000 tokens (input, cache
    reads and writes together), the answer's tokens included; an AGENT_PRICES entry may say the same."""
    settings.AGENT_PRICES = {}
    short = {"input_tokens": 60_000, "cache_read_tokens": 40_000, "output_tokens": 1_000}
    assert budget.cost_of("claude-haiku-5-5", short) == Decimal("0.0069")  # 6000 + 400 + 500 micro-dollars
    long = {**short, "cache_write_tokens": 1}
    assert budget.cost_of("claude-haiku-5-5", long) == Decimal("0.034501")  # five times as much, and the write
    assert budget.cost_of("us.anthropic.claude-haiku-5-5", long) == Decimal("0.034501")
    settings.AGENT_PRICES = {
        "my-model": {"input": 1, "output": 2, "long_above": 10, "long": {"input": 3, "output": 4}},
    }
    assert budget.cost_of("my-model", {"input_tokens": 10, "output_tokens": 1_000_000}) == Decimal("2.00001")
    assert budget.cost_of("my-model", {"input_tokens": 11, "output_tokens": 1_000_000}) == Decimal("4.000033")


def test_agent_prices_setting_extends_the_table(settings):
    settings.AGENT_PRICES = {"my-model": {"input": 1, "output": 1, "cache_read": 0, "cache_write": 0}}
    assert budget.price_for("my-model") == ({"input": 1, "output": 1, "cache_read": 0, "cache_write": 0}, True)


@pytest.mark.django_db
def test_budget_check_is_at_most_two_queries(user, django_assert_max_num_queries):
    spend(user, timedelta(seconds=5), tokens=10)
    with django_assert_max_num_queries(2):
        budget.check(user)


@pytest.mark.django_db
def test_meter_fractions(user, settings):
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE = 1000
    settings.AGENT_BUDGET_USD_PER_MONTH = 10
    settings.AGENT_BUDGET_GLOBAL_USD_PER_MONTH = 0
    spend(user, timedelta(seconds=5), tokens=900, usd="2.5")
    assert budget.meter(user) == {"minute": 0.9, "hour": 0.0045, "month": 0.25, "global": 0.0}


@pytest.mark.django_db(transaction=True)
def test_concurrent_reservations_never_spend_past_the_limit(user, settings):
    """Ten racing calls, room for one: at most one passes (reserve before the call, as budget proxies do)."""
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE = 5000
    barrier = threading.Barrier(10)
    passed, refused = [], []

    def call():
        try:
            barrier.wait()
            passed.append(budget.reserve(user, "fake", input_estimate=500, max_tokens=3000))
        except BudgetExceeded:
            refused.append(1)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=call) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(passed) <= 1
    assert len(passed) + len(refused) == 10
    assert sum(Spend.objects.filter(user=user).values_list("tokens", flat=True)) <= 5000


@pytest.mark.django_db
def test_with_no_cap_on_a_call_is_recorded_once_it_ends(user, settings):
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE = settings.AGENT_BUDGET_TOKENS_PER_HOUR = 0
    settings.AGENT_BUDGET_USD_PER_MONTH = settings.AGENT_BUDGET_GLOBAL_USD_PER_MONTH = 0
    reservation = budget.reserve(user, "gpt-4o-mini", input_estimate=1000, max_tokens=4000)
    assert not Spend.objects.exists()  # nothing to guard, nothing reserved
    cost = budget.settle(reservation, {"input_tokens": 1_000_000, "output_tokens": 0})
    row = Spend.objects.get()
    assert (row.user, row.model_id, row.tokens, row.cost_usd, row.settled) == (
        user,
        "gpt-4o-mini",
        1_000_000,
        Decimal("0.15"),
        True,
    )
    assert cost == Decimal("0.15")
    assert budget.meter(user) == {"minute": 0.0, "hour": 0.0, "month": 0.0, "global": 0.0}


@pytest.mark.django_db(transaction=True)  # autocommit as in production
def test_with_no_cap_on_a_call_is_recorded_once_with_its_answer_or_without(chat, script, settings, monkeypatch):
    """The ledger row goes with the message that answers the call; if that message cannot be
    written, the row is written alone: recorded exactly once either way."""
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE = settings.AGENT_BUDGET_TOKENS_PER_HOUR = 0
    settings.AGENT_BUDGET_USD_PER_MONTH = settings.AGENT_BUDGET_GLOBAL_USD_PER_MONTH = 0
    later = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 7, "output_tokens": 1}}
    script([[{"kind": "text", "text": "hi"}, DONE], [{"kind": "text", "text": "again"}, later]])
    assert [name for name, _ in run_agent(chat)][-1] == "done"
    answer = Message.objects.get(session=chat)
    row = Spend.objects.get()
    assert (row.tokens, row.cost_usd, row.settled) == (15, budget.cost_of("fake", DONE["usage"]), True)
    assert answer.cost_usd == row.cost_usd

    ledger_row = budget.ledger_row

    def then_someone_takes_the_place(reservation, usage):  # the answer's place is taken meanwhile
        Message.objects.create(session=chat, role="user", position=1)
        return ledger_row(reservation, usage)

    monkeypatch.setattr(budget, "ledger_row", then_someone_takes_the_place)
    monkeypatch.setattr(transcript, "next_position", lambda session: 1)  # the run read the transcript before
    with pytest.raises(IntegrityError):
        list(run_agent(chat))
    assert list(Message.objects.filter(session=chat).values_list("position", "role")) == [
        (0, "assistant"),
        (1, "user"),
    ]
    assert sorted(Spend.objects.values_list("tokens", flat=True)) == [8, 15]  # the second call, once


def no_caps(settings) -> None:
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE = settings.AGENT_BUDGET_TOKENS_PER_HOUR = 0
    settings.AGENT_BUDGET_USD_PER_MONTH = settings.AGENT_BUDGET_GLOBAL_USD_PER_MONTH = 0


@pytest.mark.django_db
@pytest.mark.parametrize("capped", [True, False])
def test_a_call_that_fails_after_output_is_counted_at_an_estimate_never_free(chat, script, settings, capped):
    """The provider bills the prompt and what it wrote, but a failed stream sends no count."""
    if not capped:
        no_caps(settings)
    script([[{"kind": "text", "text": "partial " * 50}, {"kind": "error", "retryable": False}]])
    transcript.add_message(Run(chat), "user", [{"type": "text", "text": "x" * 4000}])  # ~1,000 tokens
    assert [name for name, _ in run_agent(chat)][-1] == "error"
    row = Spend.objects.get()
    answer = Message.objects.get(session=chat, role="assistant")
    assert row.settled and 1000 < answer.input_tokens < 1200 and answer.output_tokens == 101  # 400 characters
    assert row.tokens == answer.input_tokens + answer.output_tokens
    assert row.cost_usd == answer.cost_usd == budget.cost_of("fake", answer.usage) > 0


@pytest.mark.django_db
def test_a_call_that_fails_before_any_output_costs_nothing(chat, script):
    script([[{"kind": "error", "retryable": False}]])
    transcript.add_message(Run(chat), "user", [{"type": "text", "text": "x" * 4000}])
    assert [name for name, _ in run_agent(chat)][-1] == "error"
    assert list(Spend.objects.values_list("tokens", "cost_usd", "settled")) == [(0, Decimal(0), True)]


@pytest.mark.django_db
def test_a_call_stopped_while_the_model_was_silent_is_counted_at_its_prompt(chat, script):
    """Stop cuts a model that had said nothing yet (thinking): it had read the prompt, which is billed."""
    from agent.backends.base import Interrupt

    script([[{"kind": "text", "text": "late", "delay_ms": 30_000}, {"kind": "done", "stop_reason": "end_turn"}]])
    transcript.add_message(Run(chat), "user", [{"type": "text", "text": "x" * 4000}])  # ~1,000 tokens
    run = Run(chat)
    run.interrupt = Interrupt()
    threading.Timer(0.2, run.interrupt.fire).start()  # while the model says nothing
    events = list(run_agent(chat, run=run, should_stop=lambda: run.interrupt.fired))
    assert events[-1][1]["stop_reason"] == "stopped"
    row = Spend.objects.get()
    answer = Message.objects.get(session=chat, role="assistant")
    assert answer.stop_reason == "stopped" and 1000 < answer.input_tokens < 1200
    assert row.tokens == answer.input_tokens + answer.output_tokens and row.cost_usd == answer.cost_usd > 0


@pytest.mark.django_db
def test_stopping_every_answer_still_fills_the_buckets(chat, script, settings):
    """Stop ends a call before the provider's count: at zero, Stop pressed at once would never hit a cap."""
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE = 4000  # the third call's prompt (~3,000) finds it full
    settings.AGENT_MAX_TOKENS = 100
    usage = {"input_tokens": 1000, "output_tokens": 2}
    script([[{"kind": "text", "text": "a"}, {"kind": "done", "stop_reason": "end_turn", "usage": usage}]] * 3)
    ends = []
    for _ in range(3):
        transcript.add_message(Run(chat), "user", [{"type": "text", "text": "x" * 4000}])
        looks = iter([False])  # Stop pressed as the answer began: not yet when the loop looks before the call
        ends.append([event for event in run_agent(chat, should_stop=functools.partial(next, looks, True))][-1])
    assert [name for name, _ in ends] == ["done", "done", "error"]
    assert ends[0][1]["stop_reason"] == "stopped" and ends[2][1]["code"] == "budget_exceeded"


def day_totals() -> dict:
    return {d.day: d.cost_usd for d in SpendDay.objects.all()}


@pytest.mark.django_db
def test_the_day_total_follows_every_reservation_and_settlement(user, other_user, settings):
    settings.AGENT_BUDGET_GLOBAL_USD_PER_MONTH = 100
    today = timezone.now().date()
    first = budget.reserve(user, "gpt-4o-mini", input_estimate=1000, max_tokens=4000)
    assert day_totals() == {today: Decimal("0.002550")}  # the worst case: 1000 in, 4000 out
    second = budget.reserve(other_user, "gpt-4o-mini", input_estimate=0, max_tokens=1000)
    budget.settle(first, {"input_tokens": 1000, "output_tokens": 10})
    budget.settle(second, {"input_tokens": 0, "output_tokens": 0})
    assert day_totals() == {today: Decimal("0.000156")}  # what was really spent, everyone together
    assert day_totals()[today] == sum(Spend.objects.values_list("cost_usd", flat=True))


@pytest.mark.django_db
def test_a_refused_reservation_leaves_the_day_total_as_it_was(user, settings):
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE = 1000
    spend(user, timedelta(seconds=5), tokens=1000, usd="0.5")
    with pytest.raises(BudgetExceeded):
        budget.reserve(user, "gpt-4o-mini", input_estimate=10, max_tokens=100)
    assert day_totals() == {timezone.now().date(): Decimal("0.5")}


@pytest.mark.django_db
def test_the_global_cap_counts_whole_days_of_the_last_thirty(user, other_user, settings):
    settings.AGENT_BUDGET_GLOBAL_USD_PER_MONTH = 10
    settings.AGENT_BUDGET_USD_PER_MONTH = 0
    spend(other_user, timedelta(days=40), usd="50")  # long gone
    spend(other_user, timedelta(days=3), usd="6")
    assert budget.meter(user)["global"] == 0.6
    spend(other_user, timedelta(days=1), usd="4")
    with pytest.raises(BudgetExceeded) as refused:
        budget.check(user)
    assert "overall monthly usage limit" in refused.value.message


@pytest.mark.django_db
def test_the_migration_backfills_the_day_totals_from_the_ledger(user):
    from importlib import import_module

    from django.apps import apps

    Spend.objects.create(
        user=user, created_at=timezone.now() - timedelta(days=2), cost_usd=Decimal("1.5"), settled=True
    )
    Spend.objects.create(
        user=user, created_at=timezone.now() - timedelta(days=2), cost_usd=Decimal("0.5"), settled=True
    )
    Spend.objects.create(user=user, created_at=timezone.now() - timedelta(days=60), cost_usd=Decimal("9"), settled=True)
    import_module("agent.migrations.0005_spend_day").backfill(apps, None)
    assert day_totals() == {(timezone.now() - timedelta(days=2)).date(): Decimal("2")}


def test_the_estimate_counts_the_tools_as_their_json_whatever_was_remembered():
    """Each catalogue spec's length is remembered by its schema object; a new schema under the same
    name, or a spec of another shape, is measured afresh: the estimate is always the JSON's length."""
    import json

    from agent.tools import catalog_for

    messages = [{"role": "user", "parts": [{"type": "text", "text": "Hello"}]}]

    def expected(tools):
        text = json.dumps({"type": "text", "text": "Hello"})
        return (len("sys") + len(json.dumps(tools, default=str)) + len(text)) // 4 + 1

    catalogue = catalog_for("chat")
    assert len(catalogue) > 3
    for _ in range(2):  # measured, then remembered
        assert budget.estimate_tokens("sys", messages, catalog_for("chat")) == expected(catalogue)
    renamed = {**catalogue[0], "input_schema": {"type": "object", "properties": {"x" * 400: {"type": "string"}}}}
    assert budget.estimate_tokens("sys", messages, [renamed]) == expected([renamed])
    other = {**catalogue[0], "strict": True}
    assert budget.estimate_tokens("sys", messages, [other, catalogue[1]]) == expected([other, catalogue[1]])
    assert budget.estimate_tokens("sys", messages, []) == expected([])


def test_cache_tokens_are_priced_even_when_a_price_leaves_them_out(settings):
    from decimal import Decimal

    from agent import budget

    settings.AGENT_PRICES = {"plain": {"input": 2.0, "output": 8.0}}
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 1_000_000, "cache_write_tokens": 1_000_000}
    assert budget.cost_of("plain", usage) == Decimal("4.5")  # read at input price, write at 1.25 × input
    claude = "us.anthropic.claude-sonnet-4-20250514-v1:0"
    assert budget.cost_of(claude, usage) == Decimal("4.05")  # its own cache prices: 0.30 + 3.75


CAP_SETTING = {
    "minute": "AGENT_BUDGET_TOKENS_PER_MINUTE",
    "hour": "AGENT_BUDGET_TOKENS_PER_HOUR",
    "month": "AGENT_BUDGET_USD_PER_MONTH",
    "global": "AGENT_BUDGET_GLOBAL_USD_PER_MONTH",
}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "bucket,limit,input_estimate,max_tokens",
    [
        ("minute", 1000, 400, 600),  # 1,000 tokens
        ("hour", 1000, 400, 600),
        ("month", 1.0, 1_000_000, 0),  # $1.00 at the fake model's $1 per million input tokens
        ("global", 1.0, 1_000_000, 0),
    ],
)
def test_a_call_may_fill_a_bucket_to_its_limit_and_the_next_one_finds_it_full(
    user, settings, bucket, limit, input_estimate, max_tokens
):
    """Each cap on its own (the others off): a worst case of exactly the limit is admitted, one more is not."""
    no_caps(settings)
    setattr(settings, CAP_SETTING[bucket], limit)
    budget.reserve(user, "fake", input_estimate=input_estimate, max_tokens=max_tokens)
    with pytest.raises(BudgetExceeded) as refused:
        budget.reserve(user, "fake", input_estimate=1, max_tokens=1)
    assert refused.value.bucket == bucket


@pytest.mark.django_db
def test_an_empty_bucket_admits_one_call_however_large_its_worst_case(user, settings):
    no_caps(settings)
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE = 1000
    reservation = budget.reserve(user, "fake", input_estimate=500, max_tokens=4096)  # worst case 4,596 tokens
    assert Spend.objects.get(pk=reservation.spend_id).tokens == 1000  # a whole bucket reserved, never more
    with pytest.raises(BudgetExceeded):
        budget.reserve(user, "fake", input_estimate=1, max_tokens=1)


@pytest.mark.django_db
def test_the_global_cap_counts_the_first_day_of_the_thirty(user, other_user, settings):
    """The window is whole days and never shorter than 30 × 24 h: spending 30 days ago still counts."""
    no_caps(settings)
    settings.AGENT_BUDGET_GLOBAL_USD_PER_MONTH = 10
    spend(other_user, timedelta(days=30), usd="10")
    with pytest.raises(BudgetExceeded) as refused:
        budget.reserve(user, "fake", input_estimate=1, max_tokens=1)
    assert refused.value.bucket == "global"
