/* Lock names and the auxiliary keys that sit in the lock key's cluster slot. */
#ifndef DLOCK_NAMES_H
#define DLOCK_NAMES_H

#include <stddef.h>

typedef struct dlock__keys {
    char *lock;    /* the name itself */
    char *fence;   /* PREFIX:fence */
    char *owner;   /* PREFIX:owner */
    char *channel; /* PREFIX:released */
} dlock__keys;

/* Checks `name` and derives its keys (DESIGN rule: a valid hash tag keeps
 * the name as prefix; no brace at all wraps it in braces; any other brace,
 * or a name ending in an auxiliary suffix, is refused). Returns 0,
 * DLOCK_EINVAL (reason in `why`) or DLOCK_ENOMEM. */
int dlock__keys_make(dlock__keys *keys, const char *name, char *why, size_t why_len);
void dlock__keys_clear(dlock__keys *keys);

#endif
