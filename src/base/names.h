/* Lock names and the auxiliary keys that sit in the lock key's cluster slot.
 *
 * The rule: the lock key is the name K itself. Every auxiliary key (and
 * channel) of K is "{T}:dlock:KIND:K", where T is K's hash tag if K has a
 * valid one, else K itself. It hashes to K's slot (its tag is T), and it is
 * injective: T contains no '}', so the first '}' ends T, KIND contains no
 * ':', and what follows is K. Names that look like an auxiliary key ("{X}"
 * at the start, then ":dlock:") are refused, so no lock key is another
 * name's auxiliary key. */
#ifndef DLOCK_NAMES_H
#define DLOCK_NAMES_H

#include <stddef.h>

typedef struct dlock__keys {
    char *lock;    /* the name itself */
    char *fence;   /* {T}:dlock:fence:K */
    char *owner;   /* {T}:dlock:owner:K */
    char *channel; /* {T}:dlock:released:K */
    char *freed;   /* {T}:dlock:freed:K (Redlock: the largest fence released) */
} dlock__keys;

/* Checks `name` and derives its keys. A name with a brace needs a valid
 * hash tag (a '{', then at least one byte, then '}'). Returns 0,
 * DLOCK_EINVAL (reason in `why`) or DLOCK_ENOMEM. */
int dlock__keys_make(dlock__keys *keys, const char *name, char *why, size_t why_len);
void dlock__keys_clear(dlock__keys *keys);

/* The auxiliary key of kind `kind` (lower-case letters, no ':') of a name
 * that dlock__keys_make() accepted: malloc'ed, or NULL without memory. */
char *dlock__aux_key(const char *name, const char *kind);

#endif
