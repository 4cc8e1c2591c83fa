/* The attempt layer. See attempt.h. One code path for one node and for a
 * Redlock of N: a single node is a majority of one. */
#include "attempt.h"

#include "clock.h"
#include "durable.h"
#include "error_text.h"
#include "owner.h"
#include "scripts.h"
#include "slot.h"
#include "token.h"
#include "wipe.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum vote { VOTE_PENDING, VOTE_YES, VOTE_NO, VOTE_REPAIRED, VOTE_FAILED };

/* What one reply says. `kind` GRANT: an acquire's {1, fence} or {0, pttl};
 * COUNT: a release's, extend's or write-back's 1, 0 or 2 (repaired). */
enum reply_kind { GRANT, COUNT };

struct answer {
    enum vote vote;
    int error;      /* with VOTE_FAILED: the code */
    uint64_t fence; /* GRANT, YES */
    unsigned slot;  /* GRANT, YES: a kind with slots names it, else 0 */
    int64_t pttl;   /* GRANT, NO */
    bool no_write_back; /* GRANT, YES: {1, fence, 0, 0}, a Redlock mutex's: its proposal, no
                           epoch key here */
    bool writer;    /* GRANT, NO: {0, pttl, 1}, we wait among the writers */
    bool shared;    /* GRANT, NO: {0, pttl, 2}, held shared */
    int64_t lease_end_ms; /* GRANT, NO: {0, pttl, 0, end}, a queued waiter's lease */
};

/* A grant's slot, when the kind's acquire names one: {1, fence, slot}. */
static bool read_slot(const dlock__reply *a, unsigned *slot)
{
    const dlock__reply *s;
    if (a->elements == 2)
        return true;
    s = a->element[2];
    if (s->type != DLOCK__REPLY_INTEGER || s->integer < 0 || s->integer > INT_MAX)
        return false;
    *slot = (unsigned)s->integer;
    return true;
}

static struct answer read_grant(const dlock__reply *a)
{
    struct answer x = {VOTE_FAILED, DLOCK_EPROTO, 0, 0, 0, false, false, false, 0};
    const dlock__reply *first, *second, *third;
    char *end;
    if (a->type != DLOCK__REPLY_ARRAY || a->elements < 2 || a->elements > 4)
        return x;
    first = a->element[0];
    second = a->element[1];
    if (first->type != DLOCK__REPLY_INTEGER)
        return x;
    if (first->integer == 0 && second->type == DLOCK__REPLY_INTEGER) {
        x.vote = VOTE_NO;
        x.pttl = second->integer;
        third = a->elements >= 3 ? a->element[2] : NULL;
        x.writer = third && third->type == DLOCK__REPLY_INTEGER && third->integer == 1;
        x.shared = third && third->type == DLOCK__REPLY_INTEGER && third->integer == 2;
        if (a->elements == 4 && a->element[3]->type == DLOCK__REPLY_INTEGER)
            x.lease_end_ms = a->element[3]->integer;
    } else if (first->integer == 1 && second->type == DLOCK__REPLY_STRING) {
        x.fence = strtoull(second->str, &end, 10);
        x.vote = *end == '\0' && x.fence > 0 && read_slot(a, &x.slot) ? VOTE_YES : VOTE_FAILED;
        x.no_write_back = a->elements == 4 && a->element[3]->type == DLOCK__REPLY_INTEGER &&
                     a->element[3]->integer == 0;
    }
    return x;
}

static struct answer read_answer(const dlock__node_result *r, enum reply_kind kind)
{
    struct answer x = {VOTE_FAILED, 0, 0, 0, 0, false, false, false, 0};
    const dlock__reply *a = r->reply;
    if (r->status == DLOCK__PENDING) {
        x.vote = VOTE_PENDING;
    } else if (r->status != DLOCK__REPLIED) {
        x.error = r->status;
    } else if (a->type == DLOCK__REPLY_ERROR) {
        x.error = dlock__server_error_code(a);
    } else if (kind == GRANT) {
        x = read_grant(a);
    } else if (a->type == DLOCK__REPLY_INTEGER && a->integer >= 0 && a->integer <= 2) {
        static const enum vote counted[] = {VOTE_NO, VOTE_YES, VOTE_REPAIRED};
        x.vote = counted[a->integer];
    } else {
        x.error = DLOCK_EPROTO;
    }
    return x;
}

/* A node's yes or no through its gate: a node in its restart delay says no
 * for the rest of it; a yes its replicas did not acknowledge (or whose WAIT
 * is still to come) is no yes. */
static struct answer gated(struct answer x, dlock__gate gate)
{
    switch (gate.kind) {
    case DLOCK__GATE_OPEN:
        break;
    case DLOCK__GATE_PENDING:
        x.vote = x.vote == VOTE_YES ? VOTE_PENDING : x.vote;
        break;
    case DLOCK__GATE_RESTARTING:
        if (x.vote == VOTE_YES || (x.pttl >= 0 && x.pttl < gate.remaining_ms))
            x.pttl = gate.remaining_ms;
        x.vote = VOTE_NO;
        break;
    case DLOCK__GATE_UNACKED:
    case DLOCK__GATE_FAILED:
        if (x.vote == VOTE_YES) {
            x.vote = VOTE_FAILED;
            x.error = gate.error;
        }
        break;
    }
    return x;
}

/* Node i's answer to script call `call` of a batch; `g` (NULL: none) lays
 * the batch out and gates the answer. */
static struct answer answer_of(const dlock__node_result *results, size_t n, size_t call,
                               size_t i, enum reply_kind kind, const dlock__guard *g)
{
    struct answer x = read_answer(&results[((g ? g->before : 0) + call) * n + i], kind);
    if (g && (x.vote == VOTE_YES || x.vote == VOTE_NO))
        x = gated(x, dlock__guard_gate(g, results, n, i));
    return x;
}

static void count(dlock__tally *t, const dlock__node_result *results, size_t n,
                  enum reply_kind kind, const dlock__guard *g, size_t call)
{
    t->yes = t->no = t->repaired = t->failed = t->pending = 0;
    t->fence = 0;
    t->slot = 0;
    t->writer = t->shared = t->agreed = false;
    t->lease_end_ms = 0;
    for (size_t i = 0; i < n; i++) {
        struct answer x = answer_of(results, n, call, i, kind, g);
        switch (x.vote) {
        case VOTE_YES:
            t->agreed = (t->yes == 0 || (t->agreed && x.fence == t->fence)) && x.no_write_back;
            if (t->yes++ == 0 || x.fence > t->fence) {
                t->fence = x.fence;
                t->slot = x.slot;
            }
            break;
        case VOTE_NO:
            t->pttl = t->no++ == 0 || x.pttl < t->pttl ? x.pttl : t->pttl;
            t->writer |= x.writer;
            t->shared |= x.shared;
            t->lease_end_ms = x.lease_end_ms; /* one server: queued kinds take no more */
            break;
        case VOTE_REPAIRED:
            t->repaired++;
            break;
        case VOTE_FAILED:
            t->failed++;
            break;
        case VOTE_PENDING:
            t->pending++;
            break;
        }
    }
}

/* Is the outcome known? Yes once a majority said yes; else only when no
 * majority can say yes any more and the replies tell why: a majority
 * answered (no, or not ours), or a majority cannot answer at all. Nodes
 * beyond that are never waited for. */
static bool settled(const dlock__tally *t, size_t n)
{
    if (t->yes >= t->quorum)
        return true;
    if (t->yes + t->pending >= t->quorum)
        return false;
    return t->yes + t->no + t->repaired >= t->quorum || n - t->failed < t->quorum;
}

struct decision {
    dlock__tally tally;
    enum reply_kind kind;
    const dlock__guard *guard; /* NULL: the batch is the scripts alone */
};

/* The fan-out's `enough`: every call of the batch is settled. */
static bool decided(const dlock__node_result *results, size_t n, size_t k, int64_t *deadline_ns,
                    void *ctx)
{
    struct decision *d = ctx;
    (void)deadline_ns;
    for (size_t j = 0; j < (d->guard ? d->guard->k : k); j++) {
        count(&d->tally, results, n, d->kind, d->guard, j);
        if (!settled(&d->tally, n))
            return false;
    }
    return true;
}

/* The end of the validity of a lock taken or extended for `ttl_ms` by a
 * call that started at `start_ns`: ttl - drift, the drift being ttl x factor
 * + 2 ms (the Redis distlock page). */
static int64_t validity_end(int64_t start_ns, int64_t ttl_ms, double drift_factor)
{
    int64_t drift = (int64_t)((double)ttl_ms * drift_factor * DLOCK__NS_PER_MS) +
                    2 * DLOCK__NS_PER_MS;
    return start_ns + ttl_ms * DLOCK__NS_PER_MS - drift;
}

static int judge(dlock__tally *t, const dlock__node_result *results, size_t n,
                 const dlock__guard *g, int64_t ttl_ms, double drift_factor, int64_t start_ns,
                 int64_t now_ns, int64_t *valid_until_ns)
{
    count(t, results, n, GRANT, g, 0);
    *valid_until_ns = validity_end(start_ns, ttl_ms, drift_factor);
    return t->yes >= t->quorum && *valid_until_ns > now_ns ? 0 : DLOCK_EBUSY;
}

int dlock__acquire_judge(dlock__tally *t, const dlock__node_result *results, size_t n,
                         int64_t ttl_ms, double drift_factor, int64_t start_ns, int64_t now_ns,
                         int64_t *valid_until_ns)
{
    return judge(t, results, n, NULL, ttl_ms, drift_factor, start_ns, now_ns, valid_until_ns);
}

int dlock__check_ttl(dlock__lane *lane, int64_t ttl_ms)
{
    if (ttl_ms >= DLOCK_TTL_MIN_MS && ttl_ms <= DLOCK_TTL_MAX_MS)
        return 0;
    dlock__set_error(lane, "TTL must be from %lld to %lld ms, not %" PRId64, DLOCK_TTL_MIN_MS,
                     DLOCK_TTL_MAX_MS, ttl_ms);
    return DLOCK_EINVAL;
}

int dlock__claim_init(dlock__claim *cl, dlock_client *c, dlock__lane *lane, const char *name,
                      const dlock__kind *kind, struct dlock__kind_params *params)
{
    char why[256];
    int rc;
    memset(cl, 0, sizeof(*cl));
    cl->client = c;
    cl->params = params;
    rc = dlock__keys_make(&cl->keys, name, why, sizeof(why));
    if (rc < 0) {
        dlock__set_error(lane, "%s", why);
        return rc;
    }
    rc = dlock__claim_set_kind(cl, lane, kind);
    if (rc == 0 && c->audit) {
        cl->audit_key = dlock__aux_key(name, "audit");
        if (!cl->audit_key) {
            dlock__set_error(lane, "out of memory");
            rc = DLOCK_ENOMEM;
        }
    }
    if (rc < 0)
        dlock__claim_clear(cl);
    return rc;
}

static void free_aux(dlock__claim *cl)
{
    for (size_t i = 0; i < DLOCK__KIND_AUX_MAX; i++) {
        free(cl->aux[i]);
        cl->aux[i] = NULL;
    }
}

int dlock__claim_set_kind(dlock__claim *cl, dlock__lane *lane, const dlock__kind *kind)
{
    char *aux[DLOCK__KIND_AUX_MAX] = {NULL};
    for (size_t i = 0; kind->aux[i]; i++) {
        aux[i] = dlock__aux_key(cl->keys.lock, kind->aux[i]);
        if (!aux[i]) {
            for (size_t j = 0; j < i; j++)
                free(aux[j]);
            dlock__set_error(lane, "out of memory");
            return DLOCK_ENOMEM;
        }
    }
    free_aux(cl);
    memcpy(cl->aux, aux, sizeof(aux));
    cl->kind = kind;
    return 0;
}

void dlock__claim_clear(dlock__claim *cl)
{
    dlock__keys_clear(&cl->keys);
    free_aux(cl);
    free(cl->audit_key);
    cl->audit_key = NULL;
    dlock__wipe(cl->token, sizeof(cl->token));
}

/* One script call of a claim's kind (see dlock__kind): the mutex's keys and
 * arguments for the step, then the kind's words for it. The call borrows
 * the words, so they live here beside it. */
struct kind_call {
    const char *keys[3 + DLOCK__KIND_AUX_MAX + 2]; /* and the audit's stream */
    const char *args[5 + DLOCK__WORDS_ARGS_MAX + DLOCK__AUDIT_WORDS];
    dlock__words words;
    char fence[24], maxlen[24], pid[24], held[24], left[24], keep[24]; /* the audit's */
    dlock__script_call call;
};

/* The audit's trailer (scripts.c, AUDIT_LUA): the stream, and what its
 * entry says that the script does not know. `note` is why the call is made:
 * "grant", "extend", "release", "cleanup" or "loss". held_ms and left_ms
 * let a release or a loss tell its hold's window when the stream lost its
 * grant (a restart): since the grant, and what was left of the validity,
 * by the client's clock. The stream lives as long as the fence key. */
static void add_audit_trailer(struct kind_call *kc, const dlock__claim *cl, const char *note,
                              int *k, int *a)
{
    dlock_client *c = cl->client;
    int64_t now = dlock__now_ns();
    bool ended = strcmp(note, "release") == 0 || strcmp(note, "loss") == 0 ||
                 strcmp(note, "cleanup") == 0;
    kc->held[0] = kc->left[0] = kc->fence[0] = '\0';
    if (cl->fence)
        snprintf(kc->fence, sizeof(kc->fence), "%" PRIu64, cl->fence);
    if (ended && cl->granted_ns)
        snprintf(kc->held, sizeof(kc->held), "%" PRId64,
                 (int64_t)((now - cl->granted_ns) / DLOCK__NS_PER_MS));
    if (ended && cl->ttl_ms)
        snprintf(kc->left, sizeof(kc->left), "%" PRId64,
                 (int64_t)((validity_end(cl->started_ns, cl->ttl_ms, c->drift_factor) - now) /
                           DLOCK__NS_PER_MS));
    snprintf(kc->maxlen, sizeof(kc->maxlen), "%u", c->audit_maxlen);
    snprintf(kc->pid, sizeof(kc->pid), "%ld", (long)dlock__token_pool_pid(c->tokens));
    snprintf(kc->keep, sizeof(kc->keep), "%" PRId64, c->fence_ttl_ms);
    kc->keys[(*k)++] = cl->audit_key;
    kc->args[(*a)++] = kc->fence;
    kc->args[(*a)++] = kc->maxlen;
    kc->args[(*a)++] = c->host;
    kc->args[(*a)++] = kc->pid;
    kc->args[(*a)++] = note;
    kc->args[(*a)++] = kc->held;
    kc->args[(*a)++] = kc->left;
    kc->args[(*a)++] = kc->keep;
    kc->args[(*a)++] = "dlock:audit";
}

/* The script a step of the claim's kind sends. */
static enum dlock__script_id script_of(const dlock__claim *cl, enum dlock__step step)
{
    switch (step) {
    case DLOCK__STEP_ACQUIRE:
        return cl->kind->acquire;
    case DLOCK__STEP_RELEASE:
    case DLOCK__STEP_CLEANUP:
        return cl->kind->release;
    case DLOCK__STEP_EXTEND:
    case DLOCK__STEP_REPAIR:
        return cl->kind->extend;
    case DLOCK__STEP_FENCE:
        break;
    }
    return DLOCK__SCRIPT_FENCE_MAX;
}

/* The kind's words for `step` into w. */
static void kind_words(const dlock__claim *cl, enum dlock__step step, dlock__words *w)
{
    w->nkeys = w->nargs = 0;
    if (cl->kind->words)
        cl->kind->words(cl, step, w);
}

/* The key a step of the claim's kind names for `key`, one of the mutex's:
 * NAME in the place of one its scripts do not read (kind.h). */
static const char *kind_key(const dlock__claim *cl, enum dlock__step step, const char *key)
{
    if (step != DLOCK__STEP_FENCE && ((key == cl->keys.owner && cl->kind->no_owner_key) ||
                                      (key == cl->keys.fence && cl->kind->no_fence_key)))
        return cl->keys.lock;
    return key;
}

static int encode_kind_call(struct kind_call *kc, const dlock__claim *cl, enum dlock__step step,
                            const char *const *keys, int nkeys, const char *const *args,
                            int nargs, const char *note)
{
    int k = 0, a = 0, rc;
    kind_words(cl, step, &kc->words);
    for (; k < nkeys; k++)
        kc->keys[k] = kind_key(cl, step, keys[k]);
    for (int i = 0; i < kc->words.nkeys; i++)
        kc->keys[k++] = kc->words.keys[i];
    for (; a < nargs; a++)
        kc->args[a] = args[a];
    for (int i = 0; i < kc->words.nargs; i++)
        kc->args[a++] = kc->words.args[i];
    if (cl->audit_key)
        add_audit_trailer(kc, cl, note, &k, &a);
    rc = dlock__script_encode(&kc->call, script_of(cl, step), k, kc->keys, a, kc->args);
    /* What takes a key away must reach every server it can (fanout.h). */
    kc->call.call.deliver = step == DLOCK__STEP_RELEASE || step == DLOCK__STEP_CLEANUP;
    return rc;
}

/* One node: its failure. Several: DLOCK_ENOQUORUM, unless every failing
 * node reports the same failure that is not about reaching it (a wrong
 * password everywhere is DLOCK_EAUTH); which node said what is in the
 * message. */
static int common_failure(const dlock__node_result *results, size_t n, enum reply_kind kind,
                          const dlock__guard *g, size_t call)
{
    int code = 0;
    for (size_t i = 0; i < n; i++) {
        struct answer x = answer_of(results, n, call, i, kind, g);
        int failure = x.vote == VOTE_PENDING ? DLOCK_ETIMEDOUT : x.error;
        if (x.vote != VOTE_PENDING && x.vote != VOTE_FAILED)
            continue;
        if (code != 0 && code != failure)
            return DLOCK_ENOQUORUM;
        code = failure;
    }
    if (n > 1 && (code == DLOCK_ECONN || code == DLOCK_ETIMEDOUT))
        return DLOCK_ENOQUORUM;
    return code ? code : DLOCK_ENOQUORUM;
}

/* The deadline of a call of an acquire, and of the release that leaves a
 * wait's queue: the node deadline, or the end of the wait it is part of if
 * sooner, but a try begun at that end still gets LAST_TRY_MS (a wait of
 * 300 ms against a server that does not answer ends about then, not a
 * command timeout or two later). */
#define LAST_TRY_MS 50
static int64_t call_deadline(const dlock__claim *cl, const dlock__lane *lane, int64_t ttl_ms)
{
    int64_t now = dlock__now_ns(), deadline = dlock__node_deadline(cl->client, ttl_ms, now);
    int64_t end = lane->wait_end_ns, floor = now + LAST_TRY_MS * DLOCK__NS_PER_MS;
    if (end && end < floor)
        end = floor;
    return end && end < deadline ? end : deadline;
}

/* Sends a cleanup release (no PUBLISH: it must not wake waiters) to every
 * node after a failed attempt whose SET may have landed somewhere: a node
 * that granted, one that got the command and gave no verdict, or one whose
 * script the ACL stopped midway (an audit's XADD). */
static void clean_up_attempt(dlock__claim *cl, dlock__lane *lane,
                             const dlock__node_result *results, int64_t ttl_ms)
{
    dlock_client *c = cl->client;
    dlock__node_result cleanup[DLOCK__NODES_MAX];
    const char *const keys[] = {cl->keys.lock, cl->keys.owner};
    const char *const args[] = {cl->token, cl->keys.channel, "0"};
    struct decision d = {.tally.quorum = dlock__quorum(c), .kind = COUNT};
    struct kind_call kc;
    bool needed = false;

    for (size_t i = 0; i < c->n; i++) {
        const dlock__node_result *r = &results[i];
        needed |= read_answer(r, GRANT).vote == VOTE_YES ||
                  (r->sent && r->status != DLOCK__REPLIED) ||
                  (r->status == DLOCK__REPLIED && dlock__acl_stopped_script(r->reply));
    }
    if (!needed || encode_kind_call(&kc, cl, DLOCK__STEP_CLEANUP, keys, 2, args, 3, "cleanup") < 0)
        return;
    dlock__fanout(lane->conns, c->n, &kc.call.call, call_deadline(cl, lane, ttl_ms), cleanup,
                  decided, &d);
    dlock__results_clear(cleanup, c->n);
    dlock__script_call_free(&kc.call);
}

/* A busy verdict in words. Only a plain answer's time is the key's PTTL:
 * a queued waiter's, a waiting writer's and a semaphore's is when to try
 * again. */
static void busy_message(dlock__lane *lane, const dlock__claim *cl, const dlock__tally *t)
{
    if (strcmp(cl->kind->type, "zset") == 0)
        dlock__set_error(lane, "no permit is free: each is held, or kept for a waiter queued "
                               "ahead");
    else if (t->writer)
        dlock__set_error(lane, "the lock is held shared by other holders");
    else if (t->lease_end_ms)
        dlock__set_error(lane, "the lock is held by another owner, or kept for a waiter queued "
                               "ahead");
    else if (t->pttl < 0)
        dlock__set_error(lane, "the lock is held by another owner (its key never expires: no TTL)");
    else
        dlock__set_error(lane, "the lock is held by another owner (its key expires in %.1f s)",
                         (double)t->pttl / 1000);
}

/* One server counted twice is no majority, for a grant or a busy verdict:
 * two endpoints with one run_id are refused. A server answers its run_id
 * about as fast as the majority answered since `start`. */
static int check_one_vote_each(dlock_client *c, dlock__lane *lane, int64_t start)
{
    int64_t grace = dlock__now_ns() - start;
    return dlock__lane_check_distinct(c, lane, grace > DLOCK__NS_PER_MS ? grace : DLOCK__NS_PER_MS);
}

static int acquire_failed(dlock__claim *cl, dlock__lane *lane, const dlock__tally *t,
                          const dlock__node_result *results, const dlock__guard *g,
                          int64_t ttl_ms, int64_t start)
{
    dlock_client *c = cl->client;
    int rc;
    if (t->yes >= t->quorum) {
        rc = DLOCK_ETIMEDOUT;
        dlock__set_error(lane, "acquiring took longer than the TTL of %" PRId64 " ms", ttl_ms);
    } else if (t->yes + t->no >= t->quorum) {
        /* A waiter must not wait for a majority that is one server. */
        rc = check_one_vote_each(c, lane, start);
        if (rc == 0) {
            rc = DLOCK_EBUSY;
            cl->last_pttl_ms = t->pttl;
            if (dlock__guard_restarting(g, results, c->n))
                dlock__set_error(lane, "no majority may grant: the lock may be held by an owner "
                                 "that a restarted server forgot");
            else
                busy_message(lane, cl, t);
        }
    } else {
        rc = common_failure(results, c->n, GRANT, g, 0);
        dlock__set_error(lane, "cannot acquire the lock: %s", dlock__error_text(rc));
    }
    dlock__append_node_errors(lane, lane->conns, &results[g->before * c->n], c->n);
    dlock__guard_explain(g, lane, results, c->n);
    clean_up_attempt(cl, lane, &results[g->before * c->n], ttl_ms);
    return rc;
}

/* Redlock: the token is the largest fence of the quorum. Any later quorum
 * must go above it: it shares a node with every majority, which must still
 * hold the token or, having restarted empty since, start from its clock above
 * it. So it is written back (never lowering a stored value) to every node,
 * and must reach a majority before `valid_until`. The kind may name more
 * keys to raise, and say how: the name's epoch, for shared holders
 * (docs/shared.md). */
static int write_back_fence(dlock__claim *cl, dlock__lane *lane, int64_t ttl_ms, uint64_t fence,
                            int64_t valid_until)
{
    dlock_client *c = cl->client;
    dlock__node_result results[DLOCK__NODES_MAX];
    char value[24], fence_ttl[24];
    const char *keys[1 + DLOCK__KIND_AUX_MAX + 1] = {cl->keys.fence};
    const char *args[2 + DLOCK__WORDS_ARGS_MAX] = {value, fence_ttl};
    struct decision d = {.tally.quorum = dlock__quorum(c), .kind = COUNT};
    int64_t deadline = call_deadline(cl, lane, ttl_ms);
    dlock__script_call call;
    dlock__words w;
    int rc;

    snprintf(value, sizeof(value), "%" PRIu64, fence);
    snprintf(fence_ttl, sizeof(fence_ttl), "%" PRId64, c->fence_ttl_ms);
    kind_words(cl, DLOCK__STEP_FENCE, &w);
    for (int i = 0; i < w.nkeys; i++)
        keys[1 + i] = w.keys[i];
    for (int i = 0; i < w.nargs; i++)
        args[2 + i] = w.args[i];
    rc = dlock__script_encode(&call, DLOCK__SCRIPT_FENCE_MAX, 1 + w.nkeys, keys, 2 + w.nargs, args);
    if (rc < 0)
        return rc;
    dlock__fanout(lane->conns, c->n, &call.call, deadline < valid_until ? deadline : valid_until,
                  results, decided, &d);
    count(&d.tally, results, c->n, COUNT, NULL, 0);
    if (d.tally.yes < d.tally.quorum) {
        rc = DLOCK_ENOQUORUM;
        dlock__set_error(lane, "the fencing token reached no majority in time");
        dlock__append_node_errors(lane, lane->conns, results, c->n);
    }
    dlock__results_clear(results, c->n);
    dlock__script_call_free(&call);
    return rc;
}

/* After a majority granted: one server counted twice is no majority; with
 * several nodes the token must reach a majority, unless every grant
 * counted stored it already (agreed: docs/redlock.md); all of it within
 * the validity. On failure what we wrote is taken back. */
static int confirm_grant(dlock__claim *cl, dlock__lane *lane, const dlock__tally *t,
                         const dlock__node_result *results, int64_t ttl_ms, int64_t start,
                         int64_t valid_until)
{
    dlock_client *c = cl->client;
    int rc = check_one_vote_each(c, lane, start);
    if (rc == 0 && c->n > 1 && !t->agreed)
        rc = write_back_fence(cl, lane, ttl_ms, t->fence, valid_until);
    if (rc == 0 && valid_until <= dlock__now_ns()) {
        rc = DLOCK_ETIMEDOUT;
        dlock__set_error(lane, "acquiring took longer than the TTL of %" PRId64 " ms", ttl_ms);
    }
    if (rc < 0)
        clean_up_attempt(cl, lane, results, ttl_ms);
    return rc;
}

/* Did every node leave the script unserved (fanout.h), so that it ran
 * nowhere? */
static bool served_nowhere(const dlock__node_result *results, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!results[i].unserved)
            return false;
    return true;
}

/* While a slot migrates, an acquire's script cannot run: Redis answers
 * TRYAGAIN to a call of several keys that are not all on one node, and the
 * scripts name keys that often do not exist. A read of the lock key alone
 * can run (through ASK): a node of `results` that did not serve the script
 * but holds the key says no, for as long as the key lives. A free name
 * stays a failure, which a wait tries again. Returns whether some node did
 * not serve it. */
static bool read_held_where_unserved(dlock__claim *cl, dlock__lane *lane,
                                     const dlock__node_result *results, dlock__tally *t)
{
    dlock_client *c = cl->client;
    const char *argv[] = {"PTTL", cl->keys.lock};
    size_t lens[] = {4, strlen(cl->keys.lock)};
    dlock__call call = {.slot = (int)dlock__key_slot(cl->keys.lock, lens[1])};
    bool unserved = false;
    long long len;
    for (size_t i = 0; i < c->n; i++)
        unserved |= results[i].unserved;
    if (!unserved || (len = dlock__command_format(&call.cmd, 2, argv, lens)) < 0)
        return unserved;
    call.len = (size_t)len;
    for (size_t i = 0; i < c->n; i++) {
        dlock__conn *conn = &lane->conns[i];
        char why[sizeof(conn->err)];
        dlock__node_result r;
        if (!results[i].unserved)
            continue;
        memcpy(why, conn->err, sizeof(why)); /* the message's: why the script was not served */
        dlock__fanout(conn, 1, &call, call_deadline(cl, lane, 0), &r, NULL, NULL);
        if (r.status == DLOCK__REPLIED && r.reply->type == DLOCK__REPLY_INTEGER &&
            r.reply->integer >= -1) {
            t->pttl = t->no++ == 0 || r.reply->integer < t->pttl ? r.reply->integer : t->pttl;
            t->failed--;
        }
        dlock__results_clear(&r, 1);
        memcpy(conn->err, why, sizeof(why));
    }
    dlock__command_free(call.cmd);
    return true;
}

/* One attempt; *rerouted: a cluster or the sentinels sent some node's
 * calls elsewhere, so its check and WAIT said nothing (durable.h). */
static int acquire_once(dlock__claim *cl, dlock__lane *lane, int64_t ttl_ms, bool *rerouted)
{
    dlock_client *c = cl->client;
    dlock__node_result results[(DLOCK__CHECK_CALLS + 2) * DLOCK__NODES_MAX];
    char ttl[24], fence_ttl[24], owner[DLOCK__OWNER_RECORD_MAX];
    const char *const keys[] = {cl->keys.lock, cl->keys.fence, cl->keys.owner};
    const char *const args[] = {cl->token, ttl, fence_ttl, owner};
    struct decision d = {.tally.quorum = dlock__quorum(c), .kind = GRANT};
    int64_t start, deadline, valid_until;
    struct kind_call kc;
    dlock__call *script = &kc.call.call;
    dlock__guard g;
    int rc;

    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    snprintf(fence_ttl, sizeof(fence_ttl), "%" PRId64, c->fence_ttl_ms);
    dlock__owner_format(owner, sizeof(owner), c->host, (long)dlock__token_pool_pid(c->tokens),
                        cl->token);
    cl->attempts++;
    rc = encode_kind_call(&kc, cl, DLOCK__STEP_ACQUIRE, keys, 3, args, 4, "grant");
    if (rc < 0) {
        dlock__set_error(lane, "cannot encode the acquire command");
        return rc;
    }
    start = dlock__now_ns();
    deadline = call_deadline(cl, lane, ttl_ms);
    rc = dlock__guard_init(&g, c, lane->conns, c->n, DLOCK__GUARD_CHECK | DLOCK__GUARD_WAIT,
                           &script, 1, deadline);
    if (rc < 0) {
        dlock__set_error(lane, "cannot encode the acquire command");
        goto out_free_guard;
    }
    /* The restart check, the script and WAIT: one round trip per node. */
    d.guard = &g;
    dlock__fanout_batch(lane->conns, c->n, g.calls, g.n_calls, deadline, results, decided, &d);
    *rerouted = dlock__guard_rerouted(&g, lane->conns, c->n);
    dlock__guard_drop_blocked(&g, lane, results, c->n);
    dlock__guard_mark(&g, lane, results, c->n, call_deadline(cl, lane, ttl_ms));
    rc = judge(&d.tally, results, c->n, &g, ttl_ms, c->drift_factor, start, dlock__now_ns(),
               &valid_until);
    if (rc < 0 && read_held_where_unserved(cl, lane, &results[g.before * c->n], &d.tally))
        *rerouted = false; /* the slot cannot take the script now: no use trying at once */
    if (rc == 0)
        rc = confirm_grant(cl, lane, &d.tally, &results[g.before * c->n], ttl_ms, start,
                           valid_until);
    else
        rc = acquire_failed(cl, lane, &d.tally, results, &g, ttl_ms, start);
    if (cl->kind->answered)
        cl->kind->answered(cl, lane, &d.tally);
    /* Only a busy answer says the hand-over of a later release is ours: a
     * failed attempt's cleanup may take away a lock handed over before it.
     * An attempt no node served (its slot migrating) ran nowhere: the
     * queue still holds what the last one that ran left, and a hand-over
     * of it, read after this attempt, is ours. */
    if (!served_nowhere(&results[g.before * c->n], c->n)) {
        cl->asked_ns = start;
        cl->lease_end_ms = rc == DLOCK_EBUSY ? d.tally.lease_end_ms : 0;
    }
    if (rc == 0) {
        cl->fence = d.tally.fence;
        cl->slot = d.tally.slot;
        cl->ttl_ms = ttl_ms;
        cl->granted_ns = start;
        cl->started_ns = start;
        cl->valid_until_ns = valid_until;
    }
    dlock__results_clear(results, g.n_calls * c->n);
out_free_guard:
    dlock__guard_free(&g);
    dlock__script_call_free(&kc.call);
    return rc;
}

int dlock__attempt_acquire(dlock__claim *cl, dlock__lane *lane, int64_t ttl_ms)
{
    bool rerouted = false;
    int rc = acquire_once(cl, lane, ttl_ms, &rerouted);
    /* A redirect taught the router where the name lives (a client's first
     * call on a cluster, a moved slot, a failover): at once once more, so
     * that the check and WAIT reach the server that grants. */
    if (rc < 0 && rerouted)
        rc = acquire_once(cl, lane, ttl_ms, &rerouted);
    return rc;
}

int dlock__attempt_handed(dlock__claim *cl, const dlock__handover *h, int64_t ttl_ms)
{
    /* The key lives until the lease end our last try set, or the TTL from
     * the release, which came after that try (it found us waiting): both at
     * least that long from the try's start. */
    int64_t bound_ms = ttl_ms < h->lease_ms ? ttl_ms : h->lease_ms;
    int64_t valid_until = validity_end(cl->asked_ns, bound_ms, cl->client->drift_factor);
    if (h->fence == 0 || h->lease_end_ms == 0 || h->lease_end_ms != cl->lease_end_ms ||
        valid_until <= dlock__now_ns())
        return DLOCK_EBUSY;
    cl->attempts++;
    cl->fence = h->fence;
    cl->slot = h->slot;
    cl->ttl_ms = ttl_ms;
    cl->granted_ns = cl->asked_ns;
    cl->started_ns = cl->asked_ns;
    cl->valid_until_ns = valid_until;
    return 0;
}

/* Did the call reach some node, so that it may have run there? */
static bool reached_a_node(const dlock__node_result *results, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (results[i].sent || results[i].status == DLOCK__REPLIED)
            return true;
    return false;
}

/* Tallies the 1s and 0s of a release or extend. Returns 0 (a majority
 * confirmed), DLOCK_ENOTOWNER (enough nodes gave a verdict, and not enough
 * were ours) or the nodes' failure. */
static int verdict(const dlock_client *c, dlock__lane *lane, const dlock__node_result *results,
                   const dlock__guard *g, size_t call)
{
    dlock__tally t = {.quorum = dlock__quorum(c)};
    int rc;
    count(&t, results, c->n, COUNT, g, call);
    if (t.yes >= t.quorum)
        return 0;
    if (t.yes + t.no + t.repaired >= t.quorum) {
        dlock__set_error(lane, "the lock is not ours: another owner holds it, or it expired");
        return DLOCK_ENOTOWNER;
    }
    rc = common_failure(results, c->n, COUNT, g, call);
    dlock__set_error(lane, "%s", dlock__error_text(rc));
    dlock__append_node_errors(lane, lane->conns, &results[((g ? g->before : 0) + call) * c->n],
                              c->n);
    if (g)
        dlock__guard_explain(g, lane, results, c->n);
    return rc;
}

/* What the audit calls a release: the end of a loss, a cleanup (no
 * publish, or a waiter that never held leaving its queue), or the
 * holder's own release (an adopted handle's too). */
static const char *release_note(const dlock__claim *cl, bool publish)
{
    if (cl->lost)
        return "loss";
    if (!publish || (cl->attempts > 0 && cl->ttl_ms == 0))
        return "cleanup";
    return "release";
}

/* Did the one node answer a release with 2: ours, but a queue waits for
 * the name (nothing written: the queue's release is to hand it on)? */
static bool answered_queued(const dlock__node_result *results, size_t n)
{
    const dlock__reply *a = results[0].reply;
    return n == 1 && results[0].status == DLOCK__REPLIED && a->type == DLOCK__REPLY_INTEGER &&
           a->integer == 2;
}

/* One release of the claim as its kind; *queued: answered_queued(). */
static int release_once(dlock__claim *cl, dlock__lane *lane, bool publish, bool *queued)
{
    dlock_client *c = cl->client;
    dlock__node_result results[DLOCK__NODES_MAX];
    const char *const keys[] = {cl->keys.lock, cl->keys.owner};
    const char *const args[] = {cl->token, cl->keys.channel, publish ? "1" : "0"};
    struct decision d = {.tally.quorum = dlock__quorum(c), .kind = COUNT};
    struct kind_call kc;
    int rc = encode_kind_call(&kc, cl, DLOCK__STEP_RELEASE, keys, 2, args, 3,
                              release_note(cl, publish));
    if (rc < 0) {
        dlock__set_error(lane, "cannot encode the command");
        return rc;
    }
    /* Decided by a majority: the nodes that did not answer by then got the
     * command all the same (a paused one applies it when it resumes; one
     * it had to reconnect to is given a moment: fanout.h, `deliver`), and
     * the key expires anyway. */
    dlock__fanout(lane->conns, c->n, &kc.call.call, call_deadline(cl, lane, cl->ttl_ms), results,
                  decided, &d);
    *queued = answered_queued(results, c->n);
    rc = verdict(c, lane, results, NULL, 0);
    /* A release that reached a node may have run there, whatever came
     * back: from then on the lock is not certainly held. */
    if (rc == 0 || rc == DLOCK_ENOTOWNER || reached_a_node(results, c->n))
        cl->valid_until_ns = 0;
    dlock__results_clear(results, c->n);
    dlock__script_call_free(&kc.call);
    return rc;
}

int dlock__attempt_release(dlock__claim *cl, dlock__lane *lane, bool publish)
{
    bool queued = false;
    int rc = release_once(cl, lane, publish, &queued);
    if (queued && cl->kind->queued) {
        rc = dlock__claim_set_kind(cl, lane, cl->kind->queued);
        if (rc == 0)
            rc = release_once(cl, lane, publish, &queued);
    }
    return rc;
}

/* One claim's part of a batch of extends: the strings its call borrows. */
struct extend_job {
    char ttl[24], fence[24], fence_ttl[24];
    const char *keys[3];
    const char *args[5];
    bool repair;
    struct kind_call call;
};

static int encode_extend(struct extend_job *job, const dlock__claim *cl, int64_t ttl_ms,
                         int64_t start)
{
    dlock_client *c = cl->client;
    /* Redlock only, and only while the lock is ours for sure: a node that
     * restarted empty gets our key back (but is no vote). With one node, a
     * missing key means the lock is lost, never silently taken again. */
    job->repair = c->n > 1 && cl->valid_until_ns > start;
    snprintf(job->ttl, sizeof(job->ttl), "%" PRId64, ttl_ms);
    snprintf(job->fence, sizeof(job->fence), "%" PRIu64, cl->fence);
    snprintf(job->fence_ttl, sizeof(job->fence_ttl), "%" PRId64, c->fence_ttl_ms);
    job->keys[0] = cl->keys.lock;
    job->keys[1] = cl->keys.owner;
    job->keys[2] = cl->keys.fence;
    job->args[0] = cl->token;
    job->args[1] = job->ttl;
    job->args[2] = job->repair ? "1" : "0";
    job->args[3] = job->fence;
    job->args[4] = job->fence_ttl;
    return encode_kind_call(&job->call, cl, job->repair ? DLOCK__STEP_REPAIR : DLOCK__STEP_EXTEND,
                            job->keys, 3, job->args, 5, "extend");
}

/* Claim j's part of the batch `results`, laid out by `g`. */
static int finish_extend(dlock__claim *cl, dlock__lane *lane, const struct extend_job *job,
                         const dlock__node_result *results, const dlock__guard *g, size_t j,
                         int64_t ttl_ms, int64_t start)
{
    dlock_client *c = cl->client;
    int64_t valid_until = validity_end(start, ttl_ms, c->drift_factor);
    int rc = verdict(c, lane, results, g, j);
    /* What a repair put back is the caller's to take away: after on_lost,
     * for a renewed lock. */
    cl->repaired = job->repair && rc == DLOCK_ENOTOWNER;
    if (rc == DLOCK_ENOTOWNER) {
        cl->valid_until_ns = 0;
        return rc;
    }
    if (rc < 0) {
        /* It may have run where it was sent: a shorter TTL than the one we
         * had may be in force there now. */
        if (reached_a_node(&results[j * c->n], c->n) && valid_until < cl->valid_until_ns)
            cl->valid_until_ns = valid_until;
        return rc;
    }
    cl->ttl_ms = ttl_ms;
    cl->started_ns = start;
    cl->valid_until_ns = valid_until;
    if (valid_until <= dlock__now_ns()) {
        dlock__set_error(lane, "extending took longer than the TTL of %" PRId64 " ms", ttl_ms);
        return DLOCK_ETIMEDOUT;
    }
    return 0;
}

/* The batch's deadline: the nodes' deadline for the shortest TTL, and never
 * past a validity still running: its end is when the owner must hear of a
 * loss. */
static int64_t extend_deadline(dlock__claim *const *claims, size_t k, const int64_t *ttls,
                               int64_t start)
{
    int64_t shortest = ttls[0], deadline;
    for (size_t j = 1; j < k; j++)
        shortest = ttls[j] < shortest ? ttls[j] : shortest;
    deadline = dlock__node_deadline(claims[0]->client, shortest, start);
    for (size_t j = 0; j < k; j++) {
        int64_t until = claims[j]->valid_until_ns;
        deadline = until > start && until < deadline ? until : deadline;
    }
    return deadline;
}

static void extend_batch(dlock__claim *const *claims, size_t k, dlock__lane *lane,
                         const int64_t *ttls, int *rcs)
{
    dlock_client *c = claims[0]->client;
    struct extend_job *jobs = calloc(k, sizeof(*jobs));
    dlock__call **calls = calloc(k, sizeof(dlock__call *));
    /* The extends, then WAIT if the client asks for replicas. */
    dlock__node_result *results = calloc((k + 1) * c->n, sizeof(*results));
    struct decision d = {.tally.quorum = dlock__quorum(c), .kind = COUNT};
    int64_t start = dlock__now_ns(), deadline = extend_deadline(claims, k, ttls, start);
    size_t encoded = 0;
    dlock__guard g = {0};
    int rc = jobs && calls && results ? 0 : DLOCK_ENOMEM;

    for (; rc == 0 && encoded < k; encoded++) {
        rc = encode_extend(&jobs[encoded], claims[encoded], ttls[encoded], start);
        calls[encoded] = &jobs[encoded].call.call.call;
        if (jobs[encoded].repair)
            atomic_store(&claims[encoded]->repair_sent, true);
    }
    if (rc == 0)
        rc = dlock__guard_init(&g, c, lane->conns, c->n, DLOCK__GUARD_WAIT, calls, k, deadline);
    if (rc == 0) {
        d.guard = &g;
        dlock__fanout_batch(lane->conns, c->n, g.calls, g.n_calls, deadline, results, decided, &d);
        dlock__guard_rerouted(&g, lane->conns, c->n);
        dlock__guard_drop_blocked(&g, lane, results, c->n);
        for (size_t j = 0; j < k; j++)
            rcs[j] = finish_extend(claims[j], lane, &jobs[j], results, &g, j, ttls[j], start);
        dlock__results_clear(results, g.n_calls * c->n);
    } else {
        dlock__set_error(lane, "cannot encode the command");
        for (size_t j = 0; j < k; j++)
            rcs[j] = rc;
    }
    for (size_t j = 0; jobs && j < encoded; j++)
        dlock__script_call_free(&jobs[j].call.call);
    dlock__guard_free(&g);
    free(results);
    free(calls);
    free(jobs);
}

/* In batches that one WAIT each can vouch for: with replicas on a
 * cluster, a batch's extends all go to one master. */
void dlock__attempt_extend(dlock__claim *const *claims, size_t k, dlock__lane *lane,
                           const int64_t *ttls, int *rcs)
{
    int slots[DLOCK__BATCH_MAX];
    for (size_t j = 0; j < k; j++)
        slots[j] = (int)dlock__key_slot(claims[j]->keys.lock, strlen(claims[j]->keys.lock));
    for (size_t from = 0, span; from < k; from += span) {
        span = dlock__guard_span(claims[0]->client, lane->conns, slots + from, k - from);
        extend_batch(claims + from, span, lane, ttls + from, rcs + from);
    }
}
