/* acquire, release, extend: a lock held across commands of a script, by
 * its token. */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int cmd_acquire(struct cli *cli, int argc, char **argv)
{
    struct cli_command_opts o;
    dlock_client *client;
    dlock_lock *lock = NULL;
    int rc = cli_parse_command(&cli_commands[CLI_CMD_ACQUIRE], argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? EXIT_DONE : rc;
    if ((rc = cli_open_client_for(cli, &o, &client)))
        return rc;
    rc = cli_acquire(cli, client, o.name, &o.wait, &lock);
    if (rc == DLOCK_EBUSY) {
        rc = cli_busy(cli, client, o.name, o.busy_code);
    } else if (rc < 0) {
        rc = cli_exit_code(rc); /* cli_acquire() said why */
    } else if (o.json) {
        printf("{\"name\":");
        cli_print_json_string(dlock_lock_name(lock));
        printf(",\"token\":\"%s\",\"fence\":%" PRIu64 ",\"validity_ms\":%" PRId64
               ",\"slot\":%u}\n",
               dlock_lock_token(lock), dlock_lock_fence(lock), dlock_lock_validity_ms(lock),
               dlock_lock_slot(lock));
    } else {
        printf("%s\n", dlock_lock_token(lock));
        cli_debug(cli, "acquired %s, fence %" PRIu64 ", expires in %.1f s", o.name,
                  dlock_lock_fence(lock), (double)dlock_lock_validity_ms(lock) / 1000);
    }
    dlock_lock_free(lock); /* the lock stays: it is released by token later */
    dlock_client_close(client);
    return rc;
}

/* release and extend: adopt the token, act, map "not ours" to exit 1. */
static int by_token(struct cli *cli, const struct cli_command *command, int argc, char **argv,
                    bool extend)
{
    struct cli_command_opts o;
    dlock_client *client;
    dlock_lock *lock = NULL;
    int rc = cli_parse_command(command, argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? EXIT_DONE : rc;
    if ((rc = cli_open_client_for(cli, &o, &client)))
        return rc;
    rc = dlock_lock_adopt(&lock, client, o.name, o.token);
    if (rc == 0)
        rc = extend ? dlock_lock_extend(lock, o.wait.ttl_ms) : dlock_lock_release(lock);
    if (rc == DLOCK_ENOTOWNER) {
        cli_info(cli, "%s: not %s: the token does not own the lock (anymore)", o.name,
                 extend ? "extended" : "released");
        rc = EXIT_REFUSED;
    } else if (rc < 0) {
        rc = cli_fail(client, rc, command->name);
    } else {
        cli_debug(cli, "%s %s", extend ? "extended" : "released", o.name);
    }
    dlock_lock_free(lock);
    dlock_client_close(client);
    return rc;
}

int cmd_release(struct cli *cli, int argc, char **argv)
{
    return by_token(cli, &cli_commands[CLI_CMD_RELEASE], argc, argv, false);
}

int cmd_extend(struct cli *cli, int argc, char **argv)
{
    return by_token(cli, &cli_commands[CLI_CMD_EXTEND], argc, argv, true);
}
