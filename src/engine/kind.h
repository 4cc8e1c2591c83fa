/* A claim's kind as the engine and the API see it: the primitive a claim
 * is (mutex, semaphore, fair lock, shared holders), told by its scripts
 * and by hooks where a step differs from kind to kind. Each kind lives in
 * a file of its own in src/kinds/; the engine never names one: the API
 * hands a claim its kind (dlock__claim_init()), and the client the scripts
 * a connection loads. A NULL hook does what the mutex does. */
#ifndef DLOCK_KIND_H
#define DLOCK_KIND_H

#include "lane.h"
#include "dlock.h"
#include "scripts.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DLOCK__KIND_AUX_MAX 7
#define DLOCK__WORDS_ARGS_MAX 3 /* the most: a semaphore waiter's permits, lease, hand-over */

struct dlock__claim;
struct dlock__tally;

/* What a script call is for: the words a kind adds depend on it. */
enum dlock__step {
    DLOCK__STEP_ACQUIRE,
    DLOCK__STEP_RELEASE, /* the holder's, a loss's, a waiter leaving */
    DLOCK__STEP_CLEANUP, /* after a failed attempt, which held nothing */
    DLOCK__STEP_EXTEND,
    DLOCK__STEP_REPAIR,  /* an extend that may put our key back (Redlock) */
    DLOCK__STEP_FENCE,   /* a grant's fence write-back (Redlock) */
};

/* The words a kind adds to the mutex's for one step (see scripts.h):
 * KEYS after the mutex's, ARGV after the mutex's. The audit's trailer, when
 * on, comes after them. Borrowed until the call is freed. */
typedef struct dlock__words {
    const char *keys[DLOCK__KIND_AUX_MAX + 1];
    const char *args[DLOCK__WORDS_ARGS_MAX];
    char numbers[DLOCK__WORDS_ARGS_MAX][24]; /* what a number argument points at */
    int nkeys, nargs;
} dlock__words;

static inline void dlock__words_keys(dlock__words *w, char *const *keys, size_t count)
{
    for (size_t i = 0; i < count; i++)
        w->keys[w->nkeys++] = keys[i];
}

static inline void dlock__words_arg(dlock__words *w, const char *arg)
{
    w->args[w->nargs++] = arg;
}

static inline void dlock__words_number(dlock__words *w, uint64_t value)
{
    snprintf(w->numbers[w->nargs], sizeof(w->numbers[0]), "%" PRIu64, value);
    dlock__words_arg(w, w->numbers[w->nargs]);
}

/* A message on a waiter's channel: not its business, a wake-up (try now),
 * or the lock handed over to it by the release (dlock__handover). */
enum dlock__wake { DLOCK__WAKE_NOT, DLOCK__WAKE, DLOCK__WAKE_HANDED };

/* A release handed a waiter the lock or a permit (docs/fair.md,
 * docs/semaphores.md): the fence it wrote, the end of the waiter's
 * presence lease it found (server ms), and that lease: the key lives at
 * least min(ttl, lease_ms) from the start of the try that was told that
 * end; and the permit's slot (0 for a lock). */
typedef struct dlock__handover {
    uint64_t fence;
    int64_t lease_end_ms;
    int64_t lease_ms;
    unsigned slot;
} dlock__handover;

typedef struct dlock__kind {
    const char *name; /* "mutex", "fair lock", ...: for messages */
    const char *type; /* the Redis type of NAME: "string", "zset" */
    enum dlock__script_id acquire, release, extend, status;
    /* NULL-terminated words of the kind's own keys, derived once per claim
     * (dlock__aux_key(name, word)) into claim->aux, and the status's KEYS
     * after NAME. */
    const char *aux[DLOCK__KIND_AUX_MAX + 1];

    /* The engine's. */
    /* The mutex's keys that the kind's scripts do not read (its owner
     * record, its fence key): NAME goes in their place. A cluster answers
     * TRYAGAIN to a call that names a key that does not exist while the
     * slot migrates, so a renewal, a release or a waiter's try (which
     * keeps its place) naming one could not run then; NAME exists while
     * the kind is held. */
    bool no_owner_key, no_fence_key;
    /* The words the kind adds for `step` (NULL: none). */
    void (*words)(const struct dlock__claim *cl, enum dlock__step step, dlock__words *w);
    /* What an acquire's answers told the kind beyond grant or refusal; it
     * may make the claim one of another kind (dlock__claim_set_kind()). */
    void (*answered)(struct dlock__claim *cl, dlock__lane *lane, const struct dlock__tally *t);
    /* The kind that releases a claim of this kind when its release answers
     * that a queue waits for the name (NULL: none, the answer is a
     * refusal): the queue's own release hands the lock on. */
    const struct dlock__kind *queued;
    /* The channel a waiter listens on, malloc'ed (NULL: the name's). A
     * waiter on its kind's channel keeps listening after a grant. */
    char *(*channel)(const struct dlock__claim *cl);
    /* What a message on that channel means (NULL: every one wakes). */
    enum dlock__wake (*message)(const struct dlock__claim *cl, const char *msg, size_t len,
                                dlock__handover *h);
    /* The longest a wait sleeps after a failure that is not a busy lock
     * (NULL: its backoff alone). */
    int64_t (*away_max_ms)(const struct dlock__claim *cl);

    /* The API's. */
    /* Checks the acquire's options for this kind and keeps its parameters
     * in the claim; DLOCK_EINVAL with the reason in the lane. */
    int (*setup)(struct dlock__claim *cl, dlock__lane *lane, const dlock_acquire_options *o);
    /* After an acquire that failed with `rc`: is there a place to leave (a
     * queue, the waiting writers), with a release? */
    bool (*leaves)(const struct dlock__claim *cl, int rc);
    /* The code a mutex's release or extend answers for a token of this
     * kind (0: none): an adopted handle tries as this kind then. */
    int adopted_on;
    /* The kind asked for, for a refusal: "a semaphore of 3 permits" (NULL:
     * "a " and the name). */
    void (*describe)(const struct dlock__claim *cl, char *out, size_t len);
    /* Whether a held name's status shows this kind; if so its words ("is
     * a semaphore of 3 permits") into out. */
    bool (*found)(const dlock_status *st, char *out, size_t len);
    /* Who holds a name whose status found() says is of this kind, in
     * words: "2 of its 3 permits held, the first to expire in 1.0 s". */
    void (*holders)(const dlock_status *st, char *out, size_t len);
    /* Whether the kind's status script reads a name the mutex's status
     * found of Redis type `type`, held with (`owned`) or without an owner
     * record; and the reader of its reply. */
    bool (*reads)(const char *type, bool owned);
    int (*read_status)(dlock_status *out, const dlock__reply *r);
} dlock__kind;

#endif
