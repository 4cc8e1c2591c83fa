/* The Lua scripts of the wire contract (src/kinds/lua/, one file a
 * script), sent as EVALSHA with EVAL as the NOSCRIPT fallback. KEYS and
 * ARGV are always passed, never spliced in. */
#ifndef DLOCK_SCRIPTS_H
#define DLOCK_SCRIPTS_H

#include "fanout.h"

enum dlock__script_id {
    /* KEYS lock, fence, owner, and the waiting writers once the name was
     * found held shared; ARGV token, ttl_ms, fence_ttl_ms, owner record,
     * and "1" once among the writers. Returns {1, fence as a decimal
     * string} (granted), {0, PTTL of the lock} (held by another, or free
     * with a fair queue marked in the fence key), {0, PTTL, 2} (held
     * shared, the writers not named) or {0, ms, 1} (among the writers). */
    DLOCK__SCRIPT_ACQUIRE,
    /* KEYS lock, owner, the waiting writers for a writer that leaves
     * them, and with several
     * servers, for a lock that was held, `freed` last; ARGV token, channel,
     * "1" to publish or "0", then with `freed` the lock's fence and
     * fence_ttl_ms. Returns 1 (released) or 0 (not ours). */
    DLOCK__SCRIPT_RELEASE,
    /* KEYS lock, owner, fence, and `freed` when repairing; ARGV token,
     * ttl_ms, "1" to repair a missing key (Redlock) or "0", fence,
     * fence_ttl_ms. Returns 1 (extended), 2 (repaired: not a vote) or 0. */
    DLOCK__SCRIPT_EXTEND,
    /* KEYS lock, fence, owner. Read-only. Returns {type of the lock key,
     * PTTL, fence or false, owner record of the current holder or false}. */
    DLOCK__SCRIPT_STATUS,
    /* KEYS fence, and the epoch key for a kind with one; ARGV fence,
     * fence_ttl_ms. Raises each to at least ARGV[1], never lowers it (a
     * delayed packet must not). Returns 1. */
    DLOCK__SCRIPT_FENCE_MAX,
    /* The semaphore's (src/kinds/lua/sem_*.lua, docs/semaphores.md): the
     * mutex's KEYS and ARGV, then the auxiliary keys limit, slots, owners,
     * fences and the waiters' queue; the acquire's ARGV go on with the
     * number of permits and, for a waiter, its lease and the hand-over's
     * "1". */
    DLOCK__SCRIPT_SEM_ACQUIRE,
    DLOCK__SCRIPT_SEM_RELEASE,
    DLOCK__SCRIPT_SEM_EXTEND,
    /* KEYS NAME, limit, slots, owners, fences. Read-only. */
    DLOCK__SCRIPT_SEM_STATUS,
    /* The fair lock's (src/kinds/lua/fair_*.lua, docs/fair.md): the mutex's
     * KEYS and ARGV, then the auxiliary keys queue, presence, wake and fence;
     * the acquire's ARGV go on with the presence lease in ms and "1" when
     * the waiter may be handed the lock. Its extend and status are the
     * mutex's. */
    DLOCK__SCRIPT_FAIR_ACQUIRE,
    DLOCK__SCRIPT_FAIR_RELEASE,
    /* Shared holders' (src/kinds/lua/shared_*.lua, docs/shared.md): the
     * mutex's KEYS and ARGV, then for the acquire the auxiliary keys writer,
     * readers, rowners and epoch, for the others readers and rowners; the
     * acquire's last ARGV is "1" with several servers. The status takes
     * KEYS NAME, then the kind's auxiliary keys. */
    DLOCK__SCRIPT_SHARED_ACQUIRE,
    DLOCK__SCRIPT_SHARED_RELEASE,
    DLOCK__SCRIPT_SHARED_EXTEND,
    DLOCK__SCRIPT_SHARED_STATUS,
    DLOCK__SCRIPT_COUNT
};

#define DLOCK__SCRIPT_KEYS_MAX 16

/* A script call: the fan-out's call (EVALSHA, with EVAL as its fallback)
 * and what the fallback is encoded from. */
typedef struct dlock__script_call {
    dlock__call call; /* first: the fan-out's fallback finds the rest from it */
    enum dlock__script_id id;
    int nkeys, nargs;
    const char *const *keys, *const *args; /* borrowed until freed */
    const char *named[DLOCK__SCRIPT_KEYS_MAX]; /* the KEYS sent: keys, or NAME for absent ones */
} dlock__script_call;

/* Encodes script `id` with its keys and arguments into *sc as EVALSHA; the
 * EVAL fallback is encoded only if a node answers NOSCRIPT. `keys` and
 * `args` are borrowed until the call is freed. The status scripts read a
 * key named as their first key (NAME) as one that does not exist: their
 * calls can go again naming so the keys a migrating slot's node lacks
 * (fanout.h). A script that writes may not: a
 * migrating slot's node refuses a script's access to a key it deleted, so
 * a write there can fail halfway. Returns 0, DLOCK_ENOMEM or
 * DLOCK_EINVAL. */
int dlock__script_encode(dlock__script_call *sc, enum dlock__script_id id, int nkeys,
                       const char *const *keys, int nargs, const char *const *args);
void dlock__script_call_free(dlock__script_call *sc);

/* Every script's source, NULL-terminated: what a new connection loads. */
const char *const *dlock__script_sources(void);

/* The script's source and SHA1 (hex), for tests. */
const char *dlock__script_source(enum dlock__script_id id);
const char *dlock__script_sha(enum dlock__script_id id);

#endif
