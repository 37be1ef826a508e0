"""What people see of a transcript: chip summaries and the usage meter."""

from __future__ import annotations

from agent.display import meter_display, summarize_input


def test_chip_summary_follows_schema_order_not_storage_order():
    stored = {"body": "long text", "title": "Morning light"}  # as jsonb may return it
    assert summarize_input(stored, ["title", "body"]) == "title: Morning light, body: long text"
    assert summarize_input({"post_id": 3}, ["post_id"]) == "post_id: 3"
    assert summarize_input({}) == ""
    assert summarize_input({"a": "x" * 100}).endswith("…")
    assert summarize_input({"a": "line\nbreak"}) == "a: line break"


def test_meter_shows_only_near_limits_and_caps_at_100():
    assert meter_display({"minute": 0.1, "hour": 0.2, "month": 0.0, "global": 0.0}) is None
    assert meter_display({"minute": 172.0, "hour": 0.85, "month": 0.0, "global": 0.0}) == {"minute": 100, "hour": 85}
