-- A job that writes a report into PostgreSQL under the lock `report`, with
-- the write guarded by the lock's fencing token: a holder that lost its
-- lock while it was paused, and wakes after another holder has written,
-- is refused (SQLSTATE LF001) and its transaction rolls back.
--
-- Once per database:   psql -f /usr/share/dlock/dlock_fence.sql
-- Each run:
--   dlock run report -- psql -v ON_ERROR_STOP=1 -v fence="$DLOCK_FENCE" \
--       -v body="the report's text" -f fence-postgresql.sql
-- (the command's own environment has DLOCK_FENCE: quote the whole psql
-- line for sh -c, or put it in a script, so that the variable is read
-- there and not by the shell that starts dlock).

CREATE TABLE IF NOT EXISTS report (
    id   int PRIMARY KEY,
    body text NOT NULL
);

BEGIN;
-- First: takes the row lock of the resource 'report' and checks the token.
SELECT dlock_fence_advance('report', :'fence');
INSERT INTO report (id, body) VALUES (1, :'body')
    ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body;
COMMIT;
