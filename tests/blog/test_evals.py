"""agent_eval: datasets run against a fresh blog, pass table, non-zero exit on failure, nothing left behind."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from blog.models import Blog, Post

pytestmark = pytest.mark.django_db


def test_basics_pass_on_fake_and_demo_side_by_side(capsys):
    call_command("agent_eval", "--compare", "demo,fake")
    out = capsys.readouterr().out
    assert "passed — demo: 5/5  fake: 5/5" in out
    assert not Blog.objects.exists() and not Post.objects.exists()  # every case was rolled back


def test_a_failing_case_is_reported_and_exits_non_zero(tmp_path, capsys):
    dataset = tmp_path / "bad.yaml"
    dataset.write_text("""
name: bad
cases:
  - id: wrong-expectation
    requests: ["list my posts"]
    expect_tools: [delete_post]
    expect_state:
      - post: {title: "Never made"}
    fake_script:
      - [{kind: text, text: "No."}, {kind: done, stop_reason: end_turn}]
""")
    with pytest.raises(CommandError, match="1 case"):
        call_command("agent_eval", "--backend", "fake", "--dataset", str(dataset))
    out = capsys.readouterr().out
    assert "wrong-expectation  FAIL" in out
    assert "no post titled 'Never made'" in out


def test_unknown_dataset_and_backend_are_clear_errors():
    with pytest.raises(CommandError, match="No dataset 'nope'. Available: basics"):
        call_command("agent_eval", "--dataset", "nope")
    with pytest.raises(CommandError, match="Unknown backend 'gpt'"):
        call_command("agent_eval", "--backend", "gpt")
