/* Secrets (passwords, tokens) are wiped from memory before it is freed. */
#ifndef DLOCK_WIPE_H
#define DLOCK_WIPE_H

#include <stddef.h>

/* Overwrites `len` bytes at `p` with zeroes in a way the compiler keeps. */
void dlock__wipe(void *p, size_t len);

#endif
