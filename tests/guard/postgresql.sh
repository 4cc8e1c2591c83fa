#!/usr/bin/env bash
# The PostgreSQL guard (contrib/postgresql/dlock_fence.sql) against a real
# server: a paused holder's late write is refused and the newer holder's
# stays; 20 holders at once count exactly; tokens that are not numbers,
# resources never seen, two resources in one transaction.
#   postgresql.sh DLOCK SOURCE_DIR
. "$2/tests/guard/lib.sh"
. "$2/tests/guard/postgres-lib.sh"
guard_setup "$1" "$2"
trap 'stop_postgres; stop_redis; rm -rf "$WORK"' EXIT
start_postgres "$WORK"
$PSQL -f "$SRC/contrib/postgresql/dlock_fence.sql"
# Installing it again (a package upgrade) keeps what it holds.
$PSQL -c "INSERT INTO dlock_fence (resource, fence) VALUES ('kept', 7)"
$PSQL -f "$SRC/contrib/postgresql/dlock_fence.sql"
expect_eq "$($PSQL -Atc "SELECT fence FROM dlock_fence WHERE resource = 'kept'")" 7 "reinstall"

# sql QUERY: its rows; sql_error QUERY: its SQLSTATE and message, which it
# must fail with.
sql() { $PSQL -Atc "$1"; }
sql_error() {
  local out
  if out=$($PSQL -v VERBOSITY=verbose -Atc "$1" 2>&1); then
    fail "'$1' succeeded: $out"
  fi
  printf '%s' "$out" | sed -n 's/^ERROR: *//p' | head -n 1
}

# The example job, as its header says to run it.
cat >"$WORK/report.sh" <<SH
#!/bin/sh
exec $PSQL -v fence="\$DLOCK_FENCE" -v body="\$1" -f "$SRC/examples/fence-postgresql.sql"
SH
chmod +x "$WORK/report.sh"

echo "== a paused holder's late write is refused"
paused_holder report "$WORK/report.sh"
[ "$A_RC" != 0 ] || fail "A's stale write succeeded: $A_OUT"
expect_match "$A_OUT" "dlock fence $FENCE_A for resource 'report' is older than $FENCE_B" "A's refusal"
expect_eq "$(sql "SELECT body FROM report WHERE id = 1")" B "the report after A's write"
expect_eq "$(sql "SELECT fence FROM dlock_fence WHERE resource = 'report'")" "$FENCE_B" \
  "the fence after A's write"
expect_match "$(sql_error "SELECT dlock_fence_advance('report', $FENCE_A)")" "^LF001: " \
  "the stale token's SQLSTATE"
# The same holder writing again with its token: allowed.
expect_eq "$(sql "SELECT dlock_fence_advance('report', $FENCE_B)")" "$FENCE_B" "B again"

echo "== 20 holders at once increment a counter exactly"
sql "CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL); INSERT INTO counter VALUES (1, 0)"
# Read, pause, write: only the lock keeps two jobs from reading one value.
cat >"$WORK/count.sql" <<'SQL'
BEGIN;
SELECT dlock_fence_advance('counter', :'fence');
SELECT n FROM counter WHERE id = 1 \gset
SELECT pg_sleep(0.01);
UPDATE counter SET n = :n + 1 WHERE id = 1;
COMMIT;
SQL
cat >"$WORK/count.sh" <<SH
#!/bin/sh
exec $PSQL -o /dev/null -v fence="\$DLOCK_FENCE" -f "$WORK/count.sql"
SH
chmod +x "$WORK/count.sh"
counter_jobs counter 20 "$WORK/count.sh"
expect_eq "$(sql "SELECT n FROM counter")" 20 "the counter"
status=$($DLOCK status --json counter || true) # free: exit 1
last=$(printf '%s' "$status" | sed 's/.*"fence":\([0-9]*\).*/\1/')
expect_eq "$(sql "SELECT fence FROM dlock_fence WHERE resource = 'counter'")" "$last" \
  "the counter's fence (the last one issued)"

echo "== tokens that are not tokens"
expect_match "$(sql_error "SELECT dlock_fence_advance('bad', 'abc')")" \
  '^22P02: invalid input syntax for type bigint: "abc"' "a word"
expect_match "$(sql_error "SELECT dlock_fence_advance('bad', '')")" '^22P02: ' "an empty token"
expect_match "$(sql_error "SELECT dlock_fence_advance('bad', '9223372036854775808')")" \
  '^22003: .*out of range for type bigint' "2^63"
expect_match "$(sql_error "SELECT dlock_fence_advance('bad', -1)")" \
  "^LF002: dlock fence -1 for resource 'bad' is not a fencing token" "a negative token"
expect_match "$(sql_error "SELECT dlock_fence_advance(NULL, 5)")" '^LF002: ' "no resource"
expect_match "$(sql_error "SELECT dlock_fence_advance('bad', NULL)")" '^LF002: ' "no token"
expect_eq "$(sql "SELECT count(*) FROM dlock_fence WHERE resource = 'bad'")" 0 "rows for 'bad'"
# The largest bigint is a token (dlock's stay below 2^53).
expect_eq "$(sql "SELECT dlock_fence_advance('big', 9223372036854775807)")" \
  9223372036854775807 "2^63 - 1"

echo "== a resource never seen before takes any token, 0 too"
expect_eq "$(sql "SELECT dlock_fence_advance('new', 0)")" 0 "the first token"
expect_eq "$(sql "SELECT fence FROM dlock_fence WHERE resource = 'new'")" 0 "its row"

echo "== two resources in one transaction: all or nothing"
sql "CREATE TABLE ledger (resource text, note text)"
sql "SELECT dlock_fence_advance('a', 100), dlock_fence_advance('b', 200)" >/dev/null
expect_match "$(sql_error "BEGIN;
  SELECT dlock_fence_advance('a', 150);
  INSERT INTO ledger VALUES ('a', 'stale');
  SELECT dlock_fence_advance('b', 150);
  INSERT INTO ledger VALUES ('b', 'stale');
  COMMIT;")" "^LF001: dlock fence 150 for resource 'b' is older than 200" "b's refusal"
expect_eq "$(sql "SELECT fence FROM dlock_fence WHERE resource = 'a'")" 100 "a after the rollback"
expect_eq "$(sql "SELECT count(*) FROM ledger")" 0 "the ledger after the rollback"
sql "BEGIN; SELECT dlock_fence_advance('a', 300); SELECT dlock_fence_advance('b', 300);
     INSERT INTO ledger VALUES ('ab', 'current'); COMMIT;" >/dev/null
expect_eq "$(sql "SELECT string_agg(resource || '=' || fence, ',' ORDER BY resource)
                    FROM dlock_fence WHERE resource IN ('a', 'b')")" "a=300,b=300" "both advanced"

echo "== a role of its own, with the grants the docs name"
sql "CREATE ROLE app LOGIN; CREATE SCHEMA elsewhere AUTHORIZATION app"
app() { $PSQL -U app -Atc "SET search_path = elsewhere; $1" 2>&1; }
expect_match "$(app "SELECT public.dlock_fence_advance('app', 1)" || true)" \
  "permission denied for table dlock_fence" "before the grant"
sql "GRANT SELECT, INSERT, UPDATE ON dlock_fence TO app"
expect_eq "$(app "SELECT public.dlock_fence_advance('app', 1)")" 1 \
  "after the grant, from another search_path"

echo "== two holders' transactions serialize on the row lock"
# The newer holder's transaction has advanced the row and is still open;
# the older holder's advance waits for it, then sees its token: refused.
coproc NEWER { $PSQL -At; }
echo "BEGIN; SELECT dlock_fence_advance('row', 20);" >&"${NEWER[1]}"
read -r advanced <&"${NEWER[0]}"
expect_eq "$advanced" 20 "the newer holder's advance"
sql_error "SELECT dlock_fence_advance('row', 10)" >"$WORK/older" &
older=$!
sleep 0.5
kill -0 "$older" 2>/dev/null || fail "the older advance did not wait: $(cat "$WORK/older")"
echo "COMMIT;" >&"${NEWER[1]}"
to_newer=${NEWER[1]}
exec {to_newer}>&- # its end of input: psql exits
wait "$older"
expect_match "$(cat "$WORK/older")" "^LF001: dlock fence 10 for resource 'row' is older than 20" \
  "the older holder's advance, after the commit"
echo "guard postgresql: ok"
