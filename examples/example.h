/* What the semaphore and shared examples do alike around their hold: read
 * the numbers of their command line and open a client on its URL. (mutex.c
 * stands alone: it is the one to copy into a program of your own, and the
 * install tests build it by itself.) */
#ifndef DLOCK_EXAMPLE_H
#define DLOCK_EXAMPLE_H

#include <dlock.h>

/* The whole number `s` is, if it is one and not negative; else -1. */
long example_number(const char *s);

/* A client on the one server at `url`, or NULL after saying why on stderr
 * as `prog`. */
dlock_client *example_client(const char *prog, const char *url);

#endif
