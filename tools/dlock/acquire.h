/* A waiting acquire, and what the command shows while it waits. */
#ifndef DLOCK_CLI_ACQUIRE_H
#define DLOCK_CLI_ACQUIRE_H

#include <dlock.h>

struct cli;
struct cli_wait;

/* Acquires `name`, waiting as asked, through failing servers too (until
 * the wait's end); on a terminal shows a status line that says who holds
 * the lock, or what keeps us from the servers, and how long we have
 * waited. With -v it says, on any stderr, when a wait starts (and for
 * whom), each retry after a failure, and how long it took. Reports a
 * failure other than busy and cancel itself (cli_acquire_failed(), or
 * "NAME: gave up after 30.0 s: DETAIL"): the caller maps it to its exit
 * code. */
int cli_acquire(const struct cli *cli, dlock_client *client, const char *name,
                const struct cli_wait *how, dlock_lock **out);

#endif
