/* list: the locks held now, with their holders. */
#include "cli.h"

#include <stdio.h>

/* One lock, or nothing if it was released since the list was made. */
static int show(dlock_client *client, const char *name, bool json, size_t *shown)
{
    dlock_status *st = NULL;
    int rc = dlock_status_query(&st, client, name);
    if (rc == DLOCK_EWRONGTYPE)
        return 0; /* a record without its lock: another client took the name since */
    if (rc < 0)
        return cli_fail(client, rc, name);
    if (dlock_status_held(st)) {
        if (json) {
            printf("%s{", *shown ? "," : "");
            cli_print_status(name, st, true);
            putchar('}');
        } else {
            cli_print_status(name, st, false);
        }
        ++*shown;
    }
    dlock_status_free(st);
    return 0;
}

int cmd_list(struct cli *cli, int argc, char **argv)
{
    struct cli_command_opts o;
    dlock_client *client;
    dlock_names *names = NULL;
    size_t shown = 0;
    int rc = cli_parse_command(&cli_commands[CLI_CMD_LIST], argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? EXIT_DONE : rc;
    if ((rc = cli_open_client(cli, &client)))
        return rc;
    rc = dlock_list_names(&names, client, o.name);
    if (rc < 0) {
        rc = cli_fail(client, rc, "list");
    } else {
        if (o.json)
            putchar('[');
        for (size_t i = 0; rc == 0 && i < dlock_names_count(names); i++)
            rc = show(client, dlock_names_at(names, i), o.json, &shown);
        if (o.json)
            printf("]\n");
        cli_debug(cli, "%zu lock%s held", shown, shown == 1 ? "" : "s");
        dlock_names_free(names);
    }
    dlock_client_close(client);
    return rc;
}
