"""Evals: YAML datasets of requests run against a fresh blog, checking the tool calls made and the final state.

Each case runs inside a transaction that is rolled back, so nothing is left behind. With the
`fake` backend a case replays its `fake_script` (CI); with a real backend it measures a model.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import override_settings

from agent import approvals, turns
from agent.backends import reset_backends
from agent.models import Approval
from agent.values import Phase
from blog.access import ALL_SCOPES
from blog.chat import start_session
from blog.models import Blog, Consent, Post, Seat

DATASETS = Path(__file__).parent
MAX_CONFIRMS = 4


class EvalError(Exception):
    """A dataset that cannot be read or run; the message says why."""


@dataclass
class CaseResult:
    case: str
    passed: bool
    tools: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def load(name: str) -> dict[str, Any]:
    path = Path(name) if name.endswith((".yaml", ".yml")) else DATASETS / f"{name}.yaml"
    if not path.is_file():
        available = ", ".join(sorted(p.stem for p in DATASETS.glob("*.yaml")))
        raise EvalError(f"No dataset {name!r}. Available: {available}.")
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise EvalError(f"{path} must be a mapping with a list of cases.")
    return data


class _Rollback(Exception):
    pass


def run_dataset(data: dict[str, Any], *, backend: str, model: str = "") -> list[CaseResult]:
    results = []
    for case in data["cases"]:
        results.append(run_case(data, case, backend=backend, model=model))
    return results


def run_case(data: dict[str, Any], case: dict[str, Any], *, backend: str, model: str) -> CaseResult:
    result = CaseResult(case=str(case.get("id", "?")), passed=False)
    try:
        with transaction.atomic():
            _run_case(data, case, backend, model, result)
            raise _Rollback()
    except _Rollback:
        pass
    result.passed = not result.problems
    return result


def _run_case(data, case, backend, model, result: CaseResult) -> None:
    blog, user = _fixture(data.get("posts", []))
    script = _script_file(case.get("fake_script") or [], blog) if backend == "fake" else ""
    overrides = {
        "AGENT_BACKEND": backend,
        "AGENT_MODEL": model,
        "AGENT_FAKE_SCRIPT": script,
        "AGENT_DEMO_DELAY_MS": 0,
        "AGENT_BUDGET_TOKENS_PER_MINUTE": 0,
        "AGENT_BUDGET_TOKENS_PER_HOUR": 0,
        "AGENT_BUDGET_USD_PER_MONTH": 0,
        "AGENT_BUDGET_GLOBAL_USD_PER_MONTH": 0,
    }
    with override_settings(**overrides):
        reset_backends()
        try:
            session = start_session(user, blog)
            for text in case.get("requests", []):
                run, _ = turns.begin(session, text)
                _drive(run, session, case, result)
        finally:
            reset_backends()
    _check(case, blog, result)


def _drive(run, session, case, result: CaseResult) -> None:
    for _ in range(MAX_CONFIRMS):
        confirm = None
        for step in turns.drive(run):
            if isinstance(step, Phase):  # (never: this run does not ask for the marks)
                continue
            if step[0] == "tool_use":
                result.tools.append(step[1]["name"])
            elif step[0] == "confirm":
                confirm = step[1]
            elif step[0] == "error":
                result.problems.append(f"error: {step[1]['code']}")
        if confirm is None:
            return
        for item in confirm["approvals"]:
            approvals.decide(session, item["id"], session.user, bool(case.get("approve", False)))
        if Approval.objects.filter(session=session, status=Approval.PENDING).exists():
            return
        run = turns.resume(session)


def _fixture(posts: list[dict[str, Any]]) -> tuple[Blog, Any]:
    User = get_user_model()
    user = User.objects.create_user(f"eval-{User.objects.count()}-{id(posts)}", password=None)
    blog = Blog.objects.create(owner=user, title="Eval blog", slug=f"eval-{user.pk}")
    Seat.objects.create(user=user, blog=blog, role=Seat.OWNER, may_use_assistant=True)
    Consent.objects.create(user=user, blog=blog, client="", scopes=list(ALL_SCOPES))
    for i, spec in enumerate(posts):
        Post.objects.create(
            blog=blog,
            author=user,
            title=spec["title"],
            slug=f"p-{i}",
            body=spec.get("body", ""),
            status=spec.get("status", Post.DRAFT),
        )
    return blog, user


def _script_file(calls: list[Any], blog: Blog) -> str:
    """Write the case's fake script, with "$post:<title>" replaced by that post's id."""

    def resolve(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$post:"):
            post = Post.objects.filter(blog=blog, title=value[6:]).first()
            return post.pk if post else 0
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v) for v in value]
        return value

    handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    with handle:
        json.dump({"calls": resolve(calls)}, handle)
    return handle.name


def _check(case: dict[str, Any], blog: Blog, result: CaseResult) -> None:
    expected = list(case.get("expect_tools", []))
    remaining = iter(result.tools)
    if not all(name in remaining for name in expected):  # an ordered subsequence of the calls made
        result.problems.append(f"tools {result.tools} do not include {expected} in order")
    for check in case.get("expect_state", []):
        if "post" in check:
            want = check["post"]
            post = Post.objects.filter(blog=blog, title=want["title"]).first()
            if post is None:
                result.problems.append(f"no post titled {want['title']!r}")
            elif "status" in want and post.status != want["status"]:
                result.problems.append(f"{want['title']!r} is {post.status}, expected {want['status']}")
        if "absent" in check and Post.objects.filter(blog=blog, title=check["absent"]["title"]).exists():
            result.problems.append(f"{check['absent']['title']!r} still exists")
