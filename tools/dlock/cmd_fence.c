/* check and guard: the fence at the resource. check asks whether a token is
 * still the newest; guard installs the Redis guard (docs/fencing.md). */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A fencing token as dlock prints it: decimal digits, 0 to 2^64 - 1.
 * Returns 0, or -1 if `s` is not one. */
static int parse_fence(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p))
            return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (!*s || *end || errno)
        return -1;
    *out = v;
    return 0;
}

int cmd_check(struct cli *cli, int argc, char **argv)
{
    struct cli_command_opts o;
    dlock_client *client;
    uint64_t fence;
    int rc = cli_parse_command(&cli_commands[CLI_CMD_CHECK], argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? EXIT_DONE : rc;
    if (parse_fence(o.token, &fence) < 0)
        return cli_usage_error("check ", "FENCE must be a fencing token (digits, as in "
                               "$DLOCK_FENCE), not '%s'", o.token);
    if ((rc = cli_open_client_for(cli, &o, &client)))
        return rc;
    rc = dlock_fence_check(client, o.name, fence);
    if (rc == DLOCK_EWRONGTYPE) {
        rc = cli_wrong_type(client, o.name);
    } else if (rc < 0) {
        rc = cli_fail(client, rc, o.name);
    } else if (rc == 0) {
        cli_info(cli, "%s: fence %" PRIu64 " is not current: the lock is free or was taken "
                 "again since", o.name, fence);
        rc = EXIT_REFUSED;
    } else {
        cli_debug(cli, "%s: fence %" PRIu64 " is current", o.name, fence);
        rc = EXIT_DONE;
    }
    dlock_client_close(client);
    return rc;
}

int cmd_guard(struct cli *cli, int argc, char **argv)
{
    struct cli_command_opts o;
    dlock_client *client;
    int rc = cli_parse_command(&cli_commands[CLI_CMD_GUARD], argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? EXIT_DONE : rc;
    if (strcmp(o.name, "load-redis") != 0)
        return cli_usage_error("guard ", "unknown action '%s' (load-redis)", o.name);
    if ((rc = cli_open_client_for(cli, &o, &client)))
        return rc;
    rc = dlock_guard_load_redis(client);
    if (rc < 0)
        rc = cli_fail(client, rc, "guard load-redis");
    else
        cli_debug(cli, "loaded the function library dlock_fence into %zu server(s)",
                  dlock_client_nodes(client));
    dlock_client_close(client);
    return rc;
}
