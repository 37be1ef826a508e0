#!/bin/bash
# An older release's site upgraded under its own workers (README, Upgrading; RELIABILITY.md, "Old workers on the
# new schema"). With that release's code it migrates and seeds a database and uses it (old_use.py); this checkout's
# `migrate` upgrades it while runs of the old code go on; the old code uses it again; this checkout's `check` and
# every chat's, post's and blog's page read what the old code wrote (new_read.py).
#
#   bench/old_workers/run.sh <label> <old checkout> <old python> <DATABASE_URL>
#   e.g. git worktree add --detach /tmp/old 0856e5a, a venv with its requirements.txt, then
#   bench/old_workers/run.sh oldest /tmp/old /tmp/old-venv/bin/python sqlite:////tmp/oldest.sqlite3
#
# The database must be new (an empty PostgreSQL database, or no SQLite file). Logs go to $OUT/<label>/.
set -u
label=$1; old=$2; oldpy=$3
here=$(cd "$(dirname "$0")" && pwd); new=$(cd "$here/../.." && pwd); newpy=${NEW_PYTHON:-$new/.venv/bin/python}
out=${OUT:-/tmp/old-workers}/$label; mkdir -p "$out"
export DATABASE_URL=$4 DEBUG=1
# (the limits are not what is tried here: the runs come quickly one after another)
export AGENT_MESSAGES_PER_MINUTE=1000 AGENT_BUDGET_TOKENS_PER_MINUTE=10000000 MCP_CALLS_PER_MINUTE=0
echo "== $label: $(git -C "$old" rev-parse --short HEAD) -> $(git -C "$new" rev-parse --short HEAD) on ${DATABASE_URL%%:*}"
(cd "$old" && $oldpy manage.py migrate --noinput && $oldpy manage.py seed_demo) > "$out/1-old-migrate.log" 2>&1 \
    || { echo "the old release's migrate or seed_demo failed: $out/1-old-migrate.log"; exit 1; }
(cd "$old" && $oldpy "$here/old_use.py" before > "$out/2-old-before.log" 2>&1)
echo "old code, old schema: $(tail -1 "$out/2-old-before.log")"
(cd "$new" && $newpy manage.py showmigrations --plan | grep '\[ \]' > "$out/3-pending.log")
echo "to apply: $(awk '{print $3}' "$out/3-pending.log" | grep -v oauth2_provider | tr '\n' ' ')"
# Runs of the old code (the demo model without its pace) one after another until migrate has finished; the steps
# stamped between its start and end ran while it did.
touch "$out/migrating"
(i=0; while [ -e "$out/migrating" ]; do
    i=$((i + 1)); (cd "$old" && AGENT_DEMO_DELAY_MS=0 $oldpy "$here/old_use.py" "during$i" > "$out/4-old-during$i.log" 2>&1)
done) & during=$!
sleep 1; start=$(date +%s.%N)
(cd "$new" && $newpy manage.py migrate --noinput > "$out/4-new-migrate.log" 2>&1); rc=$?; end=$(date +%s.%N)
rm "$out/migrating"; wait $during
echo "new migrate: exit $rc in $(echo "$end - $start" | bc | cut -c1-4) s"
ran=$(grep -h '^OK' "$out"/4-old-during*.log | awk -v s="$start" -v e="$end" '{t = substr($NF, 2)} t >= s && t <= e' | wc -l)
echo "old code during migrate: $ran steps held while it ran, $(cat "$out"/4-old-during*.log | grep -c '^FAIL') failed"
(cd "$old" && $oldpy "$here/old_use.py" after > "$out/5-old-after.log" 2>&1)
echo "old code, new schema: $(tail -1 "$out/5-old-after.log")"
(cd "$new" && $newpy manage.py check > "$out/6-new-check.log" 2>&1); echo "new check: $(tail -1 "$out/6-new-check.log")"
(cd "$new" && $newpy "$here/new_read.py" > "$out/7-new-read.log" 2>&1); echo "new code reads: $(cat "$out/7-new-read.log")"
grep -h "^FAIL" "$out"/*-old-*.log
