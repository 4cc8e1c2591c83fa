/* The options of the dlock command, in the order --help shows them, and
 * getopt's view of them. */
#include "option_table.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define RUN CLI_IN(CLI_CMD_RUN)
#define ACQUIRE CLI_IN(CLI_CMD_ACQUIRE)
#define EXTEND CLI_IN(CLI_CMD_EXTEND)
#define STATUS CLI_IN(CLI_CMD_STATUS)
#define LIST CLI_IN(CLI_CMD_LIST)
#define DOCTOR CLI_IN(CLI_CMD_DOCTOR)
#define AUDIT CLI_IN(CLI_CMD_AUDIT)

const struct cli_option cli_options[] = {
    /* before the command */
    {'r', "redis", "URL", CLI_GLOBAL, 0,
     "server: redis://[[user]:password@]host[:port][/db] (any node of a Redis Cluster too), "
     "unix:///path[?db=N] or redis-sentinel://host[:port][,host[:port]...][/db]#name "
     "(rediss:// and rediss-sentinel:// for TLS); default $DLOCK_REDIS (comma-separated), "
     "else redis://127.0.0.1:6379. Three or more independent servers: Redlock (a majority "
     "holds the lock)"},
    {CLI_KEY_USER, "user", "NAME", CLI_GLOBAL, 0,
     "ACL user; the password comes from the URL or $DLOCK_PASSWORD"},
    {CLI_KEY_TLS, "tls", NULL, CLI_GLOBAL, 0,
     "TLS for every server (rediss:// URLs use it anyway)"},
    {CLI_KEY_CACERT, "cacert", "FILE", CLI_GLOBAL, 0,
     "CA certificates to verify servers with (default: the system's)"},
    {CLI_KEY_CACERTDIR, "cacertdir", "DIR", CLI_GLOBAL, 0,
     "a directory of hashed CA certificates"},
    {CLI_KEY_CERT, "cert", "FILE", CLI_GLOBAL, 0,
     "client certificate, for servers that ask for one"},
    {CLI_KEY_KEY, "key", "FILE", CLI_GLOBAL, 0, "its private key"},
    {CLI_KEY_SNI, "sni", "NAME", CLI_GLOBAL, 0,
     "server name to send and verify (default: the URL's host)"},
    {CLI_KEY_INSECURE, "insecure", NULL, CLI_GLOBAL, 0,
     "do not verify certificates or names (testing only)"},
    {CLI_KEY_AUDIT, "audit", NULL, CLI_GLOBAL, 0,
     "record every grant, extend, release and loss in the name's audit stream (also "
     "$DLOCK_AUDIT=1); read it with 'dlock audit'"},
    {'v', "verbose", NULL, CLI_GLOBAL, 0, "say what happens, waits too (for whom, how long)"},
    {'q', "quiet", NULL, CLI_GLOBAL, 0, "no messages but errors"},
    {'h', "help", NULL, CLI_GLOBAL, 0, "this help; 'dlock COMMAND --help' for a command's"},
    {CLI_KEY_VERSION, "version", NULL, CLI_GLOBAL, 0, "print the version"},

    /* the commands' */
    {'t', "ttl", "DUR", RUN, 0,
     "lock time to live, 10ms to 24.8 days (default 30s); renewed every TTL/3"},
    {'t', "ttl", "DUR", ACQUIRE, 0, "how long the lock lives, 10ms to 24.8 days (default 30s)"},
    {'t', "ttl", "DUR", EXTEND, 0,
     "the lock's new time to live, 10ms to 24.8 days (default 30s)"},
    {'t', "ttl", "DUR", DOCTOR, 0, "the TTL your locks use, to judge round trips (default 30s)"},
    {'w', "wait", "DUR", RUN | ACQUIRE, 0,
     "wait at most this long for a busy lock, and through failing servers (default: forever)"},
    {'n', "nowait", NULL, RUN | ACQUIRE, 0, "do not wait: one try (same as -w 0)"},
    {'E', "conflict-exit-code", "CODE", RUN | ACQUIRE, 0,
     "exit code when busy, 0 to 255 (default 75)"},
    {CLI_KEY_KILL_AFTER, "kill-after", "DUR", RUN, 0,
     "SIGKILL this long after SIGTERM on loss (default 5s)"},
    {CLI_KEY_MAX_HOLD, "max-hold", "DUR", RUN, 0,
     "hold the lock at most this long (10ms or more; the TTL too, if shorter), then stop the "
     "command"},
    {'c', NULL, "CMD", RUN, CLI_AFTER_NAME, "run CMD with /bin/sh -c"},
    {CLI_KEY_SINCE, "since", "DUR", AUDIT, 0,
     "only the entries of the last DUR (default: all kept)"},
    {CLI_KEY_JSON, "json", NULL, ACQUIRE, 0,
     "print name, token, fence, validity_ms and slot as JSON"},
    {CLI_KEY_JSON, "json", NULL, STATUS, 0, "print it as a JSON object"},
    {CLI_KEY_JSON, "json", NULL, LIST, 0, "print a JSON array of objects, one per lock"},
    {CLI_KEY_JSON, "json", NULL, DOCTOR, 0, "print {\"findings\":[...]} as JSON"},
    {CLI_KEY_JSON, "json", NULL, AUDIT, 0, "print the holds and the findings as a JSON object"},
    {CLI_KEY_WATCH, "watch", NULL, STATUS, 0,
     "print a line (with --json, an object) at once and at every change of holder, until "
     "interrupted: a release is seen when it is published, an acquisition or an expiry "
     "within the check period (250 ms)"},
    {CLI_KEY_PERMITS, "permits", "N", RUN | ACQUIRE, 0,
     "take one of N permits of the semaphore NAME (1 to 1024; 1: the lock alone, the "
     "default; one server only)"},
    {CLI_KEY_FAIR, "fair", NULL, RUN | ACQUIRE, 0,
     "wait in a queue: first come, first served (one server; not with --permits N or -s)"},
    {CLI_KEY_LEASE, "lease", "DUR", RUN | ACQUIRE, 0,
     "with --fair or --permits N: how long a silent waiter keeps its place (30ms to 1h, "
     "default 2s)"},
    {'s', "shared", NULL, RUN | ACQUIRE, 0,
     "hold the lock shared: with other shared holders, never with an exclusive one (a "
     "waiting one keeps new ones out); not with --fair or --permits N"},
    {CLI_KEY_REPLICAS, "replicas", "K", RUN, 0,
     "a grant or extend counts only once K replicas (0 to 1000) acknowledged it (WAIT)"},
    {CLI_KEY_REPLICAS, "replicas", "K", ACQUIRE, 0,
     "the grant counts only once K replicas (0 to 1000) acknowledged it"},
    {CLI_KEY_REPLICAS, "replicas", "K", EXTEND, 0,
     "the extend counts only once K replicas (0 to 1000) acknowledged it"},
    {CLI_KEY_REPLICAS, "replicas", "K", DOCTOR, 0,
     "the --replicas your locks use: replicas beyond K are reported as asynchronous "
     "(ASYNC_REPLICAS)"},
    {CLI_KEY_RESTART_DELAY, "restart-delay", "DUR", RUN | ACQUIRE, 0,
     "a server that lost its data less than DUR ago grants nothing (set it to the longest "
     "TTL in use)"},
    {CLI_KEY_RESTART_DELAY, "restart-delay", "DUR", STATUS, 0,
     "also what is left of each server's restart delay"},
    {CLI_KEY_STATS_JSON, "stats-json", "FILE", RUN, 0,
     "on exit, write the client's counters to FILE as JSON"},
    {CLI_KEY_METRICS_FILE, "metrics-file", "FILE", RUN, 0,
     "on exit, replace FILE with the client's counters as Prometheus text (node_exporter's "
     "textfile collector)"},
    {CLI_KEY_SVG, "svg", "FILE", AUDIT, 0, "also draw the holders over time as an SVG timeline"},
    {'h', "help", NULL, CLI_EVERY_COMMAND, 0, "this help"},
    {0, NULL, NULL, 0, 0, NULL},
};

const struct cli_option *cli_option_find(unsigned where, int key)
{
    for (const struct cli_option *o = cli_options; o->key; o++)
        if (o->key == key && (o->where & where))
            return o;
    return NULL;
}

bool cli_option_has_letter(const struct cli_option *o)
{
    return o->key < 256;
}

/* Whether `text`, as typed ("-r", "--redis" or "--redis=URL"), is o. */
static bool typed_as(const struct cli_option *o, const char *text)
{
    size_t n;
    if (strncmp(text, "--", 2) != 0)
        return cli_option_has_letter(o) && text[0] == '-' && text[1] == o->key && !text[2];
    n = strcspn(text + 2, "=");
    return o->name && strlen(o->name) == n && strncmp(o->name, text + 2, n) == 0;
}

const struct cli_option *cli_option_typed(unsigned where, const char *text)
{
    for (const struct cli_option *o = cli_options; o->key; o++)
        if ((o->where & where) && typed_as(o, text))
            return o;
    return NULL;
}

void cli_getopt_for(unsigned where, bool stop_at_operand, struct cli_getopt *out)
{
    size_t s = 0, l = 0, taken = 0;
    if (stop_at_operand)
        out->shortopts[s++] = '+';
    out->shortopts[s++] = ':';
    for (const struct cli_option *o = cli_options; o->key && taken < CLI_GETOPT_MAX; o++) {
        if (!(o->where & where) || (o->flags & CLI_AFTER_NAME))
            continue;
        taken++;
        if (cli_option_has_letter(o)) {
            out->shortopts[s++] = (char)o->key;
            if (o->value)
                out->shortopts[s++] = ':';
        }
        if (o->name)
            out->longopts[l++] = (struct option){o->name, o->value ? required_argument : no_argument,
                                                 NULL, o->key};
    }
    out->shortopts[s] = '\0';
    out->longopts[l] = (struct option){NULL, 0, NULL, 0};
}

bool cli_long_option_trouble(char **argv, const struct option *longopts, char *out, size_t len)
{
    const char *arg = argv[optind - 1];
    const struct option *match = NULL;
    size_t name_len, matches = 0;
    int n;
    if (strncmp(arg, "--", 2) != 0)
        return false;
    arg += 2;
    name_len = strcspn(arg, "=");
    if (name_len == 0) /* "--=...": no name to match */
        return false;
    for (const struct option *l = longopts; l->name; l++) {
        if (strncmp(l->name, arg, name_len) != 0)
            continue;
        match = l;
        if (strlen(l->name) == name_len) { /* the whole name: no abbreviation */
            matches = 1;
            break;
        }
        matches++;
    }
    if (matches == 1 && arg[name_len] == '=' && match->has_arg == no_argument &&
        match->val == optopt) {
        snprintf(out, len, "option '--%s' takes no value", match->name);
        return true;
    }
    if (matches < 2 || optopt != 0) /* getopt_long says 0 for an ambiguous one */
        return false;
    n = snprintf(out, len, "option '--%.*s' is ambiguous:", (int)(name_len < 64 ? name_len : 64),
                 arg);
    for (const struct option *l = longopts; l->name && n > 0 && (size_t)n < len; l++)
        if (strncmp(l->name, arg, name_len) == 0)
            n += snprintf(out + n, len - (size_t)n, " --%s", l->name);
    return true;
}

void cli_offending_option(char **argv, const struct option *longopts, char *out, size_t len)
{
    const char *arg = argv[optind - 1];
    size_t name_len = strcspn(arg, "="); /* a value after '=' is not repeated */
    bool as_typed = optopt <= 0 || optopt >= 128 || !isgraph(optopt);
    for (const struct option *l = longopts; !as_typed && l->name; l++)
        as_typed = l->val == optopt && strncmp(arg, "--", 2) == 0 &&
                   strncmp(arg + 2, l->name, name_len - 2) == 0;
    if (as_typed)
        snprintf(out, len, "%.*s", (int)(name_len < 64 ? name_len : 64), arg);
    else
        snprintf(out, len, "-%c", optopt);
}
