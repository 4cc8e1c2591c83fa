/* The kinds of claim (kinds.c): what a primitive's claim sends, and the
 * primitives there are. */
#ifndef DLOCK_KINDS_H
#define DLOCK_KINDS_H

#include "scripts.h"

#include <stdbool.h>

#define DLOCK__KIND_AUX_MAX 5

/* A claim's kind: the primitive it is (mutex, semaphore, ...), told by the
 * scripts its acquire, release and extend send. Every script of a kind
 * takes the mutex's KEYS and ARGV for the same step (see scripts.h), then
 * the kind's auxiliary keys in `aux` order (dlock__aux_key(name, word)),
 * and an acquire of a kind with a limit takes the claim's limit as its last
 * ARGV. So the mutex, with no auxiliary keys and no limit, sends exactly
 * the words it always sent. Reading votes, the majority, validity, cleanup
 * and the fence write-back are the same for every kind; a grant may name a
 * slot ({1, fence, slot}). The status script is for the API's status. */
typedef struct dlock__kind {
    const char *name; /* "mutex", "semaphore", ...: for messages */
    enum dlock__script_id acquire, release, extend, status;
    const char *aux[DLOCK__KIND_AUX_MAX + 1]; /* NULL-terminated kind-words */
    bool limited;                              /* acquire sends the claim's limit */
    bool queued; /* waiters queue: a release wakes only "next:" + the head's token */
    /* How many of `aux`, from the first, the extend takes: a key that does
     * not exist makes a cluster answer TRYAGAIN while the slot migrates,
     * and a renewal must go through (ASK) then. */
    unsigned extend_aux;
    /* With several servers, the fence write-back of a grant raises the
     * name's epoch key too: the fence of the shared holders that come
     * after it (docs/shared.md). */
    bool epoch;
    /* With several servers, the release of a held lock raises the name's
     * key `freed` to its fence, and the extend's repair reads it: a repair
     * never brings our key back after our own release (mutex_extend.lua). */
    bool freed;
} dlock__kind;

/* The exclusive lock: NAME is a string holding the holder's token. */
extern const dlock__kind dlock__kind_mutex;
/* The mutex for an acquire that does not wait: it marks no writer's wait. */
extern const dlock__kind dlock__kind_mutex_try;
/* The counting semaphore: NAME is a sorted set of up to `limit` permits. */
extern const dlock__kind dlock__kind_semaphore;
/* The fair lock: a mutex whose waiters queue, each with a presence lease
 * of `limit` ms; the release wakes the head only. */
extern const dlock__kind dlock__kind_fair;
/* A shared holder: any number together, never with an exclusive one. */
extern const dlock__kind dlock__kind_shared;

#endif
