/* Acquire, release, extend: one path for one node and for a quorum. */
#include "lock.h"

#include "clock.h"
#include "renew.h"
#include "scripts.h"
#include "token.h"
#include "wait.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OWNER_RECORD_MAX (DLOCK__HOST_MAX * 6 + 128)

/* The end of the validity of a lock taken or extended for `ttl_ms` by a
 * call that started at `start_ns`: ttl - drift, the drift being ttl x factor
 * + 2 ms (the Redis distlock page). */
static int64_t validity_end(int64_t start_ns, int64_t ttl_ms, double drift_factor)
{
    int64_t drift = (int64_t)((double)ttl_ms * drift_factor * DLOCK__NS_PER_MS) +
                    2 * DLOCK__NS_PER_MS;
    return start_ns + ttl_ms * DLOCK__NS_PER_MS - drift;
}

static int check_ttl(dlock__lane *lane, int64_t ttl_ms)
{
    if (ttl_ms >= 1 && ttl_ms <= DLOCK_TTL_MAX_MS)
        return 0;
    dlock__set_error(lane, "TTL must be from 1 to %lld ms, not %" PRId64, DLOCK_TTL_MAX_MS, ttl_ms);
    return DLOCK_EINVAL;
}

enum { VOTE_NO = 0, VOTE_YES = 1, VOTE_REPAIRED = 2, VOTE_UNKNOWN = 3 };

/* What an acquire reply says besides its vote. */
struct grant {
    uint64_t fence;
    int64_t pttl;      /* refused: the holder's key expires in that many ms */
};

/* A node's answer: VOTE_YES (granted, or 1 from release/extend), VOTE_NO
 * (held by another, or 0), VOTE_REPAIRED (extend put our key back on a node
 * that had lost it: not a vote), VOTE_UNKNOWN (not waited for) or its error
 * code. `g` (may be NULL) is filled from acquire replies. */
static int vote_of(const dlock__node_result *r, bool acquire, struct grant *g)
{
    const dlock__reply *a = r->reply;
    struct grant ignored;
    if (!g)
        g = &ignored;
    if (r->status == DLOCK__PENDING)
        return VOTE_UNKNOWN;
    if (r->status != DLOCK__REPLIED)
        return r->status;
    if (a->type == DLOCK__REPLY_ERROR)
        return dlock__server_error_code(a);
    if (!acquire)
        return a->type == DLOCK__REPLY_INTEGER && a->integer >= VOTE_NO &&
                       a->integer <= VOTE_REPAIRED
                   ? (int)a->integer
                   : DLOCK_EPROTO;
    if (a->type != DLOCK__REPLY_ARRAY || a->elements < 2 ||
        a->element[0]->type != DLOCK__REPLY_INTEGER)
        return DLOCK_EPROTO;
    if (a->element[0]->integer == 0 && a->elements == 2 &&
        a->element[1]->type == DLOCK__REPLY_INTEGER) {
        g->pttl = a->element[1]->integer;
        return VOTE_NO;
    }
    if (a->element[0]->integer == 1 && a->elements == 2 &&
        a->element[1]->type == DLOCK__REPLY_STRING) {
        char *end;
        g->fence = strtoull(a->element[1]->str, &end, 10);
        return *end == '\0' && g->fence > 0 ? VOTE_YES : DLOCK_EPROTO;
    }
    return DLOCK_EPROTO;
}

static size_t count(dlock__tally *t, const dlock__node_result *results, size_t n, bool acquire)
{
    size_t failed = 0;
    t->confirmed = t->refused = t->repaired = 0;
    t->fence = 0;
    for (size_t i = 0; i < n; i++) {
        struct grant g = {0, 0};
        int vote = vote_of(&results[i], acquire, &g);
        if (vote == VOTE_YES) {
            t->confirmed++;
            t->fence = g.fence > t->fence ? g.fence : t->fence;
        } else if (vote == VOTE_NO) {
            t->refused++;
            t->pttl = t->refused == 1 || g.pttl < t->pttl ? g.pttl : t->pttl;
        } else if (vote == VOTE_REPAIRED) {
            t->repaired++;
        } else if (vote < 0) {
            failed++;
        }
    }
    return failed;
}

int dlock__acquire_judge(dlock__tally *t, const dlock__node_result *results, size_t n,
                         int64_t ttl_ms, double drift_factor, int64_t start_ns, int64_t now_ns,
                         int64_t *valid_until_ns)
{
    count(t, results, n, true);
    *valid_until_ns = validity_end(start_ns, ttl_ms, drift_factor);
    return t->confirmed >= t->quorum && *valid_until_ns > now_ns ? 0 : DLOCK_EBUSY;
}

/* Granted, or not: then wait on until the replies tell busy (a majority
 * answered, with refusals among them) from unreachable (no majority can
 * answer), within the nodes' deadline. */
static bool acquire_decided(const dlock__node_result *results, size_t n, void *ctx)
{
    dlock__tally *t = ctx;
    size_t failed = count(t, results, n, true);
    size_t pending = n - t->confirmed - t->refused - failed;
    if (t->confirmed >= t->quorum)
        return true;
    if (t->confirmed + pending >= t->quorum)
        return false; /* may still be granted */
    return t->confirmed + t->refused >= t->quorum || n - failed < t->quorum;
}

/* One node: its failure. Several: DLOCK_ENOQUORUM, unless every failing
 * node reports the same failure that is not about reaching it (a wrong
 * password everywhere is DLOCK_EAUTH); which node said what is in the
 * message. */
static int common_failure(const dlock__node_result *results, size_t n, bool acquire)
{
    int code = 0;
    for (size_t i = 0; i < n; i++) {
        int vote = vote_of(&results[i], acquire, NULL);
        if (vote == VOTE_YES || vote == VOTE_NO || vote == VOTE_REPAIRED)
            continue;
        if (vote == VOTE_UNKNOWN)
            vote = DLOCK_ETIMEDOUT;
        if (code != 0 && code != vote)
            return DLOCK_ENOQUORUM;
        code = vote;
    }
    if (n > 1 && (code == DLOCK_ECONN || code == DLOCK_ETIMEDOUT))
        return DLOCK_ENOQUORUM;
    return code ? code : DLOCK_ENOQUORUM;
}

/* Could this node hold our key after the attempt? Yes if it granted, or if
 * the command went out and no verdict came back (it may have run). */
static bool may_hold_our_key(const dlock__node_result *r)
{
    int vote = vote_of(r, true, NULL);
    if (vote == VOTE_YES)
        return true;
    return r->sent && r->status != DLOCK__REPLIED;
}

static void json_escape(char *out, size_t out_len, const char *s)
{
    size_t j = 0;
    for (; *s && j + 7 < out_len; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            j += (size_t)snprintf(out + j, out_len - j, "\\%c", ch);
        else if (ch < 0x20)
            j += (size_t)snprintf(out + j, out_len - j, "\\u%04x", ch);
        else
            out[j++] = (char)ch;
    }
    out[j] = '\0';
}

static void owner_record(const dlock_lock *lock, char *out, size_t out_len)
{
    char host[DLOCK__HOST_MAX * 6];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    json_escape(host, sizeof(host), lock->client->host);
    snprintf(out, out_len, "{\"host\":\"%s\",\"pid\":%ld,\"since\":%lld,\"token\":\"%s\"}", host,
             (long)dlock__token_pool_pid(lock->client->tokens), (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000, lock->token);
}

/* Sends a cleanup release (no PUBLISH: it must not wake waiters) to every
 * node after a failed attempt whose SET may have landed somewhere. */
static void clean_up_attempt(dlock_lock *lock, dlock__lane *lane,
                             const dlock__node_result *results, int64_t ttl_ms)
{
    dlock_client *c = lock->client;
    dlock__node_result cleanup[DLOCK__NODES_MAX];
    const char *keys[] = {lock->keys.lock, lock->keys.owner};
    const char *args[] = {lock->token, lock->keys.channel, "0"};
    dlock__call call;
    bool needed = false;

    for (size_t i = 0; i < c->n; i++)
        needed |= may_hold_our_key(&results[i]);
    if (!needed || dlock__script_call(&call, DLOCK__SCRIPT_RELEASE, 2, keys, 3, args) < 0)
        return;
    dlock__fanout(lane->conns, c->n, &call, dlock__node_deadline(c, ttl_ms, dlock__now_ns()),
                  cleanup, NULL, NULL);
    dlock__results_clear(cleanup, c->n);
    dlock__script_call_free(&call);
}

static int acquire_failed(dlock_lock *lock, dlock__lane *lane, const dlock__tally *t,
                          const dlock__node_result *results, int64_t ttl_ms)
{
    dlock_client *c = lock->client;
    int rc;
    if (t->confirmed >= t->quorum) {
        rc = DLOCK_ETIMEDOUT;
        dlock__set_error(lane, "acquiring took longer than the TTL of %" PRId64 " ms", ttl_ms);
    } else if (t->confirmed + t->refused >= t->quorum) {
        rc = DLOCK_EBUSY;
        lock->last_pttl_ms = t->pttl;
        dlock__set_error(lane, "lock is held by another owner (expires in %" PRId64 " ms)",
                         t->pttl);
    } else {
        rc = common_failure(results, c->n, true);
        dlock__set_error(lane, "cannot acquire the lock: %s", dlock_strerror(rc));
    }
    dlock__append_node_errors(lane, lane->conns, results, c->n);
    clean_up_attempt(lock, lane, results, ttl_ms);
    return rc;
}

static bool majority_confirmed(const dlock__node_result *results, size_t n, void *ctx)
{
    dlock__tally *t = ctx;
    count(t, results, n, false);
    return t->confirmed >= t->quorum;
}



/* Redlock: the token is the largest fence of the quorum. Any later quorum
 * must go above it: it shares a node with every majority, which must still
 * hold the token or, having restarted empty since, start from its clock above
 * it. So it is written back (never lowering a stored value) to every node,
 * and must reach a majority before `valid_until`. */
static int record_fence(dlock_lock *lock, dlock__lane *lane, int64_t ttl_ms, uint64_t fence,
                        int64_t valid_until)
{
    dlock_client *c = lock->client;
    dlock__node_result results[DLOCK__NODES_MAX];
    char value[24], fence_ttl[24];
    const char *keys[] = {lock->keys.fence};
    const char *args[] = {value, fence_ttl};
    dlock__tally t = {.quorum = dlock__quorum(c)};
    int64_t deadline = dlock__node_deadline(c, ttl_ms, dlock__now_ns());
    dlock__call call;
    int rc;

    snprintf(value, sizeof(value), "%" PRIu64, fence);
    snprintf(fence_ttl, sizeof(fence_ttl), "%" PRId64, c->fence_ttl_ms);
    rc = dlock__script_call(&call, DLOCK__SCRIPT_FENCE_MAX, 1, keys, 2, args);
    if (rc < 0)
        return rc;
    dlock__fanout(lane->conns, c->n, &call, deadline < valid_until ? deadline : valid_until,
                  results, majority_confirmed, &t);
    count(&t, results, c->n, false);
    if (t.confirmed < t.quorum) {
        rc = DLOCK_ENOQUORUM;
        dlock__set_error(lane, "the fencing token reached no majority in time");
        dlock__append_node_errors(lane, lane->conns, results, c->n);
    }
    dlock__results_clear(results, c->n);
    dlock__script_call_free(&call);
    return rc;
}

int dlock__lock_try(dlock_lock *lock, dlock__lane *lane, int64_t ttl_ms)
{
    dlock_client *c = lock->client;
    dlock__node_result results[DLOCK__NODES_MAX];
    char ttl[24], fence_ttl[24], owner[OWNER_RECORD_MAX];
    const char *keys[] = {lock->keys.lock, lock->keys.fence, lock->keys.owner};
    const char *args[] = {lock->token, ttl, fence_ttl, owner};
    dlock__tally t = {.quorum = dlock__quorum(c)};
    int64_t start, valid_until;
    dlock__call call;
    int rc;

    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    snprintf(fence_ttl, sizeof(fence_ttl), "%" PRId64, c->fence_ttl_ms);
    owner_record(lock, owner, sizeof(owner));
    lock->attempts++;
    rc = dlock__script_call(&call, DLOCK__SCRIPT_ACQUIRE, 3, keys, 4, args);
    if (rc < 0) {
        dlock__set_error(lane, "cannot encode the acquire command");
        return rc;
    }
    start = dlock__now_ns();
    dlock__fanout(lane->conns, c->n, &call, dlock__node_deadline(c, ttl_ms, start), results,
                  acquire_decided, &t);
    rc = dlock__acquire_judge(&t, results, c->n, ttl_ms, c->drift_factor, start, dlock__now_ns(),
                              &valid_until);
    if (dlock__lane_check_distinct(c, lane) < 0) {
        rc = DLOCK_EINVAL;
        clean_up_attempt(lock, lane, results, ttl_ms);
    } else if (rc == 0 && c->n > 1) {
        rc = record_fence(lock, lane, ttl_ms, t.fence, valid_until);
        if (rc == 0 && valid_until <= dlock__now_ns()) {
            rc = DLOCK_ETIMEDOUT;
            dlock__set_error(lane, "acquiring took longer than the TTL of %" PRId64 " ms", ttl_ms);
        }
        if (rc < 0)
            clean_up_attempt(lock, lane, results, ttl_ms);
    } else if (rc < 0) {
        rc = acquire_failed(lock, lane, &t, results, ttl_ms);
    }
    if (rc == 0) {
        lock->fence = t.fence;
        lock->ttl_ms = ttl_ms;
        lock->acquired_ns = start;
        lock->valid_until_ns = valid_until;
    }
    dlock__results_clear(results, c->n);
    dlock__script_call_free(&call);
    return rc;
}

static int new_lock(dlock_lock **out, dlock_client *c, const char *name)
{
    char why[256];
    dlock_lock *lock = calloc(1, sizeof(*lock));
    int rc;
    if (!lock) {
        dlock__set_error(&c->main, "out of memory");
        return DLOCK_ENOMEM;
    }
    lock->client = c;
    lock->hold_until_ns = INT64_MAX;
    rc = dlock__keys_make(&lock->keys, name, why, sizeof(why));
    if (rc < 0) {
        dlock__set_error(&c->main, "%s", why);
        free(lock);
        return rc;
    }
    *out = lock;
    return 0;
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
    else if (o->wait_ms < 0 && o->wait_ms != DLOCK_WAIT_FOREVER)
        why = "wait_ms must be 0, positive or DLOCK_WAIT_FOREVER";
    else if (o->backoff_max_ms < 0 || o->max_hold_ms < 0)
        why = "backoff_max_ms and max_hold_ms must not be negative";
    else if (!o->auto_renew && (o->max_hold_ms || o->on_lost))
        why = "max_hold_ms and on_lost need auto_renew";
    else if (o->max_hold_ms && o->max_hold_ms < ttl_ms)
        why = "max_hold_ms must not be shorter than the TTL";
    if (!why)
        return 0;
    dlock__set_error(lane, "%s", why);
    return DLOCK_EINVAL;
}

static int start_renewal(dlock_lock *lock, int64_t ttl_ms, const dlock_acquire_options *o)
{
    int rc;
    lock->auto_renew = true;
    lock->renew_ttl_ms = ttl_ms;
    lock->on_lost = o->on_lost;
    lock->on_lost_arg = o->on_lost_arg;
    if (o->max_hold_ms > 0)
        lock->hold_until_ns = lock->acquired_ns + o->max_hold_ms * DLOCK__NS_PER_MS;
    lock->next_renewal_ns = lock->acquired_ns + ttl_ms * DLOCK__NS_PER_MS / 3;
    rc = dlock__renew_add(lock);
    if (rc < 0) {
        lock->auto_renew = false;
        dlock__lock_release(lock, &lock->client->main, true);
        dlock__set_error(&lock->client->main, "cannot start the renewal thread");
    }
    return rc;
}

int dlock_lock_acquire(dlock_lock **out, dlock_client *c, const char *name, int64_t ttl_ms,
                       const dlock_acquire_options *opts)
{
    static const dlock_acquire_options defaults = DLOCK_ACQUIRE_OPTIONS_INIT;
    const dlock_acquire_options *o = opts ? opts : &defaults;
    dlock_lock *lock = NULL;
    int rc = dlock__call_start(c, out);
    if (rc == 0)
        rc = check_ttl(&c->main, ttl_ms);
    if (rc == 0)
        rc = check_acquire_options(&c->main, o, ttl_ms);
    if (rc == 0)
        rc = new_lock(&lock, c, name);
    if (rc != 0)
        return rc;
    rc = dlock__token_new(c->tokens, lock->token);
    if (rc < 0)
        dlock__set_error(&c->main, "getrandom() gave no random bytes for the owner token");
    else if (o->wait_ms != 0)
        rc = dlock__wait_acquire(lock, ttl_ms, o);
    else
        rc = dlock__lock_try(lock, &c->main, ttl_ms);
    if (rc == 0 && o->auto_renew)
        rc = start_renewal(lock, ttl_ms, o);
    if (rc < 0) {
        dlock_lock_free(lock);
        return rc;
    }
    *out = lock;
    return 0;
}

int dlock_lock_adopt(dlock_lock **out, dlock_client *c, const char *name, const char *token)
{
    dlock_lock *lock;
    int rc;
    rc = dlock__call_start(c, out);
    if (rc < 0)
        return rc;
    if (!dlock__token_valid(token)) {
        dlock__set_error(&c->main, "a token is %d lower-case hex characters", DLOCK_TOKEN_LEN);
        return DLOCK_EINVAL;
    }
    rc = new_lock(&lock, c, name);
    if (rc < 0)
        return rc;
    memcpy(lock->token, token, DLOCK_TOKEN_LEN + 1);
    *out = lock;
    return 0;
}

/* Tallies the 1s and 0s of a release or extend. Returns 0 (a majority
 * confirmed), DLOCK_ENOTOWNER (enough nodes gave a verdict, and not enough
 * were ours) or the nodes' failure. */
static int verdict(const dlock_client *c, dlock__lane *lane, const dlock__node_result *results)
{
    dlock__tally t = {.quorum = dlock__quorum(c)};
    int rc;
    count(&t, results, c->n, false);
    if (t.confirmed >= t.quorum)
        return 0;
    if (t.confirmed + t.refused + t.repaired >= t.quorum) {
        dlock__set_error(lane, "the lock is not ours: another owner holds it, or it expired");
        return DLOCK_ENOTOWNER;
    }
    rc = common_failure(results, c->n, false);
    dlock__set_error(lane, "%s", dlock_strerror(rc));
    dlock__append_node_errors(lane, lane->conns, results, c->n);
    return rc;
}

int dlock__lock_release(dlock_lock *lock, dlock__lane *lane, bool publish)
{
    dlock_client *c = lock->client;
    dlock__node_result results[DLOCK__NODES_MAX];
    const char *keys[] = {lock->keys.lock, lock->keys.owner};
    const char *args[] = {lock->token, lock->keys.channel, publish ? "1" : "0"};
    dlock__call call;
    int rc = dlock__script_call(&call, DLOCK__SCRIPT_RELEASE, 2, keys, 3, args);
    if (rc < 0) {
        dlock__set_error(lane, "cannot encode the command");
        return rc;
    }
    /* Every node is waited for: a release should reach them all. No
     * validity is at stake: it gets the whole command timeout (TTL 0), since
     * one that gives up early leaves the key until it expires. */
    dlock__fanout(lane->conns, c->n, &call, dlock__node_deadline(c, 0, dlock__now_ns()), results,
                  NULL, NULL);
    rc = verdict(c, lane, results);
    if (rc == 0 || rc == DLOCK_ENOTOWNER)
        lock->valid_until_ns = 0;
    dlock__results_clear(results, c->n);
    dlock__script_call_free(&call);
    return rc;
}

/* One lock's part of a batch of extends: the strings its call borrows. */
struct extend_job {
    char ttl[24], fence[24], fence_ttl[24];
    const char *keys[3];
    const char *args[5];
    bool repair;
};

static int encode_extend(dlock__call *call, struct extend_job *job, dlock_lock *lock,
                         int64_t ttl_ms, int64_t start)
{
    dlock_client *c = lock->client;
    /* Redlock only, and only while the lock is ours for sure: a node that
     * restarted empty gets our key back (but is no vote). With one node, a
     * missing key means the lock is lost, never silently taken again. */
    job->repair = c->n > 1 && lock->valid_until_ns > start;
    snprintf(job->ttl, sizeof(job->ttl), "%" PRId64, ttl_ms);
    snprintf(job->fence, sizeof(job->fence), "%" PRIu64, lock->fence);
    snprintf(job->fence_ttl, sizeof(job->fence_ttl), "%" PRId64, c->fence_ttl_ms);
    job->keys[0] = lock->keys.lock;
    job->keys[1] = lock->keys.owner;
    job->keys[2] = lock->keys.fence;
    job->args[0] = lock->token;
    job->args[1] = job->ttl;
    job->args[2] = job->repair ? "1" : "0";
    job->args[3] = job->fence;
    job->args[4] = job->fence_ttl;
    return dlock__script_call(call, DLOCK__SCRIPT_EXTEND, 3, job->keys, 5, job->args);
}

static int finish_extend(dlock_lock *lock, dlock__lane *lane, const struct extend_job *job,
                         const dlock__node_result *results, int64_t ttl_ms, int64_t start)
{
    dlock_client *c = lock->client;
    int64_t valid_until;
    int rc = verdict(c, lane, results);
    if (rc == DLOCK_ENOTOWNER && job->repair)
        dlock__lock_release(lock, lane, false); /* take back what the repair put there */
    if (rc == DLOCK_ENOTOWNER)
        lock->valid_until_ns = 0;
    if (rc < 0)
        return rc;
    valid_until = validity_end(start, ttl_ms, c->drift_factor);
    if (valid_until <= dlock__now_ns()) {
        dlock__set_error(lane, "extending took longer than the TTL of %" PRId64 " ms", ttl_ms);
        return DLOCK_ETIMEDOUT;
    }
    lock->ttl_ms = ttl_ms;
    lock->valid_until_ns = valid_until;
    return 0;
}

void dlock__locks_extend(dlock_lock *const *locks, size_t k, dlock__lane *lane,
                         const int64_t *ttls, int *rcs)
{
    dlock_client *c = locks[0]->client;
    struct extend_job *jobs = calloc(k, sizeof(*jobs));
    dlock__call *calls = calloc(k, sizeof(*calls));
    dlock__node_result *results = calloc(k * c->n, sizeof(*results));
    int64_t start = dlock__now_ns(), shortest = ttls[0], deadline;
    size_t encoded = 0;
    int rc = jobs && calls && results ? 0 : DLOCK_ENOMEM;

    for (; rc == 0 && encoded < k; encoded++) {
        rc = encode_extend(&calls[encoded], &jobs[encoded], locks[encoded], ttls[encoded], start);
        shortest = ttls[encoded] < shortest ? ttls[encoded] : shortest;
    }
    /* Never past a validity still running: its end is when the owner must
     * hear of a loss. */
    deadline = dlock__node_deadline(c, shortest, start);
    for (size_t j = 0; j < k; j++) {
        int64_t until = locks[j]->valid_until_ns;
        deadline = until > start && until < deadline ? until : deadline;
    }
    if (rc == 0) {
        dlock__fanout_batch(lane->conns, c->n, calls, k, deadline, results, NULL, NULL);
        for (size_t j = 0; j < k; j++)
            rcs[j] = finish_extend(locks[j], lane, &jobs[j], &results[j * c->n], ttls[j], start);
        dlock__results_clear(results, k * c->n);
    } else {
        dlock__set_error(lane, "cannot encode the command");
        for (size_t j = 0; j < k; j++)
            rcs[j] = rc;
    }
    for (size_t j = 0; calls && j < encoded; j++)
        dlock__script_call_free(&calls[j]);
    free(results);
    free(calls);
    free(jobs);
}

int dlock__lock_extend(dlock_lock *lock, dlock__lane *lane, int64_t ttl_ms)
{
    int rc;
    dlock__locks_extend(&lock, 1, lane, &ttl_ms, &rc);
    return rc;
}

int dlock_lock_release(dlock_lock *lock)
{
    if (!lock)
        return DLOCK_EINVAL;
    lock->client->main.errmsg[0] = '\0';
    dlock__renew_remove(lock);
    if (lock->lost) {
        dlock__set_error(&lock->client->main, "the lock was lost before this release");
        return DLOCK_ELOST;
    }
    if (lock->auto_renew && lock->valid_until_ns <= dlock__now_ns()) {
        /* The validity ran out (a pause, say) before the renewal thread
         * noticed: lost all the same. What may remain of our key goes. */
        lock->lost = true;
        dlock__lock_release(lock, &lock->client->main, true);
        dlock__set_error(&lock->client->main, "the lock was lost before this release: its "
                                              "validity ran out before a renewal");
        return DLOCK_ELOST;
    }
    return dlock__lock_release(lock, &lock->client->main, true);
}

int dlock_lock_extend(dlock_lock *lock, int64_t ttl_ms)
{
    dlock__lane *lane;
    int rc;
    if (!lock)
        return DLOCK_EINVAL;
    lane = &lock->client->main;
    lane->errmsg[0] = '\0';
    if (lock->auto_renew) {
        dlock__set_error(lane, "the lock is renewed automatically");
        return DLOCK_EINVAL;
    }
    rc = check_ttl(lane, ttl_ms);
    return rc < 0 ? rc : dlock__lock_extend(lock, lane, ttl_ms);
}

int64_t dlock_lock_validity_ms(const dlock_lock *lock)
{
    int64_t until, left;
    if (!lock || lock->lost)
        return 0;
    until = lock->valid_until_ns;
    left = until - dlock__now_ns();
    return until && left > 0 ? left / DLOCK__NS_PER_MS : 0;
}

int dlock_lock_held(const dlock_lock *lock)
{
    return dlock_lock_validity_ms(lock) > 0;
}

unsigned dlock_lock_attempts(const dlock_lock *lock)
{
    return lock ? lock->attempts : 0;
}

const char *dlock_lock_token(const dlock_lock *lock)
{
    return lock ? lock->token : "";
}

const char *dlock_lock_name(const dlock_lock *lock)
{
    return lock ? lock->keys.lock : "";
}

uint64_t dlock_lock_fence(const dlock_lock *lock)
{
    return lock ? lock->fence : 0;
}

void dlock_lock_free(dlock_lock *lock)
{
    if (!lock)
        return;
    dlock__renew_remove(lock);
    dlock__keys_clear(&lock->keys);
    dlock__wipe(lock->token, sizeof(lock->token));
    free(lock);
}
