/* Owner tokens: 128 random bits from getrandom(), lower-case hex. */
#ifndef DLOCK_TOKEN_H
#define DLOCK_TOKEN_H

#include "dlock.h"

/* Writes DLOCK_TOKEN_LEN hex characters and a NUL. Returns 0, or
 * DLOCK_ESYSTEM when the kernel gives no random bytes: never a weaker
 * fallback. */
int dlock__token_new(char out[DLOCK_TOKEN_LEN + 1]);

/* 1 if `s` looks like a token: DLOCK_TOKEN_LEN lower-case hex characters. */
int dlock__token_valid(const char *s);

#endif
