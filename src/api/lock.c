/* The lock API: acquire (trying once or waiting), adopt, release, extend,
 * and the getters. The work is the engine's: attempt, wait, renew. */
#include "lock.h"

#include "clock.h"
#include "kinds.h"
#include "route.h"
#include "token.h"
#include "wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int new_lock(dlock_lock **out, dlock_client *c, const char *name, const dlock__kind *kind)
{
    dlock_lock *lock = calloc(1, sizeof(*lock));
    int rc;
    if (!lock) {
        dlock__set_error(&c->main, "out of memory");
        return DLOCK_ENOMEM;
    }
    rc = dlock__claim_init(&lock->claim, c, &c->main, name, kind, &lock->params);
    if (rc < 0) {
        free(lock);
        return rc;
    }
    *out = lock;
    return 0;
}

/* A client opened with the `inspect` option may have servers that cannot
 * hold a lock: it refuses here what a lock client refuses at open. */
static int check_lockable(dlock_client *c)
{
    if (!c->refusal[0])
        return 0;
    dlock__set_error(&c->main, "%s", c->refusal);
    return DLOCK_EINVAL;
}

int dlock_acquire_options_init(dlock_acquire_options *opts, unsigned version)
{
    if (!opts || version != DLOCK_ACQUIRE_OPTIONS_VERSION)
        return DLOCK_EINVAL;
    memset(opts, 0, sizeof(*opts));
    opts->version = version;
    return 0;
}

static int check_acquire_options(dlock__lane *lane, const dlock_acquire_options *o,
                                 int64_t ttl_ms)
{
    const char *why = NULL;
    if (o->version != DLOCK_ACQUIRE_OPTIONS_VERSION)
        why = "unknown acquire options version";
    else if (!dlock__duration_ok(o->wait_ms) && o->wait_ms != DLOCK_WAIT_FOREVER)
        why = "wait_ms must be 0, positive up to DLOCK_DURATION_MAX_MS, or DLOCK_WAIT_FOREVER";
    else if (!dlock__duration_ok(o->backoff_max_ms) || !dlock__duration_ok(o->max_hold_ms))
        why = "backoff_max_ms and max_hold_ms must be from 0 to DLOCK_DURATION_MAX_MS";
    else if (!o->auto_renew && (o->max_hold_ms || o->on_lost))
        why = "max_hold_ms and on_lost need auto_renew";
    else if (o->max_hold_ms && o->max_hold_ms < ttl_ms)
        why = "max_hold_ms must not be shorter than the TTL";
    else if (o->lease_ms && !o->fair && o->permits <= 1)
        why = "lease_ms is a queued waiter's presence lease: it needs fair or permits > 1";
    else if (o->lease_ms && (o->lease_ms < DLOCK_LEASE_MIN_MS || o->lease_ms > DLOCK_LEASE_MAX_MS))
        why = "lease_ms must be 0 (the default) or from DLOCK_LEASE_MIN_MS to DLOCK_LEASE_MAX_MS";
    if (!why)
        return 0;
    dlock__set_error(lane, "%s", why);
    return DLOCK_EINVAL;
}

/* The kind the options ask for: shared, fair, a semaphore (permits > 1),
 * else a mutex (one that does not wait marks no writer's wait on a name
 * held shared). */
static const dlock__kind *kind_of(const dlock_acquire_options *o)
{
    if (o->shared)
        return &dlock__kind_shared;
    if (o->fair)
        return &dlock__kind_fair;
    if (o->permits > 1)
        return &dlock__kind_semaphore;
    return o->wait_ms == 0 ? &dlock__kind_mutex_try : &dlock__kind_mutex;
}

/* An acquire that failed may leave a place behind that its kind takes
 * back with a release (a fair waiter's in the queue, a writer's among the
 * waiting writers). The failure it reports stays the one that ended it. */
static void leave_queue(dlock_lock *lock, int rc)
{
    dlock__lane *lane = &lock->claim.client->main;
    char why[DLOCK__ERRMSG_MAX];
    if (!lock->claim.kind->leaves || !lock->claim.kind->leaves(&lock->claim, rc))
        return;
    memcpy(why, lane->errmsg, sizeof(why));
    dlock__attempt_release(&lock->claim, lane, true);
    memcpy(lane->errmsg, why, sizeof(why));
}

/* An acquire that found NAME of another kind: the name's status says
 * which (with a semaphore's permits in force), and that is the message,
 * with the kind asked for. A name that holds no lock at all (a hash...)
 * is said in status's words; a name whose kind changed since (its NAME of
 * the type asked for) keeps the acquire's own message. */
static void explain_kind(dlock_lock *lock, int rc)
{
    dlock__claim *cl = &lock->claim;
    dlock_client *c = cl->client;
    char detail[DLOCK__ERRMSG_MAX], found[64];
    const dlock__kind *kind;
    dlock_status *st = NULL;
    int status_rc;
    if (rc != DLOCK_EWRONGTYPE)
        return;
    snprintf(detail, sizeof(detail), "%s", c->main.errmsg);
    status_rc = dlock_status_query(&st, c, cl->keys.lock);
    if (status_rc == DLOCK_EWRONGTYPE) {
        /* the server's "WRONGTYPE NAME holds a hash, not a lock" */
        const char *said = strstr(c->main.errmsg, "WRONGTYPE ");
        if (said) {
            snprintf(detail, sizeof(detail), "%.*s", (int)strcspn(said, ";"), said);
            dlock__set_error(&c->main, "%s", detail);
        }
        return;
    }
    kind = status_rc == 0 && dlock_status_held(st) ? dlock__kinds_found(st, found, sizeof(found))
                                                   : NULL;
    if (!kind || strcmp(kind->type, cl->kind->type) == 0) {
        dlock__set_error(&c->main, "%s", detail);
    } else {
        char asked[64];
        dlock__kinds_describe(cl, asked, sizeof(asked));
        dlock__set_error(&c->main, "%s %s, not %s", cl->keys.lock, found, asked);
    }
    dlock_status_free(st);
}

/* A holder's connections ask once what they talk to: a cluster's node
 * that granted without a redirect taught the client no other node, and
 * its death then cut renewals and the release off through a failover
 * (route.h). Only those that answered the acquire, each within a node's
 * share of the TTL: a slow or paused server (a Redlock minority) must not
 * hold the grant up, nor eat its validity. */
static void learn_topology(dlock_client *c, const char *key, int64_t ttl_ms)
{
    for (size_t i = 0; i < c->n; i++) {
        dlock__conn *conn = &c->main.conns[i];
        if (conn->state == DLOCK__CONN_READY && conn->answered && !conn->stale_owed)
            dlock__route_learn(conn, key, dlock__node_deadline(c, ttl_ms, dlock__now_ns()));
    }
}

static int start_renewal(dlock_lock *lock, const dlock_acquire_options *o)
{
    struct dlock__renew_params p = {o->max_hold_ms, o->on_lost, o->on_lost_arg, lock};
    dlock__lane *lane = &lock->claim.client->main;
    int rc;
    lock->auto_renew = true;
    rc = dlock__renew_add(&lock->renewal, &lock->claim, &p);
    if (rc < 0) {
        lock->auto_renew = false;
        dlock__attempt_release(&lock->claim, lane, true);
        dlock__set_error(lane, "cannot start the renewal thread");
    }
    return rc;
}

int dlock_lock_acquire(dlock_lock **out, dlock_client *c, const char *name, int64_t ttl_ms,
                       const dlock_acquire_options *opts)
{
    static const dlock_acquire_options defaults = DLOCK_ACQUIRE_OPTIONS_INIT;
    const dlock_acquire_options *o = opts ? opts : &defaults;
    dlock_lock *lock = NULL;
    int64_t start = dlock__now_ns();
    int rc = dlock__call_start(c, out);
    if (rc == 0)
        rc = check_lockable(c);
    if (rc == 0)
        rc = dlock__check_ttl(&c->main, ttl_ms);
    if (rc == 0)
        rc = check_acquire_options(&c->main, o, ttl_ms);
    if (rc == 0)
        rc = new_lock(&lock, c, name, kind_of(o));
    if (rc != 0)
        return rc;
    lock->claim.metrics = dlock__metrics_of(&c->metrics, name);
    if (lock->claim.kind->setup)
        rc = lock->claim.kind->setup(&lock->claim, &c->main, o);
    if (rc == 0 && (rc = dlock__token_new(c->tokens, lock->claim.token)) < 0)
        dlock__set_error(&c->main, "getrandom() gave no random bytes for the owner token");
    if (rc == 0 && o->wait_ms != 0)
        rc = dlock__wait_acquire(&lock->claim, ttl_ms, o);
    else if (rc == 0)
        rc = dlock__attempt_acquire(&lock->claim, &c->main, ttl_ms);
    explain_kind(lock, rc);
    if (rc < 0 && rc != DLOCK_EINVAL)
        leave_queue(lock, rc);
    c->main.wait_end_ns = 0; /* the wait's (wait.c), which the leave keeps to */
    if (rc == 0) { /* before the renewal thread may find it lost */
        atomic_store(&lock->claim.held_since_ns, dlock__now_ns());
        learn_topology(c, lock->claim.keys.lock, ttl_ms);
    }
    if (rc == 0 && o->auto_renew)
        rc = start_renewal(lock, o);
    dlock__stats_acquired(&c->stats, rc, lock->claim.waited, dlock__now_ns() - start);
    dlock__metrics_acquired(lock->claim.metrics, rc, lock->claim.waited, dlock__now_ns() - start);
    if (rc < 0) {
        dlock_lock_free(lock);
        return rc;
    }
    c->main.errmsg[0] = '\0'; /* a wait's busy or failed tries said why */
    *out = lock;
    return 0;
}

int dlock_lock_adopt(dlock_lock **out, dlock_client *c, const char *name, const char *token)
{
    dlock_lock *lock;
    int rc;
    rc = dlock__call_start(c, out);
    if (rc == 0)
        rc = check_lockable(c);
    if (rc < 0)
        return rc;
    if (!dlock__token_valid(token)) {
        dlock__set_error(&c->main, "a token is %d lower-case hex characters", DLOCK_TOKEN_LEN);
        return DLOCK_EINVAL;
    }
    rc = new_lock(&lock, c, name, &dlock__kind_mutex);
    if (rc < 0)
        return rc;
    memcpy(lock->claim.token, token, DLOCK_TOKEN_LEN + 1);
    lock->adopted = true;
    *out = lock;
    return 0;
}

/* An adopted handle tries as a mutex; the mutex's answer may say the
 * token is another kind's (a name that is a sorted set is a semaphore's; a
 * name whose string is not our token may be held shared), and the handle
 * tries once as that kind (a refusal then costs one more request). Returns
 * true when the call is worth repeating as such. */
static bool adopt_kind(dlock_lock *lock, int rc)
{
    dlock__claim *cl = &lock->claim;
    const dlock__kind *other = lock->adopted ? dlock__kinds_adopted_on(rc) : NULL;
    if (!other)
        return false;
    lock->adopted = false;
    return dlock__claim_set_kind(cl, &cl->client->main, other) == 0;
}

static void stop_renewal(dlock_lock *lock)
{
    dlock__renew_remove(lock->renewal);
    lock->renewal = NULL;
}

static int release(dlock_lock *lock)
{
    dlock__lane *lane = &lock->claim.client->main;
    int rc;
    lane->errmsg[0] = '\0';
    stop_renewal(lock);
    if (lock->claim.lost) {
        dlock__set_error(lane, "the lock was lost before this release");
        return DLOCK_ELOST;
    }
    if (lock->auto_renew && lock->claim.valid_until_ns <= dlock__now_ns()) {
        /* The validity ran out (a pause, say) before the renewal thread
         * noticed: lost all the same. What may remain of our key goes. */
        lock->claim.lost = true;
        dlock__attempt_release(&lock->claim, lane, true);
        dlock__set_error(lane, "the lock was lost before this release: its validity ran out "
                               "before a renewal");
        return DLOCK_ELOST;
    }
    rc = dlock__attempt_release(&lock->claim, lane, true);
    if (adopt_kind(lock, rc))
        rc = dlock__attempt_release(&lock->claim, lane, true);
    return rc;
}

int dlock_lock_release(dlock_lock *lock)
{
    int rc;
    if (!lock)
        return DLOCK_EINVAL;
    rc = release(lock);
    /* The hold ends here, whatever came of the call (a loss the renewal
     * thread found has ended it already). */
    dlock__metrics_hold_ended(lock->claim.metrics, &lock->claim.held_since_ns);
    return rc;
}

int dlock_lock_extend(dlock_lock *lock, int64_t ttl_ms)
{
    dlock__claim *cl;
    dlock__lane *lane;
    int rc;
    if (!lock)
        return DLOCK_EINVAL;
    cl = &lock->claim;
    lane = &cl->client->main;
    lane->errmsg[0] = '\0';
    if (lock->auto_renew) {
        dlock__set_error(lane, "the lock is renewed automatically");
        return DLOCK_EINVAL;
    }
    rc = dlock__check_ttl(lane, ttl_ms);
    if (rc == 0)
        dlock__attempt_extend(&cl, 1, lane, &ttl_ms, &rc);
    if (adopt_kind(lock, rc))
        dlock__attempt_extend(&cl, 1, lane, &ttl_ms, &rc);
    if (rc == DLOCK_ENOTOWNER && cl->repaired)
        dlock__attempt_release(cl, lane, false); /* take back what the repair put there */
    return rc;
}

int64_t dlock_lock_validity_ms(const dlock_lock *lock)
{
    int64_t until, left;
    if (!lock || lock->claim.lost)
        return 0;
    until = lock->claim.valid_until_ns;
    left = until - dlock__now_ns();
    return until && left > 0 ? left / DLOCK__NS_PER_MS : 0;
}

int dlock_lock_held(const dlock_lock *lock)
{
    return dlock_lock_validity_ms(lock) > 0;
}

unsigned dlock_lock_attempts(const dlock_lock *lock)
{
    return lock ? lock->claim.attempts : 0;
}

const char *dlock_lock_token(const dlock_lock *lock)
{
    return lock ? lock->claim.token : "";
}

const char *dlock_lock_name(const dlock_lock *lock)
{
    return lock ? lock->claim.keys.lock : "";
}

uint64_t dlock_lock_fence(const dlock_lock *lock)
{
    return lock ? lock->claim.fence : 0;
}

unsigned dlock_lock_slot(const dlock_lock *lock)
{
    return lock ? lock->claim.slot : 0;
}

void dlock_lock_free(dlock_lock *lock)
{
    if (!lock)
        return;
    stop_renewal(lock);
    dlock__claim_clear(&lock->claim);
    free(lock);
}
