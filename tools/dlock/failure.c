/* Library failures: the exit code of each error code, and the message. */
#include "failure.h"

#include "exit_codes.h"
#include "messages.h"

#include <string.h>

int cli_exit_code(int rc)
{
    switch (rc) {
    case 0:
        return EXIT_DONE;
    case DLOCK_ENOTOWNER:
    case DLOCK_ELOST:
        return EXIT_REFUSED;
    case DLOCK_EBUSY:
        return EXIT_BUSY;
    case DLOCK_EINVAL:
        return EXIT_USAGE;
    case DLOCK_EPROTO:
        return EXIT_PROTOCOL;
    case DLOCK_EAUTH:
    case DLOCK_ETLS:
        return EXIT_AUTH;
    default:
        return EXIT_UNAVAILABLE;
    }
}

int cli_fail(dlock_client *client, int rc, const char *what)
{
    const char *detail = client ? dlock_client_errmsg(client) : "";
    if (*detail)
        cli_error("%s: %s", what, detail);
    else
        cli_error("%s: %s", what, dlock_strerror(rc));
    return cli_exit_code(rc);
}

/* The name holds a hash, a list...: say so plainly, with the type when the
 * server's "WRONGTYPE NAME holds a hash, not a lock" is in the detail. */
int cli_wrong_type(dlock_client *client, const char *name)
{
    const char *said = strstr(dlock_client_errmsg(client), "WRONGTYPE ");
    if (said)
        cli_error("%.*s (WRONGTYPE)", (int)strcspn(said + 10, ";"), said + 10);
    else
        cli_error("%s holds a value of another type (a hash, list...), not a lock (WRONGTYPE)",
                  name);
    return cli_exit_code(DLOCK_EWRONGTYPE);
}

int cli_acquire_failed(dlock_client *client, int rc, const char *name)
{
    const char *detail = dlock_client_errmsg(client);
    size_t len = strlen(name);
    if (rc != DLOCK_EWRONGTYPE)
        return cli_fail(client, rc, name);
    /* The library names the kind found and the kind asked for ("NAME is a
     * semaphore of 3 permits, not a mutex"), or quotes the server's
     * "WRONGTYPE NAME holds a hash, not a lock". */
    if (strstr(detail, "WRONGTYPE "))
        return cli_wrong_type(client, name);
    if (strncmp(detail, name, len) == 0 && detail[len] == ' ')
        cli_error("%s", detail);
    else
        cli_error("%s: %s", name, detail);
    return cli_exit_code(rc);
}
