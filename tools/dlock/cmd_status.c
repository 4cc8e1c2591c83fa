/* status: is the lock held, by whom, for how long, and its fence. */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void format_time(int64_t ms, char *out, size_t len)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void print_text(const char *name, const dlock_status *st)
{
    char since[32];
    if (!st->held) {
        printf("%s: free", name);
    } else if (st->has_owner) {
        format_time(st->since_ms, since, sizeof(since));
        printf("%s: held by %s pid %ld since %s", name, st->host, st->pid, since);
    } else {
        printf("%s: held (not by dlock: no owner record)", name);
    }
    if (st->held && st->pttl_ms >= 0)
        printf(", expires in %.1f s", (double)st->pttl_ms / 1000);
    else if (st->held)
        printf(", never expires (no TTL)");
    if (st->fence)
        printf(", %sfence %" PRIu64, st->held ? "" : "last ", st->fence);
    if (st->nodes_answered > 1)
        printf(" (on %u of %u servers that answered)", st->nodes_held, st->nodes_answered);
    putchar('\n');
}

static void print_json_fields(const dlock_status *st)
{
    printf("\"held\":%s,\"ttl_ms\":%" PRId64 ",\"fence\":%" PRIu64 ",\"holder\":",
           st->held ? "true" : "false", st->pttl_ms, st->fence);
    if (st->has_owner) {
        printf("{\"host\":");
        cli_print_json_string(st->host);
        printf(",\"pid\":%ld,\"since_ms\":%" PRId64 "}", st->pid, st->since_ms);
    } else {
        printf("null");
    }
}

/* With several servers: each one's own view, after the majority's. */
static void print_nodes(dlock_client *client, const char *name, bool json)
{
    size_t n = dlock_client_nodes(client);
    if (n < 2)
        return;
    if (json)
        printf(",\"nodes\":[");
    for (size_t i = 0; i < n; i++) {
        dlock_status st;
        int rc = dlock_status_query_node(&st, client, name, i);
        const char *server = dlock_client_node_label(client, i);
        if (json) {
            printf("%s{\"server\":", i ? "," : "");
            cli_print_json_string(server);
            if (rc < 0) {
                printf(",\"error\":");
                cli_print_json_string(dlock_strerror(rc));
            } else {
                putchar(',');
                print_json_fields(&st);
            }
            putchar('}');
        } else if (rc < 0) {
            printf("  %s: %s\n", server, dlock_strerror(rc));
        } else {
            printf("  %s: ", server);
            print_text(name, &st);
        }
    }
    if (json)
        putchar(']');
}

static void print_json(const char *name, const dlock_status *st)
{
    printf("{\"name\":");
    cli_print_json_string(name);
    putchar(',');
    print_json_fields(st);
}

int cmd_status(struct cli *cli, int argc, char **argv)
{
    struct cli_command_opts o;
    dlock_client *client;
    dlock_status st;
    int rc = cli_parse_command(&cli_command_status, argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? EXIT_DONE : rc;
    if ((rc = cli_open_client(cli, &client)))
        return rc;
    rc = dlock_status_query(&st, client, o.name);
    if (rc < 0) {
        rc = cli_fail(client, rc, o.name);
    } else {
        (o.json ? print_json : print_text)(o.name, &st);
        print_nodes(client, o.name, o.json);
        if (o.json)
            printf("}\n");
        rc = st.held ? EXIT_DONE : EXIT_REFUSED;
    }
    dlock_client_close(client);
    return rc;
}
