/* The attempt layer: one fan-out of one script to every node, and what its
 * replies decide. Votes, the majority, the validity (ttl - elapsed -
 * drift), the cleanup of a failed attempt, the fencing token and its
 * write-back. It knows nothing of waiting or renewal: those layers call it.
 *
 * A claim is what an attempt acts for: a name's keys, the owner token and
 * what the last successful acquire or extend established. */
#ifndef DLOCK_ATTEMPT_H
#define DLOCK_ATTEMPT_H

#include "kind.h"
#include "lane.h"
#include "names.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define DLOCK__AUDIT_WORDS 9 /* the audit trailer's ARGV (src/kinds/lua/helpers.lua) */

/* A kind's own part of a claim (src/kinds/kinds.h): its parameters and
 * what its replies said, read by its hooks alone. */
struct dlock__kind_params;

typedef struct dlock__claim {
    dlock_client *client;
    const dlock__kind *kind;
    struct dlock__kind_params *params; /* the kind's, beside the claim */
    dlock__keys keys;
    char *aux[DLOCK__KIND_AUX_MAX]; /* the kind's auxiliary keys */
    char *audit_key;                /* {T}:dlock:audit:NAME with the audit on, else NULL */
    unsigned slot;                  /* of the last acquisition (0 for a kind without slots) */
    char token[DLOCK_TOKEN_LEN + 1];
    uint64_t fence;                 /* of the last acquisition; 0: adopted */
    int64_t granted_ns;             /* start of the last acquisition; 0: adopted */
    _Atomic int64_t ttl_ms;         /* of the last acquire or extend; 0 when adopted */
    _Atomic int64_t started_ns;     /* start of the call that set the validity */
    _Atomic int64_t valid_until_ns; /* 0: not held */
    atomic_bool lost;               /* the owner was told it is lost */
    unsigned attempts;              /* acquire attempts made, a hand-over taken counted */
    bool waited;                    /* a wait found it busy and kept waiting */
    bool repaired;                  /* a refused extend put our key back somewhere */
    /* An extend that may repair was sent (Redlock): one could still run
     * after our release, which records our fence in `freed` for it. Set
     * by the renewal thread before it sends; read after it finished. */
    atomic_bool repair_sent;
    int64_t last_pttl_ms;           /* busy: how long the holder's key lives (-1: no TTL) */
    /* Busy: the start of that attempt and the end of the presence lease
     * it set (server ms; 0: none), for a grant handed over by a release. */
    int64_t asked_ns;
    int64_t lease_end_ms;
    /* The name's counters (NULL: not counted, as an adopted handle), and
     * when the hold they will see end began (0: none open). */
    dlock__name_metrics *metrics;
    _Atomic int64_t held_since_ns;
} dlock__claim;

/* Checks the name and derives its keys, a claim of `kind` whose own part
 * is `params`; the token is left empty. Returns 0, DLOCK_EINVAL or
 * DLOCK_ENOMEM, with the reason in the lane. */
int dlock__claim_init(dlock__claim *cl, dlock_client *c, dlock__lane *lane, const char *name,
                      const dlock__kind *kind, struct dlock__kind_params *params);

/* Makes the claim one of `kind` and derives the kind's auxiliary keys.
 * Returns 0, or DLOCK_ENOMEM (reason in the lane) with the claim as it
 * was. */
int dlock__claim_set_kind(dlock__claim *cl, dlock__lane *lane, const dlock__kind *kind);

/* Frees the keys and wipes the token. */
void dlock__claim_clear(dlock__claim *cl);

/* DLOCK_EINVAL (reason in the lane) unless DLOCK_TTL_MIN_MS <= ttl_ms <=
 * DLOCK_TTL_MAX_MS. */
int dlock__check_ttl(dlock__lane *lane, int64_t ttl_ms);

/* One attempt to acquire. 0: held until cl->valid_until_ns, with its fence;
 * DLOCK_EBUSY: held by another (cl->last_pttl_ms says how long its key
 * lives); or the failure. A failed attempt leaves nothing of ours behind. */
int dlock__attempt_acquire(dlock__claim *cl, dlock__lane *lane, int64_t ttl_ms);

/* A release handed a waiter the lock or a permit (docs/fair.md,
 * docs/semaphores.md): its message named our token, and `h` what it said
 * (a permit's slot too). If the lease end it found is the end our
 * last busy attempt was told, the hand-over came after that attempt, and
 * the key lives at least min(ttl, lease) from its start: returns 0 with the
 * claim held for that long (less the drift). Else, or if that is over
 * already, DLOCK_EBUSY: the waiter tries instead. */
int dlock__attempt_handed(dlock__claim *cl, const dlock__handover *h, int64_t ttl_ms);

/* Compare-and-delete; `publish` wakes waiters (cleanups do not). Decided as
 * soon as a majority answered. A release answered "a queue waits" (one
 * server) goes again as the kind's `queued` kind, whose release hands the
 * lock on; the claim stays one of that kind. 0, DLOCK_ENOTOWNER or the
 * failure. */
int dlock__attempt_release(dlock__claim *cl, dlock__lane *lane, bool publish);

/* Extends claims[0..k) (k <= DLOCK__BATCH_MAX, all of one client) to
 * ttls[j], pipelined: one round trip per node for all (with replicas on a
 * cluster, one per master the names live on). rcs[j]: 0 (the
 * validity is set again from this call's start), DLOCK_ENOTOWNER (the
 * validity is cleared; if the extend repaired a node, cl->repaired is set
 * and a cleanup release is due) or the failure. Never waits past a validity
 * that is still running. */
void dlock__attempt_extend(dlock__claim *const *claims, size_t k, dlock__lane *lane,
                           const int64_t *ttls, int *rcs);

/* Tally of one fan-out of a lock script: who said yes, who said no, who
 * failed, who has not answered yet. */
typedef struct dlock__tally {
    size_t quorum;
    size_t yes;      /* acquire: granted; release/extend: 1 */
    size_t no;       /* acquire: held by another; release/extend: 0 */
    size_t repaired; /* extend: our key put back on a node that lost it: no vote */
    size_t failed;   /* no answer in time, an error reply, a reply that made no sense */
    size_t pending;
    uint64_t fence;  /* acquire: the largest token granted */
    /* acquire, Redlock: every grant counted has that token, its proposal,
     * and no epoch key (a mutex's {1, fence, 0, 0}): nothing to write back */
    bool agreed;
    unsigned slot;   /* acquire: the slot that came with that token */
    int64_t pttl;    /* acquire: the smallest PTTL of the refusals */
    bool writer;     /* acquire: a refusal joined us to the waiting writers ({0, pttl, 1}) */
    bool shared;     /* acquire: a refusal found the name held shared ({0, pttl, 2}) */
    int64_t lease_end_ms; /* acquire: a waiter's place ends then ({0, pttl, 0, end}; 0: none) */
} dlock__tally;

/* Judges an acquire round that started at `start_ns`, from the replies of
 * the n nodes so far: fills *t (t->quorum set by the caller) and the end of
 * the validity, start + ttl - drift. Returns 0 when a majority granted and
 * that end is still ahead at `now_ns`, else DLOCK_EBUSY (the caller tells
 * busy from failed and late by the tally). */
int dlock__acquire_judge(dlock__tally *t, const dlock__node_result *results, size_t n,
                         int64_t ttl_ms, double drift_factor, int64_t start_ns, int64_t now_ns,
                         int64_t *valid_until_ns);

#endif
