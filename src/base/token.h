/* Owner tokens: 128 random bits from getrandom(), lower-case hex. */
#ifndef DLOCK_TOKEN_H
#define DLOCK_TOKEN_H

#include "dlock.h"

#include <sys/types.h>

/* Random bytes fetched from the kernel in batches, in a page that the kernel
 * wipes in a forked child (MADV_WIPEONFORK): parent and child can never hand
 * out the same token. Also caches the pid, wiped the same way. */
typedef struct dlock__token_pool dlock__token_pool;

/* NULL when no such page can be had: then every token is one getrandom(). */
dlock__token_pool *dlock__token_pool_new(void);
void dlock__token_pool_free(dlock__token_pool *pool);

/* Writes DLOCK_TOKEN_LEN hex characters and a NUL. Returns 0, or
 * DLOCK_ESYSTEM when the kernel gives no random bytes: never a weaker
 * fallback. `pool` may be NULL. */
int dlock__token_new(dlock__token_pool *pool, char out[DLOCK_TOKEN_LEN + 1]);

/* getpid(), without the system call while the pool's copy is valid. */
pid_t dlock__token_pool_pid(dlock__token_pool *pool);

/* 1 if `s` looks like a token: DLOCK_TOKEN_LEN lower-case hex characters. */
int dlock__token_valid(const char *s);

#endif
