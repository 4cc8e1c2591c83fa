/* A library failure in the command's words, and its exit code. */
#ifndef DLOCK_CLI_FAILURE_H
#define DLOCK_CLI_FAILURE_H

#include <dlock.h>

/* The exit code for a library error code. */
int cli_exit_code(int rc);

/* Reports a library failure ("dlock: what: detail") and returns its exit code. */
int cli_fail(dlock_client *client, int rc, const char *what);

/* "NAME holds a hash, not a lock (WRONGTYPE)", after a status query that
 * found it; returns the exit code. */
int cli_wrong_type(dlock_client *client, const char *name);

/* Reports a failed acquire of `name` (not busy) as cli_fail() does, but a
 * name that holds a hash, a list... in status's words. */
int cli_acquire_failed(dlock_client *client, int rc, const char *name);

#endif
