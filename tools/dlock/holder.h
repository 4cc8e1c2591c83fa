/* Who holds a lock, in the words every message uses. */
#ifndef DLOCK_CLI_HOLDER_H
#define DLOCK_CLI_HOLDER_H

#include <dlock.h>
#include <stdbool.h>
#include <stddef.h>

struct cli;

/* Who holds `name`, in dlock_status_describe()'s words into out; false if nobody does (any more) or
 * the servers could not say. */
bool cli_query_holder(dlock_client *client, const char *name, char *out, size_t len);

/* After DLOCK_EBUSY: says who holds `name` ("NAME is busy: held by HOST pid
 * PID since TIME, expires in 12.3 s") and returns busy_code. */
int cli_busy(const struct cli *cli, dlock_client *client, const char *name, int busy_code);

#endif
