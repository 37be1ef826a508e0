"""python manage.py agent_eval --backend openai --model X [--dataset NAME] [--compare demo,fake]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from agent.backends import backend_classes
from blog.evals.runner import EvalError, load, run_dataset


class Command(BaseCommand):
    help = "Run a YAML dataset of requests against a fresh blog and check the tool calls and final state."

    def add_arguments(self, parser):
        names = ", ".join(backend_classes())
        parser.add_argument("--backend", default="fake", help=f"one of {names} (default fake)")
        parser.add_argument("--model", default="", help="model id for the backend (default: its own)")
        parser.add_argument("--dataset", default="basics", help="a name under blog/evals/ or a path to a .yaml")
        parser.add_argument("--compare", default="", help="comma-separated backends to run side by side")

    def handle(self, *args, backend, model, dataset, compare, **options):
        backends = [b.strip() for b in compare.split(",") if b.strip()] or [backend]
        known = backend_classes()
        unknown = [b for b in backends if b not in known]
        if unknown:
            raise CommandError(f"Unknown backend {unknown[0]!r}; choose from {', '.join(known)}.")
        try:
            data = load(dataset)
        except EvalError as exc:
            raise CommandError(str(exc)) from None
        runs = {b: run_dataset(data, backend=b, model=model) for b in backends}
        self._table(data, backends, runs)
        failed = sum(not r.passed for results in runs.values() for r in results)
        if failed:
            raise CommandError(f"{failed} case(s) failed.")

    def _table(self, data, backends, runs) -> None:
        cases = [str(c.get("id", "?")) for c in data["cases"]]
        width = max(len(c) for c in cases + ["case"])
        self.stdout.write(f"Dataset {data.get('name', '?')}: {len(cases)} cases")
        self.stdout.write("case".ljust(width) + "".join(f"  {b:<8}" for b in backends))
        for i, case in enumerate(cases):
            marks = "".join(f"  {'pass' if runs[b][i].passed else 'FAIL':<8}" for b in backends)
            self.stdout.write(case.ljust(width) + marks)
        for b in backends:
            for r in runs[b]:
                for problem in r.problems:
                    self.stdout.write(f"  {b}/{r.case}: {problem}")
        totals = "  ".join(f"{b}: {sum(r.passed for r in runs[b])}/{len(cases)}" for b in backends)
        self.stdout.write(f"passed — {totals}")
