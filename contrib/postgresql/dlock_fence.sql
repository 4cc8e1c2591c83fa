-- dlock's guard for data kept in PostgreSQL: the last fencing token
-- accepted per resource, and a function that advances it inside the
-- caller's transaction or refuses an older token.
--
-- Install once per database:   psql -f /usr/share/dlock/dlock_fence.sql
-- Then, first in every transaction that writes the resource:
--   BEGIN;
--   SELECT dlock_fence_advance('report', :'fence');  -- psql -v fence="$DLOCK_FENCE"
--   ... the writes ...
--   COMMIT;
--
-- dlock_fence_advance(resource, fence) takes the resource's row lock, so
-- two holders' transactions serialize on it: the second waits until the
-- first commits or rolls back, and then sees its token. It returns the
-- token. A token older than the last one accepted raises SQLSTATE LF001
-- (the transaction is aborted: roll it back, the holder is stale); one that
-- is not a token raises LF002 (negative or NULL), 22P02 (not a number) or
-- 22003 (above bigint's 2^63 - 1; dlock's tokens stay below 2^53). A token
-- equal to the last accepted is the same holder writing again: allowed. A
-- resource never seen before accepts any token.
--
-- The function runs with the caller's rights: a role that writes the
-- resource needs   GRANT SELECT, INSERT, UPDATE ON dlock_fence TO role;
--
-- Class LF is not one the SQL standard or PostgreSQL defines (classes from I
-- to Z are left to implementations; PostgreSQL's own are listed in
-- Appendix A of its manual).

CREATE TABLE IF NOT EXISTS dlock_fence (
    resource   text PRIMARY KEY,
    fence      bigint NOT NULL CHECK (fence >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE OR REPLACE FUNCTION dlock_fence_advance(resource text, fence bigint)
RETURNS bigint
LANGUAGE plpgsql
-- The table is the one next to the function, whatever the caller's
-- search_path.
SET search_path FROM CURRENT
AS $$
DECLARE
    accepted bigint;
    last     bigint;
BEGIN
    IF resource IS NULL OR fence IS NULL OR fence < 0 THEN
        RAISE EXCEPTION 'dlock fence % for resource % is not a fencing token',
                        coalesce(fence::text, 'NULL'), coalesce(quote_literal(resource), 'NULL')
              USING ERRCODE = 'LF002',
                    HINT = 'Pass $DLOCK_FENCE: a decimal integer, 0 or more.';
    END IF;
    -- ON CONFLICT DO UPDATE locks the row even when its WHERE is false.
    INSERT INTO dlock_fence AS f (resource, fence)
         VALUES (dlock_fence_advance.resource, dlock_fence_advance.fence)
    ON CONFLICT ON CONSTRAINT dlock_fence_pkey
      DO UPDATE SET fence = EXCLUDED.fence, updated_at = now()
         WHERE f.fence <= EXCLUDED.fence
    RETURNING f.fence INTO accepted;
    IF accepted IS NULL THEN
        SELECT f.fence INTO last FROM dlock_fence AS f
         WHERE f.resource = dlock_fence_advance.resource;
        RAISE EXCEPTION 'dlock fence % for resource % is older than %, the last accepted: a newer holder has written',
                        fence, quote_literal(resource), last
              USING ERRCODE = 'LF001',
                    HINT = 'This holder lost its lock: roll back and stop.';
    END IF;
    RETURN accepted;
END;
$$;
