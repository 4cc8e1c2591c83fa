/* The renewal thread. It sleeps until the earliest renewal or expiry of the
 * locks in its set, extends due locks at ttl/3 on its own connections (the
 * locks due together in one pipelined batch per node), and
 * declares a lock lost when the extend is refused or the validity runs out
 * before an extend succeeds: it marks the claim, calls on_lost once and
 * sends a cleanup release. */
#include "renew.h"

#include "clock.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_RETRY_MS 10
/* The thread sleeps on CLOCK_MONOTONIC (a condition variable takes no
 * other), which stops while the machine is suspended; validity runs on
 * CLOCK_BOOTTIME, which does not. Sleeping at most this long at a time
 * bounds how late a lock that expired during a suspend is noticed. */
#define SLEEP_CAP_MS 250
#define BATCH_SLACK_MS 50
/* The thread ran this much later than it meant to (its sleep's end, its
 * extend's deadline): the process was not running (SIGSTOP, a debugger, a
 * paused VM). A validity that ended meanwhile ran out while it was not. */
#define STALL_MIN_MS 200
#define VISIT_MAX (4 * DLOCK__BATCH_MAX)

/* One renewed lock. Every field but `claim`'s atomics is guarded by the
 * renewer's mutex. */
struct dlock__renewal {
    struct dlock__renewer *renewer;
    dlock__claim *claim;
    bool renewing;         /* an extend is in flight */
    bool in_set;
    int64_t renew_ttl_ms;  /* the TTL each renewal asks for */
    int64_t hold_until_ns; /* INT64_MAX: no max_hold */
    bool hold_reached;     /* renewals stopped at hold_until_ns */
    int64_t next_renewal_ns;
    int last_error;
    dlock_lost_fn on_lost;
    void *on_lost_arg;
    dlock_lock *lock;
    size_t heap_index;     /* place in the renewer's heap */
    int64_t heap_due_ns;   /* its key there: changed only with the mutex held */
};

struct dlock__renewer {
    dlock_client *client;
    dlock__lane lane;
    pthread_t thread;
    pthread_mutex_t mutex;
    pthread_cond_t wake; /* the set changed, or stop */
    pthread_cond_t idle; /* an extend or a loss finished */
    dlock__renewal **heap; /* the renewal set, soonest due first */
    size_t count, capacity;
    dlock__renewal *lost[DLOCK__BATCH_MAX]; /* told of their loss, cleanup due */
    size_t n_lost;
    bool stop;
    /* The thread sleeps until then (INT64_MAX: until told; 0: awake, it
     * looks at the set before it sleeps again): a lock due later needs no
     * wake-up, which spares two context switches per acquisition. */
    int64_t sleeping_until_ns;
    /* When the set was last found empty (0: it was not). The thread stays
     * in a timed sleep for SLEEP_CAP_MS more before it sleeps until told:
     * a client that takes locks one after the other (each released before
     * the next) then adds each to a thread that wakes in time anyway,
     * without a wake-up of its own. */
    int64_t idle_since_ns;
    /* The last time the thread did not run when it meant to: from when it
     * meant to run to when it did (0, 0: never). */
    int64_t stalled_from_ns, stalled_to_ns;
};

/* The renewal set is a binary min-heap on the moment each lock next needs
 * the thread: its renewal, or its expiry if renewals keep failing. With
 * thousands of locks, finding the next one must not mean scanning them all. */
static int64_t due_at(const dlock__renewal *l)
{
    return l->heap_due_ns;
}

/* The key is a copy: valid_until_ns changes during an extend, without the
 * mutex, and the heap must only see changes made under it. */
static void refresh_due(dlock__renewal *l)
{
    int64_t until = l->claim->valid_until_ns;
    l->heap_due_ns = l->next_renewal_ns < until ? l->next_renewal_ns : until;
}

static void heap_set(struct dlock__renewer *r, size_t i, dlock__renewal *l)
{
    r->heap[i] = l;
    l->heap_index = i;
}

static void sift_up(struct dlock__renewer *r, size_t i)
{
    dlock__renewal *l = r->heap[i];
    while (i > 0 && due_at(r->heap[(i - 1) / 2]) > due_at(l)) {
        heap_set(r, i, r->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(r, i, l);
}

static void sift_down(struct dlock__renewer *r, size_t i)
{
    dlock__renewal *l = r->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= r->count)
            break;
        if (child + 1 < r->count && due_at(r->heap[child + 1]) < due_at(r->heap[child]))
            child++;
        if (due_at(r->heap[child]) >= due_at(l))
            break;
        heap_set(r, i, r->heap[child]);
        i = child;
    }
    heap_set(r, i, l);
}

/* After the lock's due time changed. */
static void reposition(struct dlock__renewer *r, dlock__renewal *lock)
{
    refresh_due(lock);
    sift_up(r, lock->heap_index);
    sift_down(r, lock->heap_index);
}

static void unlink_lock(struct dlock__renewer *r, dlock__renewal *lock)
{
    size_t i = lock->heap_index;
    dlock__renewal *last = r->heap[--r->count];
    lock->in_set = false;
    if (last == lock)
        return;
    heap_set(r, i, last);
    reposition(r, last);
}

static int heap_push(struct dlock__renewer *r, dlock__renewal *lock)
{
    if (r->count == r->capacity) {
        size_t capacity = r->capacity ? r->capacity * 2 : 16;
        dlock__renewal **bigger = realloc(r->heap, capacity * sizeof(dlock__renewal *));
        if (!bigger)
            return DLOCK_ENOMEM;
        r->heap = bigger;
        r->capacity = capacity;
    }
    lock->in_set = true;
    refresh_due(lock);
    heap_set(r, r->count, lock);
    sift_up(r, r->count++);
    return 0;
}

/* The thread meant to run again by `planned_ns` and runs now: a stall if
 * far later. */
static void note_stall(struct dlock__renewer *r, int64_t planned_ns)
{
    int64_t now = dlock__now_ns();
    if (now - planned_ns > STALL_MIN_MS * DLOCK__NS_PER_MS) {
        r->stalled_from_ns = planned_ns;
        r->stalled_to_ns = now;
    }
}

/* Why `lock`, whose validity ran out, is lost: max_hold_ms reached; the
 * process not running when it ran out; or what kept its renewals from
 * succeeding. None that failed (a renewal is due at a third of the
 * validity): none was sent in time, the process was not running then
 * either (stopped before the lock even reached this thread). */
static int loss_reason(const struct dlock__renewer *r, const dlock__renewal *lock)
{
    int64_t until = lock->claim->valid_until_ns;
    if (lock->hold_reached)
        return DLOCK_ELOST;
    if (until > r->stalled_from_ns && until <= r->stalled_to_ns)
        return DLOCK_EPAUSED;
    return lock->last_error ? lock->last_error : DLOCK_EPAUSED;
}

/* Sleeps on `wake` until `until_ns` (CLOCK_BOOTTIME; INT64_MAX: no limit),
 * or for SLEEP_CAP_MS at most: the caller looks at the clock again. */
static void wait_until(struct dlock__renewer *r, int64_t until_ns)
{
    struct timespec now_mono, at;
    int64_t now = dlock__now_ns(), left;
    if (until_ns == INT64_MAX) {
        r->sleeping_until_ns = INT64_MAX;
        pthread_cond_wait(&r->wake, &r->mutex);
        r->sleeping_until_ns = 0;
        return;
    }
    left = until_ns - now;
    if (left <= 0)
        return;
    if (left > SLEEP_CAP_MS * DLOCK__NS_PER_MS)
        left = SLEEP_CAP_MS * DLOCK__NS_PER_MS;
    r->sleeping_until_ns = now + left;
    clock_gettime(CLOCK_MONOTONIC, &now_mono);
    left += now_mono.tv_nsec;
    at.tv_sec = now_mono.tv_sec + (time_t)(left / 1000000000LL);
    at.tv_nsec = (long)(left % 1000000000LL);
    pthread_cond_timedwait(&r->wake, &r->mutex, &at);
    note_stall(r, r->sleeping_until_ns);
    r->sleeping_until_ns = 0;
}

/* Called with the mutex held; returns with it held. The owner hears of the
 * loss at once; the cleanup release, which may wait for unreachable nodes,
 * comes after every loss found now was told (clean_up_lost()). */
static void declare_lost(struct dlock__renewer *r, dlock__renewal *lock, int reason)
{
    unlink_lock(r, lock);
    lock->claim->lost = true;
    lock->claim->valid_until_ns = 0;
    lock->renewing = true; /* not to be freed before its cleanup */
    dlock__stats_lost(&r->client->stats);
    dlock__metrics_lost(lock->claim->metrics);
    dlock__metrics_hold_ended(lock->claim->metrics, &lock->claim->held_since_ns);
    pthread_mutex_unlock(&r->mutex);
    if (lock->on_lost)
        lock->on_lost(lock->lock, reason, lock->on_lost_arg);
    pthread_mutex_lock(&r->mutex);
    r->lost[r->n_lost++] = lock;
}

/* Our token may still sit on a lost lock's nodes (a minority, or a key the
 * server has not expired yet): take it away, quietly. Called with the mutex
 * held; returns with it held. */
static void clean_up_lost(struct dlock__renewer *r)
{
    dlock__renewal *lost[DLOCK__BATCH_MAX];
    size_t n = r->n_lost;
    memcpy(lost, r->lost, n * sizeof(dlock__renewal *));
    r->n_lost = 0;
    pthread_mutex_unlock(&r->mutex);
    for (size_t j = 0; j < n; j++)
        dlock__attempt_release(lost[j]->claim, &r->lane, false);
    pthread_mutex_lock(&r->mutex);
    for (size_t j = 0; j < n; j++)
        lost[j]->renewing = false;
    pthread_cond_broadcast(&r->idle);
}

/* The TTL the next renewal asks for: the lock's own, or what is left of its
 * max-hold; 0 when the max-hold is reached. */
static int64_t renewal_ttl_ms(const dlock__renewal *lock, int64_t now)
{
    int64_t ttl_ms = lock->renew_ttl_ms;
    if (lock->hold_until_ns != INT64_MAX && (lock->hold_until_ns - now) / DLOCK__NS_PER_MS < ttl_ms)
        ttl_ms = (lock->hold_until_ns - now) / DLOCK__NS_PER_MS;
    return ttl_ms > 0 ? ttl_ms : 0;
}

/* How early a renewal may go, to share a round trip with others due soon:
 * a thirtieth of the TTL, at most BATCH_SLACK_MS. */
static int64_t slack_ns(const dlock__renewal *lock)
{
    int64_t ms = lock->renew_ttl_ms / 30 < BATCH_SLACK_MS ? lock->renew_ttl_ms / 30 : BATCH_SLACK_MS;
    return ms * DLOCK__NS_PER_MS;
}

/* Collects into `out` the locks whose renewal is due by now (give or take
 * their slack) and still valid. Only the top of the heap can be due: a
 * subtree whose root is not due within BATCH_SLACK_MS is skipped, and at
 * most VISIT_MAX entries are looked at. */
static size_t collect_due(const struct dlock__renewer *r, int64_t now, dlock__renewal **out)
{
    size_t stack[2 * VISIT_MAX + 1], depth = 0, k = 0;
    int visits = 0;
    if (r->count)
        stack[depth++] = 0;
    while (depth > 0 && k < DLOCK__BATCH_MAX && visits++ < VISIT_MAX) {
        size_t i = stack[--depth];
        dlock__renewal *l = r->heap[i];
        if (due_at(l) > now + BATCH_SLACK_MS * DLOCK__NS_PER_MS)
            continue;
        if (l->next_renewal_ns - slack_ns(l) <= now && l->claim->valid_until_ns > now)
            out[k++] = l;
        for (size_t child = 2 * i + 2; child >= 2 * i + 1; child--)
            if (child < r->count)
                stack[depth++] = child;
    }
    return k;
}

/* After the renewal of `lock` returned `rc`. Called with the mutex held;
 * returns with it held. */
static void renewed(struct dlock__renewer *r, dlock__renewal *lock, int64_t ttl_ms, int rc,
                    int64_t started)
{
    int64_t retry_ms = lock->renew_ttl_ms / 10 > MIN_RETRY_MS ? lock->renew_ttl_ms / 10
                                                              : MIN_RETRY_MS;
    lock->renewing = false;
    if (!lock->in_set)
        return; /* released or freed meanwhile */
    if (rc == DLOCK_ENOTOWNER) {
        declare_lost(r, lock, rc);
        return;
    }
    if (rc == 0) {
        lock->last_error = 0;
        lock->hold_reached = ttl_ms < lock->renew_ttl_ms;
        lock->next_renewal_ns = lock->hold_reached ? INT64_MAX
                                                   : started + ttl_ms * DLOCK__NS_PER_MS / 3;
    } else {
        /* Again at a tenth of the TTL, or sooner when a third of what is
         * left of the validity is less (a fair lock handed over holds
         * for the head's lease only until it is extended). */
        int64_t now = dlock__now_ns(), left_ms = (lock->claim->valid_until_ns - now) /
                                                  DLOCK__NS_PER_MS / 3;
        if (left_ms < retry_ms)
            retry_ms = left_ms > MIN_RETRY_MS ? left_ms : MIN_RETRY_MS;
        lock->last_error = rc;
        lock->next_renewal_ns = now + retry_ms * DLOCK__NS_PER_MS;
    }
    reposition(r, lock);
}

/* Renews every lock that is due, in batches pipelined to each node. Called
 * with the mutex held; returns with it held. */
static void renew_due(struct dlock__renewer *r, int64_t now)
{
    dlock__renewal *due[DLOCK__BATCH_MAX], *batch[DLOCK__BATCH_MAX];
    dlock__claim *claims[DLOCK__BATCH_MAX];
    int64_t ttls[DLOCK__BATCH_MAX], old_until[DLOCK__BATCH_MAX], done;
    int rcs[DLOCK__BATCH_MAX];
    size_t n_due = collect_due(r, now, due), k = 0;

    for (size_t j = 0; j < n_due; j++) {
        int64_t ttl_ms = renewal_ttl_ms(due[j], now);
        if (ttl_ms == 0) {
            due[j]->hold_reached = true;
            due[j]->next_renewal_ns = INT64_MAX; /* held long enough: let it expire */
            reposition(r, due[j]);
            continue;
        }
        due[j]->renewing = true;
        ttls[k] = ttl_ms;
        claims[k] = due[j]->claim;
        old_until[k] = due[j]->claim->valid_until_ns;
        batch[k++] = due[j];
    }
    if (k == 0)
        return;
    pthread_mutex_unlock(&r->mutex);
    dlock__attempt_extend(claims, k, &r->lane, ttls, rcs);
    done = dlock__now_ns();
    /* An extend ends by the validity it extends (its deadline never
     * passes it), unless the process stopped meanwhile. */
    for (size_t j = 0; j < k; j++)
        if (done - old_until[j] > STALL_MIN_MS * DLOCK__NS_PER_MS) {
            r->stalled_from_ns = now;
            r->stalled_to_ns = done;
        }
    for (size_t j = 0; j < k; j++) {
        /* how close it came: what was left of the old validity */
        int64_t margin_ms = (old_until[j] - done) / DLOCK__NS_PER_MS;
        if (rcs[j] == 0)
            dlock__stats_renewed(&r->client->stats, margin_ms);
        dlock__metrics_renewed(claims[j]->metrics, rcs[j], margin_ms);
    }
    pthread_mutex_lock(&r->mutex);
    /* A lock still marked renewing cannot be released or freed meanwhile,
     * even while declare_lost() lets go of the mutex. */
    for (size_t j = 0; j < k; j++)
        renewed(r, batch[j], ttls[j], rcs[j], now);
    pthread_cond_broadcast(&r->idle);
}

/* Until when the thread sleeps with nothing in the set (see idle_since_ns). */
static int64_t idle_until(struct dlock__renewer *r, int64_t now)
{
    if (r->idle_since_ns == 0)
        r->idle_since_ns = now;
    if (now - r->idle_since_ns >= SLEEP_CAP_MS * DLOCK__NS_PER_MS)
        return INT64_MAX;
    return r->idle_since_ns + SLEEP_CAP_MS * DLOCK__NS_PER_MS;
}

static void *renewal_thread(void *arg)
{
    struct dlock__renewer *r = arg;
    pthread_mutex_lock(&r->mutex);
    while (!r->stop) {
        int64_t now = dlock__now_ns();
        dlock__renewal *due = r->count ? r->heap[0] : NULL;
        bool expired = due && due_at(due) <= now && due->claim->valid_until_ns <= now;
        if (due)
            r->idle_since_ns = 0;
        if (expired && r->n_lost < DLOCK__BATCH_MAX)
            declare_lost(r, due, loss_reason(r, due));
        else if (r->n_lost)
            clean_up_lost(r);
        else if (!due || due_at(due) > now)
            wait_until(r, due ? due_at(due) : idle_until(r, now));
        else
            renew_due(r, now);
    }
    if (r->n_lost)
        clean_up_lost(r);
    pthread_mutex_unlock(&r->mutex);
    return NULL;
}

static void destroy(struct dlock__renewer *r)
{
    dlock__lane_destroy(r->client, &r->lane);
    free(r->heap);
    pthread_cond_destroy(&r->idle);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->mutex);
    free(r);
}

static int start(dlock_client *c)
{
    struct dlock__renewer *r = calloc(1, sizeof(*r));
    pthread_condattr_t attr;
    sigset_t all, old;
    int rc;
    if (!r)
        return DLOCK_ENOMEM;
    r->client = c;
    pthread_mutex_init(&r->mutex, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&r->idle, NULL);
    if (dlock__lane_init(c, &r->lane) < 0) {
        destroy(r);
        return DLOCK_ENOMEM;
    }
    /* The application's signals are not ours to receive. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&r->thread, NULL, renewal_thread, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        destroy(r);
        return DLOCK_ESYSTEM;
    }
    c->renewer = r;
    return 0;
}

int dlock__renew_add(dlock__renewal **out, dlock__claim *cl, const struct dlock__renew_params *p)
{
    dlock_client *c = cl->client;
    dlock__renewal *lock = calloc(1, sizeof(*lock));
    struct dlock__renewer *r;
    int64_t span;
    int rc = lock ? 0 : DLOCK_ENOMEM;
    if (rc == 0 && !c->renewer)
        rc = start(c);
    if (rc < 0) {
        free(lock);
        return rc;
    }
    r = c->renewer;
    lock->renewer = r;
    lock->claim = cl;
    lock->renew_ttl_ms = cl->ttl_ms;
    lock->hold_until_ns = p->max_hold_ms > 0 ? cl->started_ns + p->max_hold_ms * DLOCK__NS_PER_MS
                                             : INT64_MAX;
    /* At a third of the TTL, or of the validity when it is shorter (a fair
     * lock handed over holds for the head's presence lease until it is
     * extended). */
    span = lock->renew_ttl_ms * DLOCK__NS_PER_MS;
    if (cl->valid_until_ns - cl->started_ns < span)
        span = cl->valid_until_ns - cl->started_ns;
    lock->next_renewal_ns = cl->started_ns + span / 3;
    lock->on_lost = p->on_lost;
    lock->on_lost_arg = p->on_lost_arg;
    lock->lock = p->lock;
    pthread_mutex_lock(&r->mutex);
    rc = heap_push(r, lock);
    if (rc == 0 && due_at(lock) < r->sleeping_until_ns)
        pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->mutex);
    if (rc < 0) {
        free(lock);
        return rc;
    }
    *out = lock;
    return 0;
}

void dlock__renew_remove(dlock__renewal *lock)
{
    struct dlock__renewer *r;
    if (!lock)
        return;
    r = lock->renewer;
    pthread_mutex_lock(&r->mutex);
    if (lock->in_set)
        unlink_lock(r, lock);
    while (lock->renewing)
        pthread_cond_wait(&r->idle, &r->mutex);
    pthread_mutex_unlock(&r->mutex);
    free(lock);
}

void dlock__renew_stop(dlock_client *c)
{
    struct dlock__renewer *r = c->renewer;
    if (!r)
        return;
    pthread_mutex_lock(&r->mutex);
    r->stop = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->mutex);
    pthread_join(r->thread, NULL);
    destroy(r);
    c->renewer = NULL;
}
