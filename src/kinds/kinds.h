/* The kinds of lock, one file each (mutex.c, semaphore.c, fair.c,
 * shared.c), each a dlock__kind of hooks (engine/kind.h), and the registry
 * (registry.c) that finds a kind by what it is asked. Between the engine,
 * which calls the hooks, and the API, which chooses a kind. */
#ifndef DLOCK_KINDS_H
#define DLOCK_KINDS_H

#include "attempt.h"

#include <stdbool.h>
#include <stddef.h>

/* A kind's own part of a claim: each field is one kind's, set by its
 * setup() or its hooks and read by its hooks only. */
struct dlock__kind_params {
    bool held_shared;  /* mutex: an acquire that waits found its name held shared */
    bool writer;       /* mutex: it joined the waiting writers of that name */
    unsigned permits;  /* semaphore: how many may hold the name at once */
    unsigned lease_ms; /* fair, a mutex that queues, a semaphore that waits (else 0):
                          a waiter's presence lease */
};

/* The exclusive lock: NAME is a string holding the holder's token. */
extern const dlock__kind dlock__kind_mutex;
/* The mutex for an acquire that does not wait: it marks no writer's wait. */
extern const dlock__kind dlock__kind_mutex_try;
/* The counting semaphore: NAME is a sorted set of up to `permits` permits. */
extern const dlock__kind dlock__kind_semaphore;
/* The fair lock: a mutex whose waiters queue, each with a presence lease;
 * the release hands the lock to the head. */
extern const dlock__kind dlock__kind_fair;
/* A mutex that waited on one server and was refused: from then on it is a
 * fair waiter (its later tries queue, its release hands on); and the kind
 * that releases a mutex held while a queue waits. */
extern const dlock__kind dlock__kind_mutex_queued;
/* A shared holder: any number together, never with an exclusive one. */
extern const dlock__kind dlock__kind_shared;

/* The waiters' queue (queue.c), of the fair lock, a mutex that queued and
 * the semaphore: the hooks channel, message and away_max_ms of
 * dlock__kind, and the setup of a waiter's presence lease (0: the
 * default; the API checked its range). */
char *dlock__queue_channel(const dlock__claim *cl);
enum dlock__wake dlock__queue_message(const dlock__claim *cl, const char *msg, size_t len,
                                      dlock__handover *h);
int64_t dlock__queue_away_max_ms(const dlock__claim *cl);
void dlock__queue_setup(dlock__claim *cl, int64_t lease_ms);
/* The acquire's last word for a waiter that a release may hand the lock
 * or a permit to: unless its grant must pass the restart check or WAIT,
 * which a release cannot run for it (it takes its grant itself then). */
void dlock__queue_words_handover(const dlock__claim *cl, dlock__words *w);

/* The message hook of the kinds that wait on the name's channel (queue.c,
 * beside the queue's): a release's "writer:TOKEN" wakes that waiting
 * writer alone (helpers.lua, release_message()); any other message wakes
 * every one. */
enum dlock__wake dlock__writers_message(const dlock__claim *cl, const char *msg, size_t len,
                                        dlock__handover *h);

/* Every script a connection loads, NULL-terminated: each kind's, and the
 * fence write-back the engine sends for a grant of any kind. */
const char *const *dlock__kinds_scripts(void);

/* The kind an adopted handle that a mutex's call answered `rc` tries
 * instead (dlock__kind.adopted_on), or NULL. */
const dlock__kind *dlock__kinds_adopted_on(int rc);

/* The kind whose own status script reads a name that the mutex's status
 * found of Redis type `type`, held with (`owned`) or without an owner
 * record, or NULL: the mutex's status said all. */
const dlock__kind *dlock__kinds_reading(const char *type, bool owned);

/* The kind a held name's status shows, its words ("is held shared") into
 * out; NULL when none says. */
const dlock__kind *dlock__kinds_found(const dlock_status *st, char *out, size_t len);

/* The kind asked for, as a refusal names it: "a semaphore of 3 permits". */
void dlock__kinds_describe(const dlock__claim *cl, char *out, size_t len);

#endif
