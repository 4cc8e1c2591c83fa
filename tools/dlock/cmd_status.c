/* status: is the lock held, by whom, for how long, and its fence. */
#include "cli.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* A semaphore's holders, one line each, by slot; or the shared holders. */
static void print_permits(const dlock_status *st)
{
    for (size_t i = 0; i < dlock_status_holders(st); i++) {
        const dlock_holder *h = dlock_status_holder(st, i);
        char since[32];
        cli_format_time(h->since_ms, since, sizeof(since));
        if (dlock_status_shared(st))
            printf("  shared: ");
        else
            printf("  slot %u: ", h->slot);
        if (h->pid)
            printf("held by %s pid %ld since %s", h->host, h->pid, since);
        else
            printf("held (no owner record)");
        printf(", expires in %.1f s, fence %" PRIu64 "\n", (double)h->ttl_ms / 1000, h->fence);
    }
}


/* The status on a line, without its end: the servers' own views follow. */
static void print_text(const char *name, const dlock_status *st)
{
    bool held = dlock_status_held(st);
    uint64_t fence = dlock_status_fence(st);
    if (dlock_status_limit(st) > 1) {
        printf("%s: %zu/%u held (semaphore)", name, dlock_status_holders(st),
               dlock_status_limit(st));
        return;
    }
    if (dlock_status_shared(st)) {
        printf("%s: held shared by %zu, fence %" PRIu64, name, dlock_status_holders(st), fence);
        return;
    }
    if (held) {
        char holder[400];
        dlock_status_describe(st, holder, sizeof(holder));
        printf("%s: %s", name, holder);
    } else {
        printf("%s: free", name);
    }
    if (fence)
        printf(", %sfence %" PRIu64, held ? "" : "last ", fence);
    if (dlock_status_nodes_answered(st) > 1)
        printf(" (on %u of %u servers that answered)", dlock_status_nodes_held(st),
               dlock_status_nodes_answered(st));
}

/* Several holders at once (a semaphore's permits, shared holders): each
 * one is in "holders", none is "the" holder. */
static bool several_holders(const dlock_status *st)
{
    return dlock_status_limit(st) > 1 || dlock_status_shared(st);
}

/* The top-level fields mean the same for every kind: "fence" is the last
 * fence issued for the name (a semaphore's largest, its permits keeping
 * their own), "holder" the one holder of a kind that has one, else null. */
static void print_json_fields(const dlock_status *st)
{
    const dlock_holder *h = several_holders(st) ? NULL : dlock_status_holder(st, 0);
    printf("\"held\":%s,\"ttl_ms\":%" PRId64 ",\"fence\":%" PRIu64 ",\"holder\":",
           dlock_status_held(st) ? "true" : "false", dlock_status_ttl_ms(st),
           dlock_status_fence(st));
    if (h) {
        printf("{\"host\":");
        cli_print_json_string(h->host);
        printf(",\"pid\":%ld,\"since_ms\":%" PRId64 "}", h->pid, h->since_ms);
    } else {
        printf("null");
    }
    printf(",\"limit\":%u,\"holders\":[", dlock_status_limit(st));
    for (size_t i = 0; i < dlock_status_holders(st); i++) {
        h = dlock_status_holder(st, i);
        printf("%s{\"host\":", i ? "," : "");
        cli_print_json_string(h->host);
        printf(",\"pid\":%ld,\"since_ms\":%" PRId64 ",\"ttl_ms\":%" PRId64
               ",\"slot\":%u,\"fence\":%" PRIu64 "}",
               h->pid, h->since_ms, h->ttl_ms, h->slot, h->fence);
    }
    printf("],\"shared\":%s", dlock_status_shared(st) ? "true" : "false");
}

/* A server's own view, in the shape of the majority's. */
static void print_node_json(const dlock_node_status *ns)
{
    printf("\"held\":%s,\"ttl_ms\":%" PRId64 ",\"fence\":%" PRIu64, ns->held ? "true" : "false",
           ns->ttl_ms, ns->fence);
}

static void print_node_text(const char *name, const dlock_node_status *ns)
{
    if (!ns->held)
        printf("%s: free", name);
    else if (ns->ttl_ms >= 0)
        printf("%s: held, expires in %.1f s", name, (double)ns->ttl_ms / 1000);
    else
        printf("%s: held, never expires (no TTL)", name);
    if (ns->fence)
        printf(", %sfence %" PRIu64, ns->held ? "" : "last ", ns->fence);
    putchar('\n');
}

/* A node's error as the library words it names its server first: the line
 * that names the server already says it once. */
static const char *without_label(const char *error, const char *server)
{
    size_t n = strlen(server);
    return strncmp(error, server, n) == 0 && strncmp(error + n, ": ", 2) == 0 ? error + n + 2
                                                                              : error;
}

/* With several servers: each one's own view, after the majority's. A
 * server that did not answer by the time the others had says why. */
static void print_nodes(dlock_client *client, const dlock_status *st, const char *name, bool json)
{
    size_t n = dlock_client_nodes(client);
    if (n < 2)
        return;
    if (json)
        printf(",\"nodes\":[");
    for (size_t i = 0; i < n; i++) {
        const dlock_node_status *ns = dlock_status_node(st, i);
        const char *server = dlock_client_node_label(client, i);
        if (json) {
            printf("%s{\"server\":", i ? "," : "");
            cli_print_json_string(server);
            if (ns->code < 0) {
                printf(",\"error\":");
                cli_print_json_string(without_label(ns->error, server));
            } else {
                putchar(',');
                print_node_json(ns);
            }
            putchar('}');
        } else if (ns->code < 0) {
            printf("  %s: %s\n", server, without_label(ns->error, server));
        } else {
            printf("  %s: ", server);
            print_node_text(name, ns);
        }
    }
    if (json)
        putchar(']');
}

/* --restart-delay: what is left of each server's delay. Text: a line per
 * server still in it; JSON: "restart_delay_ms", one number per server (null
 * where the check failed). */
static void print_restart_delays(dlock_client *client, bool json)
{
    size_t n = dlock_client_nodes(client);
    if (json)
        printf(",\"restart_delay_ms\":[");
    for (size_t i = 0; i < n; i++) {
        int64_t left = 0;
        int rc = dlock_restart_remaining(&left, client, i);
        const char *server = dlock_client_node_label(client, i);
        if (json && rc < 0)
            printf("%snull", i ? "," : "");
        else if (json)
            printf("%s%" PRId64, i ? "," : "", left);
        else if (rc < 0)
            printf("restart delay on %s unknown: %s\n", server, dlock_client_errmsg(client));
        else if (left > 0)
            printf("restart delay: %s lost its data recently; it grants nothing for %.1f s more\n",
                   server, (double)left / 1000);
    }
    if (json)
        putchar(']');
}

void cli_print_status(const char *name, const dlock_status *st, bool json)
{
    if (!json) {
        print_text(name, st);
        putchar('\n');
        if (several_holders(st))
            print_permits(st);
        return;
    }
    printf("\"name\":");
    cli_print_json_string(name);
    putchar(',');
    print_json_fields(st);
}

/* Now, in ms since the Unix epoch. */
static int64_t epoch_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static volatile sig_atomic_t interrupted;
static dlock_client *watched_client;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
    dlock_client_cancel(watched_client);
}

/* A server that failed this way may answer a period later. */
static bool passing(int rc)
{
    return rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT || rc == DLOCK_ENOQUORUM ||
           rc == DLOCK_ESERVER;
}

/* Until SIGINT or SIGTERM (exit 0): the status now, then a line at each
 * change. A server that fails is reported and asked again a period later;
 * any other failure (a key of another type, a refused user) ends it. */
static int watch(dlock_client *client, const char *name, bool json)
{
    struct sigaction sa = {.sa_handler = on_interrupt};
    struct timespec pause = {0, DLOCK_WATCH_PERIOD_MS * 1000000L};
    dlock_status *prev = NULL, *st = NULL;
    int rc = 0;
    watched_client = client;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    while (!interrupted) {
        char at[32];
        rc = dlock_status_watch(&st, client, name, prev, 0);
        if (rc == DLOCK_ECANCELED)
            break;
        if (rc == DLOCK_EWRONGTYPE) {
            rc = cli_wrong_type(client, name);
            break;
        }
        if (rc < 0 && !passing(rc)) {
            rc = cli_fail(client, rc, name);
            break;
        }
        if (rc < 0) {
            cli_fail(client, rc, name);
            nanosleep(&pause, NULL);
            continue;
        }
        cli_format_time(epoch_ms(), at, sizeof(at));
        if (json) {
            printf("{\"time\":\"%s\",", at);
            cli_print_status(name, st, true);
            printf("}\n");
        } else {
            printf("%s ", at);
            cli_print_status(name, st, false);
        }
        fflush(stdout);
        dlock_status_free(prev);
        prev = st;
    }
    dlock_status_free(prev);
    return rc > 0 ? rc : EXIT_DONE;
}

int cmd_status(struct cli *cli, int argc, char **argv)
{
    struct cli_command_opts o;
    dlock_client *client;
    dlock_status *st = NULL;
    int rc = cli_parse_command(&cli_commands[CLI_CMD_STATUS], argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? EXIT_DONE : rc;
    if ((rc = cli_open_client_for(cli, &o, &client)))
        return rc;
    if (o.watch) {
        rc = watch(client, o.name, o.json);
        dlock_client_close(client);
        return rc;
    }
    rc = dlock_status_query(&st, client, o.name);
    if (rc == DLOCK_EWRONGTYPE) {
        rc = cli_wrong_type(client, o.name);
    } else if (rc < 0) {
        rc = cli_fail(client, rc, o.name);
    } else {
        if (o.json)
            putchar('{');
        cli_print_status(o.name, st, o.json);
        print_nodes(client, st, o.name, o.json);
        if (o.restart_delay_ms)
            print_restart_delays(client, o.json);
        if (o.json)
            printf("}\n");
        rc = dlock_status_held(st) ? EXIT_DONE : EXIT_REFUSED;
        dlock_status_free(st);
    }
    dlock_client_close(client);
    return rc;
}
