/* The client options from the global ones (servers, user, TLS, audit) and
 * the command's (--replicas, --restart-delay); the password from the
 * environment, never from argv. */
#include "client_open.h"

#include "command_options.h"
#include "failure.h"
#include "global_options.h"
#include "messages.h"

#include <stdlib.h>

static void client_options(const struct cli *cli, int inspect, const struct cli_command_opts *o,
                           dlock_client_options *opts)
{
    opts->inspect = inspect;
    opts->replicas = o ? o->replicas : 0;
    opts->restart_delay_ms = o ? o->restart_delay_ms : 0;
    opts->urls = cli->urls;
    opts->n_urls = cli->n_urls;
    opts->user = cli->user;
    opts->password = getenv("DLOCK_PASSWORD");
    opts->tls = cli->tls;
    opts->tls_ca_file = cli->cacert;
    opts->tls_ca_dir = cli->cacertdir;
    opts->tls_cert_file = cli->cert;
    opts->tls_key_file = cli->key;
    opts->tls_sni = cli->sni;
    opts->tls_insecure = cli->insecure;
    opts->audit = cli->audit;
}

static int open_client(const struct cli *cli, int inspect, const struct cli_command_opts *o,
                       dlock_client **out)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    char why[512];
    int rc;
    client_options(cli, inspect, o, &opts);
    if (cli->insecure)
        cli_error("--insecure: server certificates and names are not verified");
    rc = dlock_client_open(out, &opts, why, sizeof(why));
    if (rc < 0) {
        cli_error("%s", why);
        return cli_exit_code(rc);
    }
    return 0;
}

int cli_open_client(const struct cli *cli, dlock_client **out)
{
    return open_client(cli, 0, NULL, out);
}

int cli_open_inspector(const struct cli *cli, const struct cli_command_opts *o,
                       dlock_client **out)
{
    return open_client(cli, 1, o, out);
}

int cli_open_client_for(const struct cli *cli, const struct cli_command_opts *o,
                        dlock_client **out)
{
    return open_client(cli, 0, o, out);
}

int cli_open_quietly(const struct cli *cli, dlock_client **out)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    char why[512];
    client_options(cli, 0, NULL, &opts);
    return dlock_client_open(out, &opts, why, sizeof(why));
}
