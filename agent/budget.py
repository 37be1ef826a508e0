"""Denial-of-wallet guard: four buckets checked before every model call, reserved then settled.

A call reserves its worst case (estimated input plus `max_tokens`) in the ledger before it
starts and settles to the real usage after, so concurrent turns cannot all pass on the
same headroom. Checks are one indexed aggregate per user plus one global one, over a running
total per day (`SpendDay`), so the global check does not grow with traffic.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Min, Q, Sum
from django.utils import timezone

from agent import attachments
from agent.backends.base import USAGE_KEYS, zero_usage
from agent.conf import settings
from agent.exceptions import BudgetExceeded
from agent.models import Spend, SpendDay
from agent.values import Usage, UsageKey

MINUTE, HOUR, MONTH = timedelta(minutes=1), timedelta(hours=1), timedelta(days=30)

HAIKU_5_5_LONG = {
    "long_above": 100_000,
    "long": {"input": 0.5, "output": 2.5, "cache_read": 0.05, "cache_write": 0.625},
}

# US dollars per million tokens, as the providers list them (checked 2026-12-02). A model not here is
# charged at the dearest price in the table until AGENT_PRICES gives its own. A model whose long
# prompts cost more has those rates under "long", for a prompt (its input, cache reads and cache
# writes together) of more than "long_above" tokens.
PRICES: dict[str, dict[str, Any]] = {
    # OpenAI
    "gpt-4o": {"input": 2.5, "output": 10.0, "cache_read": 1.25, "cache_write": 0.0},
    "gpt-4o-mini": {"input": 0.15, "output": 0.6, "cache_read": 0.075, "cache_write": 0.0},
    "gpt-4.1": {"input": 2.0, "output": 8.0, "cache_read": 0.5, "cache_write": 0.0},
    "gpt-4.1-mini": {"input": 0.4, "output": 1.6, "cache_read": 0.1, "cache_write": 0.0},
    "gpt-4.1-nano": {"input": 0.1, "output": 0.4, "cache_read": 0.025, "cache_write": 0.0},
    "o3": {"input": 2.0, "output": 8.0, "cache_read": 0.5, "cache_write": 0.0},
    "o4-mini": {"input": 1.1, "output": 4.4, "cache_read": 0.275, "cache_write": 0.0},
    "gpt-5": {"input": 1.25, "output": 10.0, "cache_read": 0.125, "cache_write": 0.0},
    "gpt-5-mini": {"input": 0.25, "output": 2.0, "cache_read": 0.025, "cache_write": 0.0},
    "gpt-5.6-luna": {"input": 0.2, "output": 1.2, "cache_read": 0.02, "cache_write": 0.0},
    "gpt-6-astra": {"input": 10.0, "output": 50.0},  # (cached input not listed: charged as input)
    "gpt-6-sol": {"input": 2.0, "output": 10.0, "cache_read": 0.2, "cache_write": 0.0},  # (as reported: no model page)
    "gpt-6-luna": {"input": 0.1, "output": 0.5, "cache_read": 0.01, "cache_write": 0.0},
    "gpt-6.1-terra": {"input": 1.0, "output": 5.0, "cache_read": 0.05, "cache_write": 0.0},
    "gpt-6.2-sol": {"input": 2.0, "output": 10.0, "cache_read": 0.1, "cache_write": 0.0},
    # Bedrock
    "anthropic.claude-3-5-haiku-20241022-v1:0": {"input": 0.8, "output": 4.0, "cache_read": 0.08, "cache_write": 1.0},
    "anthropic.claude-3-5-sonnet-20241022-v2:0": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    "anthropic.claude-3-7-sonnet-20250219-v1:0": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    "anthropic.claude-sonnet-4-20250514-v1:0": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    "anthropic.claude-opus-4-20250514-v1:0": {"input": 15.0, "output": 75.0, "cache_read": 1.5, "cache_write": 18.75},
    "anthropic.claude-sonnet-4-5-20250929-v1:0": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    "anthropic.claude-haiku-4-5-20251001-v1:0": {"input": 1.0, "output": 5.0, "cache_read": 0.1, "cache_write": 1.25},
    "anthropic.claude-opus-4-1-20250805-v1:0": {"input": 15.0, "output": 75.0, "cache_read": 1.5, "cache_write": 18.75},
    # (Claude on Bedrock at Anthropic's list prices, those of the global profiles; a regional one costs 10% more)
    "anthropic.claude-opus-4-5-20251101-v1:0": {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25},
    "anthropic.claude-opus-4-6-v1": {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25},
    "anthropic.claude-sonnet-4-6": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    "anthropic.claude-opus-4-7": {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25},
    "anthropic.claude-opus-4-8": {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25},
    "anthropic.claude-opus-5": {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25},
    "anthropic.claude-sonnet-5": {"input": 2.0, "output": 10.0, "cache_read": 0.2, "cache_write": 2.5},
    "anthropic.claude-opus-5-5": {"input": 4.0, "output": 20.0, "cache_read": 0.2, "cache_write": 5.0},
    "anthropic.claude-sonnet-5-5": {"input": 2.0, "output": 10.0, "cache_read": 0.2, "cache_write": 2.5},
    "anthropic.claude-haiku-5-5": {
        "input": 0.1,
        "output": 0.5,
        "cache_read": 0.01,
        "cache_write": 0.125,
        **HAIKU_5_5_LONG,
    },
    "anthropic.claude-fable-5": {"input": 10.0, "output": 50.0, "cache_read": 1.0, "cache_write": 12.5},
    "anthropic.claude-fable-5-1": {"input": 10.0, "output": 50.0, "cache_read": 0.25, "cache_write": 12.5},
    "amazon.nova-micro-v1:0": {"input": 0.035, "output": 0.14, "cache_read": 0.00875, "cache_write": 0.0},
    "amazon.nova-lite-v1:0": {"input": 0.06, "output": 0.24, "cache_read": 0.015, "cache_write": 0.0},
    "amazon.nova-pro-v1:0": {"input": 0.8, "output": 3.2, "cache_read": 0.2, "cache_write": 0.0},
    "meta.llama3-3-70b-instruct-v1:0": {"input": 0.72, "output": 0.72, "cache_read": 0.72, "cache_write": 0.0},
    # Anthropic Messages API (cache writes: the 5-minute kind, 1.25 × input)
    "claude-sonnet-4-5": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    "claude-sonnet-4-5-20250929": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    "claude-sonnet-4-20250514": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    "claude-haiku-4-5": {"input": 1.0, "output": 5.0, "cache_read": 0.1, "cache_write": 1.25},
    "claude-haiku-4-5-20251001": {"input": 1.0, "output": 5.0, "cache_read": 0.1, "cache_write": 1.25},
    "claude-opus-4-1-20250805": {"input": 15.0, "output": 75.0, "cache_read": 1.5, "cache_write": 18.75},
    "claude-opus-4-5": {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25},
    "claude-opus-4-5-20251101": {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25},
    "claude-opus-4-6": {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25},
    "claude-sonnet-4-6": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75},
    "claude-opus-4-7": {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25},
    "claude-opus-4-8": {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25},
    "claude-opus-5": {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25},
    "claude-sonnet-5": {"input": 2.0, "output": 10.0, "cache_read": 0.2, "cache_write": 2.5},
    "claude-opus-5-5": {"input": 4.0, "output": 20.0, "cache_read": 0.2, "cache_write": 5.0},
    # (Sonnet 5.5's cache reads as the model page lists them; reported cut to 0.1 since 2026-10-07)
    "claude-sonnet-5-5": {"input": 2.0, "output": 10.0, "cache_read": 0.2, "cache_write": 2.5},
    # (Haiku 5.5: a prompt of more than 100,000 tokens costs five times as much; its cache reads as a
    # tenth of its input, the rule every Claude price follows)
    "claude-haiku-5-5": {"input": 0.1, "output": 0.5, "cache_read": 0.01, "cache_write": 0.125, **HAIKU_5_5_LONG},
    "claude-fable-5": {"input": 10.0, "output": 50.0, "cache_read": 1.0, "cache_write": 12.5},
    "claude-fable-5-1": {"input": 10.0, "output": 50.0, "cache_read": 0.25, "cache_write": 12.5},
    # Our own backends: real prices so the dollar caps can be exercised offline.
    "fake": {"input": 1.0, "output": 2.0, "cache_read": 0.1, "cache_write": 1.25},
    "demo": {"input": 0.1, "output": 0.2, "cache_read": 0.01, "cache_write": 0.125},
}

# Bedrock cross-region inference profiles prefix the model id ("us.", "eu.", "apac.", "global.").
_REGION_PREFIXES = ("us.", "eu.", "apac.", "global.", "us-gov.")


def prices_valid(prices: object) -> bool:
    """Whether `AGENT_PRICES` is model id to prices, each a number of dollars per million tokens, none
    negative (`long`: the same, for long prompts); another value would fail every turn of its model."""

    def numbers(price: object, *, nested: bool = False) -> bool:
        return isinstance(price, dict) and all(
            (key == "long" and not nested and numbers(value, nested=True))
            or (isinstance(value, int | float) and not isinstance(value, bool) and value >= 0)
            for key, value in price.items()
        )

    return isinstance(prices, dict) and all(numbers(price) for price in prices.values())


def price_table() -> dict[str, dict[str, Any]]:
    return {**PRICES, **(getattr(settings, "AGENT_PRICES", None) or {})}


def price_for(model: str) -> tuple[dict[str, Any], bool]:
    """The model's prices and whether they are known; unknown models cost as much as the dearest one."""
    extra = getattr(settings, "AGENT_PRICES", None) or {}  # (as `price_table()`, without making it each call)
    for key in (model, *[model[len(p) :] for p in _REGION_PREFIXES if model.startswith(p)]):
        if key in extra:
            return extra[key], True
        if key in PRICES:
            return PRICES[key], True
    dearest = max(price_table().values(), key=lambda p: (p.get("output", 0), p.get("input", 0)))
    return dearest, False


# A price without its cache figures (an `AGENT_PRICES` entry that names only input and output):
# cache reads cost what input costs and cache writes 1.25 times that (the dearest providers' terms),
# never nothing, so cached tokens cannot slip past the dollar caps.
CACHE_WRITE_FACTOR = 1.25


def cost_of(model: str, usage: Usage) -> Decimal:
    p, _ = price_for(model)
    long = p.get("long")
    if isinstance(long, dict) and prompt_tokens(usage) > p.get("long_above", math.inf):
        p = long
    input_price = p.get("input", 0)
    dollars = (
        usage.get("input_tokens", 0) * input_price
        + usage.get("output_tokens", 0) * p.get("output", 0)
        + usage.get("cache_read_tokens", 0) * p.get("cache_read", input_price)
        + usage.get("cache_write_tokens", 0) * p.get("cache_write", input_price * CACHE_WRITE_FACTOR)
    ) / 1_000_000
    return Decimal(str(round(dollars, 6)))


def prompt_tokens(usage: Usage) -> int:
    """A call's prompt: its input, read from the cache or written to it."""
    return sum(int(usage.get(k, 0)) for k in _PROMPT_KEYS)


def total_tokens(usage: Usage) -> int:
    return sum(int(usage.get(k, 0)) for k in USAGE_KEYS)


_PROMPT_KEYS: tuple[UsageKey, ...] = ("input_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass(frozen=True)
class Limits:
    per_minute: int
    per_hour: int
    usd_month: float
    usd_global: float

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(
            settings.AGENT_BUDGET_TOKENS_PER_MINUTE,
            settings.AGENT_BUDGET_TOKENS_PER_HOUR,
            settings.AGENT_BUDGET_USD_PER_MONTH,
            settings.AGENT_BUDGET_GLOBAL_USD_PER_MONTH,
        )

    @property
    def any(self) -> bool:
        return bool(self.per_minute or self.per_hour or self.usd_month or self.usd_global)


def _usage(user: Any, now: Any) -> dict[str, Any]:
    """One indexed aggregate over the user's last 30 days, one over everyone's (only when capped)."""
    mine = Spend.objects.filter(user=user, created_at__gte=now - MONTH).aggregate(
        minute=Sum("tokens", filter=Q(created_at__gte=now - MINUTE)),
        hour=Sum("tokens", filter=Q(created_at__gte=now - HOUR)),
        month=Sum("cost_usd"),
    )
    out = {k: v or 0 for k, v in mine.items()}
    out["global"] = 0
    if Limits.from_settings().usd_global:
        # By whole days (UTC): up to one day more than 30 × 24 h, never less.
        since = (now - MONTH).date()
        out["global"] = SpendDay.objects.filter(day__gte=since).aggregate(total=Sum("cost_usd"))["total"] or 0
    return out


def add_to_day(day: Any, amount: Decimal) -> None:
    """Add `amount` (may be negative) to everyone's running total for `day`, atomically."""
    if not amount:
        return
    if SpendDay.objects.filter(day=day).update(cost_usd=F("cost_usd") + amount):
        return
    try:
        with transaction.atomic():
            SpendDay.objects.create(day=day, cost_usd=amount)
    except IntegrityError:  # another call created the day's row first
        SpendDay.objects.filter(day=day).update(cost_usd=F("cost_usd") + amount)


# What is full, not when to try again: every refusal carries `retry_after_seconds`, which the chat
# page counts down after the message ("Try again in 40 s") and the terminal's `chat` says.
MESSAGES = {
    "minute": "You've sent a lot in the last minute.",
    "hour": "You've reached this hour's usage limit for the assistant.",
    "month": "You've reached your monthly usage limit for the assistant.",
    "global": "The assistant has reached its overall monthly usage limit.",
}


def _over(used: dict[str, Any], limits: Limits, extra_tokens: int = 0, extra_usd: float = 0.0) -> str | None:
    if limits.per_minute and used["minute"] + extra_tokens > limits.per_minute:
        return "minute"
    if limits.per_hour and used["hour"] + extra_tokens > limits.per_hour:
        return "hour"
    if limits.usd_month and float(used["month"]) + extra_usd > limits.usd_month:
        return "month"
    if limits.usd_global and float(used["global"]) + extra_usd > limits.usd_global:
        return "global"
    return None


def _retry_after(user: Any, bucket: str, now: Any) -> int:
    window = {"minute": MINUTE, "hour": HOUR, "month": MONTH, "global": MONTH}[bucket]
    qs = Spend.objects.filter(created_at__gte=now - window)
    if bucket != "global":
        qs = qs.filter(user=user)
    oldest = qs.aggregate(m=Min("created_at"))["m"]
    if oldest is None:
        return 1
    return max(1, math.ceil((oldest + window - now).total_seconds()))


def _exceeded(user: Any, bucket: str, now: Any) -> BudgetExceeded:
    return BudgetExceeded(bucket, MESSAGES[bucket], _retry_after(user, bucket, now))


def check(user: Any) -> None:
    """Raise BudgetExceeded when any bucket is already full."""
    now = timezone.now()
    used = _usage(user, now)
    limits = Limits.from_settings()
    bucket = _over(used, limits, extra_tokens=1, extra_usd=1e-9)  # a full bucket counts as over
    if bucket:
        raise _exceeded(user, bucket, now)


@dataclass
class Reservation:
    spend_id: int | None  # None: no cap is on, so nothing was reserved; `settle` records the call
    model: str
    user: Any = None
    day: Any = None  # the day whose running total holds the reserved cost
    reserved_usd: Decimal = Decimal(0)


def reserve(user: Any, model: str, *, input_estimate: int, max_tokens: int) -> Reservation:
    """Claim the worst case of the next call in the ledger, or raise BudgetExceeded.

    Insert first, then check the sums including the new row: two racing calls each see
    the other's reservation, so at most the headroom is spent (never more).
    """
    now = timezone.now()
    limits = Limits.from_settings()
    if not limits.any:
        return Reservation(None, model, user)  # nothing to guard: the ledger gets the call when it ends
    worst: Usage = {**zero_usage(), "input_tokens": input_estimate, "output_tokens": max_tokens}
    # Never reserve more than a whole bucket: an empty bucket always admits one call.
    tokens = min(x for x in (input_estimate + max_tokens, limits.per_minute, limits.per_hour) if x)
    reserved = cost_of(model, worst)
    spend = Spend.objects.create(user=user, created_at=now, model_id=model, tokens=tokens, cost_usd=reserved)
    add_to_day(now.date(), reserved)
    bucket = _over(_usage(user, now), limits)
    if bucket:
        Spend.objects.filter(pk=spend.pk).delete()
        add_to_day(now.date(), -reserved)
        raise _exceeded(user, bucket, now)
    return Reservation(spend.pk, model, user, now.date(), reserved)


def ledger_row(reservation: Reservation, usage: Usage) -> Spend | None:
    """The ledger row of a call made while no cap was on (so nothing was reserved), not yet written:
    for the caller to write with its own writes (the loop writes it with the message that answers
    the call, in one transaction). None when the call reserved: `settle` replaces the reservation."""
    if reservation.spend_id is not None:
        return None
    return Spend(
        user=reservation.user,
        created_at=timezone.now(),
        model_id=reservation.model,
        tokens=total_tokens(usage),
        cost_usd=cost_of(reservation.model, usage),
        settled=True,
    )


def settle(reservation: Reservation, usage: Usage) -> Decimal:
    """Replace the reservation by what the call really used (or, with no cap on, record the call);
    returns its cost."""
    row = ledger_row(reservation, usage)
    if row is not None:
        row.save(force_insert=True)
        return row.cost_usd
    assert reservation.spend_id is not None  # (no ledger row: the call reserved one, to replace now)
    cost = cost_of(reservation.model, usage)
    Spend.objects.filter(pk=reservation.spend_id).update(tokens=total_tokens(usage), cost_usd=cost, settled=True)
    add_to_day(reservation.day, cost - reservation.reserved_usd)
    return cost


def meter(user: Any) -> dict[str, float]:
    """Each bucket's fill fraction (0..1+); 0 when the bucket is off (no query when all are)."""
    limits = Limits.from_settings()
    if not limits.any:
        return dict.fromkeys(("minute", "hour", "month", "global"), 0.0)
    used = _usage(user, timezone.now())

    def frac(value: Any, limit: float) -> float:
        return round(float(value) / limit, 4) if limit else 0.0

    return {
        "minute": frac(used["minute"], limits.per_minute),
        "hour": frac(used["hour"], limits.per_hour),
        "month": frac(used["month"], limits.usd_month),
        "global": frac(used["global"], limits.usd_global),
    }


def counted_at_estimate(*, finished: bool, stopped: bool, output_chars: int) -> bool:
    """Whether a model call (a chat call or a summary) is counted at an estimate (`estimated_usage`)
    rather than at the provider's own count.

    A call that finished reported its usage. One stopped (even before it wrote anything: it had read
    the prompt) or failed after it began to answer is billed by the provider for its prompt and what
    it wrote, but sent no count: it is counted at an estimate, never as free (else pressing Stop
    would empty no bucket). One that failed before any output costs nothing."""
    return not finished and (stopped or output_chars > 0)


def estimated_usage(prompt_tokens: int, output_chars: int) -> Usage:
    """The usage of a call that ended without the provider's count: its prompt as estimated, and
    what it wrote at about four characters a token."""
    return {**zero_usage(), "input_tokens": prompt_tokens, "output_tokens": tokens_in(output_chars)}


def tokens_in(chars: int) -> int:
    """Tokens a text of `chars` characters is counted as: about four characters a token."""
    return chars // 4 + 1


def estimate_tokens(system: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> int:
    """A cheap upper-ish estimate of input tokens: about four characters a token."""
    chars = len(system) + _tools_chars(tools)
    for m in messages:
        for p in m["parts"]:
            if p["type"] in ("image", "document"):
                chars += 4 * attachments.tokens(p)  # from its dimensions, pages or size
            else:
                chars += len(json.dumps({k: v for k, v in p.items() if k != "data"}, default=str))
    return tokens_in(chars)


_SPEC_KEYS = frozenset(("name", "description", "input_schema"))
_spec_chars: dict[tuple[str, str, int], tuple[Any, int]] = {}


def _tools_chars(tools: Sequence[Mapping[str, Any]]) -> int:
    """`len(json.dumps(tools))`, with each catalogue spec's own length computed once: a spec is made
    afresh for every call, but of its registered tool's schema, the same object every time (kept
    with the length, so its id cannot name another schema while the length is remembered)."""
    total = 2 + 2 * max(0, len(tools) - 1)  # "[", "]" and the ", " between specs
    for spec in tools:
        if spec.keys() != _SPEC_KEYS:
            total += len(json.dumps(spec, default=str))
            continue
        schema = spec["input_schema"]
        key = (spec["name"], spec["description"], id(schema))
        known = _spec_chars.get(key)
        if known is None or known[0] is not schema:
            if len(_spec_chars) >= 1024:  # tools registered and dropped over and over (tests): stay small
                _spec_chars.clear()
            known = _spec_chars[key] = (schema, len(json.dumps(spec, default=str)))
        total += known[1]
    return total
