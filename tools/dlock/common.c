/* What the subcommands share: messages, exit codes, durations, the client
 * and a waiting acquire with a status line. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STATUS_EVERY_MS 1000
#define DURATION_MAX_MS (100LL * 365 * 24 * 3600 * 1000) /* a century is "forever" enough */

static void vmessage(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* One write per message: a command writing to the same terminal or log
 * (its trap on our SIGTERM, say) must not land inside the line. */
static void vmessage(const char *fmt, va_list ap)
{
    char line[4096];
    int n = snprintf(line, sizeof(line), "dlock: ");
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    fwrite(line, 1, (size_t)n, stderr);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

void cli_info(const struct cli *cli, const char *fmt, ...)
{
    va_list ap;
    if (cli->quiet)
        return;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

void cli_debug(const struct cli *cli, const char *fmt, ...)
{
    va_list ap;
    if (!cli->verbose)
        return;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

int cli_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try 'dlock %s--help'.\n", command ? command : "");
    return EXIT_USAGE;
}

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

int cli_parse_duration_ms(const char *s, int64_t *ms)
{
    static const struct {
        const char *suffix;
        double ms;
    } units[] = {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    const char *p = s;
    char *end;
    double value;

    if (!s || !*s)
        return -1;
    for (; *p && (strchr("0123456789", *p) || *p == '.'); p++)
        ;
    if (p == s || s[0] == '.')
        return -1;
    errno = 0;
    value = strtod(s, &end);
    if (errno || end != p)
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(p, units[i].suffix) == 0) {
            double total = value * units[i].ms;
            if (total > (double)DURATION_MAX_MS)
                return -1;
            *ms = (int64_t)(total + 0.5);
            return 0;
        }
    }
    return -1;
}

int cli_parse_exit_code(const char *s, int *code)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > 255)
        return -1;
    *code = (int)v;
    return 0;
}

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

int64_t cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void cli_format_time(int64_t ms, char *out, size_t len)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void cli_describe_holder(const dlock_status *st, char *out, size_t len)
{
    const dlock_holder *h = dlock_status_holder(st, 0);
    int64_t ttl_ms = dlock_status_ttl_ms(st);
    int n;
    if (dlock_status_limit(st) > 1) {
        snprintf(out, len, "%zu of its %u permits held, the first to expire in %.1f s",
                 dlock_status_holders(st), dlock_status_limit(st), (double)ttl_ms / 1000);
        return;
    }
    if (h && dlock_status_shared(st)) {
        size_t holders = dlock_status_holders(st);
        snprintf(out, len,
                 "held shared by %zu holder%s (%s%s pid %ld), the last to expire in %.1f s",
                 holders, holders == 1 ? "" : "s", holders == 1 ? "" : "one: ", h->host, h->pid,
                 (double)ttl_ms / 1000);
        return;
    }
    if (h) {
        char since[32];
        cli_format_time(h->since_ms, since, sizeof(since));
        n = snprintf(out, len, "held by %s pid %ld since %s", h->host, h->pid, since);
    } else {
        n = snprintf(out, len, "held by another client (no owner record)");
    }
    if (n < 0 || (size_t)n >= len)
        return;
    if (ttl_ms >= 0)
        snprintf(out + n, len - (size_t)n, ", expires in %.1f s", (double)ttl_ms / 1000);
    else
        snprintf(out + n, len - (size_t)n, ", never expires (no TTL)");
}

/* Who holds `name`, into out; false if nobody does (any more) or the
 * servers could not say. */
static bool query_holder(dlock_client *client, const char *name, char *out, size_t len)
{
    dlock_status *st = NULL;
    bool held = dlock_status_query(&st, client, name) == 0 && dlock_status_held(st);
    if (held)
        cli_describe_holder(st, out, len);
    dlock_status_free(st);
    return held;
}

int cli_busy(const struct cli *cli, dlock_client *client, const char *name, int busy_code)
{
    char holder[400];
    /* A server in its restart delay (--restart-delay) answers busy: that
     * is the news, not who holds the lock elsewhere. */
    if (strstr(dlock_client_errmsg(client), "(restart delay)"))
        cli_info(cli, "%s is busy: %s", name, dlock_client_errmsg(client));
    else if (query_holder(client, name, holder, sizeof(holder)))
        cli_info(cli, "%s is busy: %s", name, holder);
    else
        cli_info(cli, "%s is busy (released since)", name);
    return busy_code;
}

/* What the command shows of a wait, told by the library before each of
 * its sleeps (on_retry): with -v whom it waits for and each retry after a
 * failure; on a terminal a status line that says who holds the lock, or
 * what keeps us from the servers, and how long we have waited. It keeps
 * the failures retried, so that one that ends the wait reads as what it
 * gave up on. */
struct wait_view {
    const struct cli *cli;
    const char *name;
    int64_t start;
    uint32_t seen;        /* bit -code of each failure retried */
    bool told_holder;     /* -v said whom we wait for */
    bool status_line;     /* stderr is a terminal, and not quiet */
    bool on_screen;       /* the status line is, unfinished */
    int64_t shown_ms;     /* when it was last written */
    dlock_client *reader; /* asks who holds the lock: the waiting client may not */
};

/* The holder of the name, asked with a client of our own (opened on first
 * use, on the waiting one's servers, with its credentials) while the
 * waiting one is inside its acquire; false if nobody holds the lock or the
 * servers could not say. */
static bool holder_of(struct wait_view *v, char *out, size_t len)
{
    if (!v->reader) {
        dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
        char why[512];
        client_options(v->cli, 0, NULL, &opts);
        if (dlock_client_open(&v->reader, &opts, why, sizeof(why)) < 0)
            return false;
    }
    return query_holder(v->reader, v->name, out, len);
}

/* A message goes on a line of its own, not after the status line. */
static void clear_status_line(struct wait_view *v)
{
    if (v->on_screen)
        fputs("\r\033[K", stderr);
    v->on_screen = false;
}

/* Once the wait has lasted a second, and at most once a second. */
static void show_status_line(struct wait_view *v, int code, const char *detail)
{
    char holder[400];
    int64_t now = cli_now_ms();
    if (now - v->start < STATUS_EVERY_MS || (v->shown_ms && now - v->shown_ms < STATUS_EVERY_MS))
        return;
    if (code != DLOCK_EBUSY)
        snprintf(holder, sizeof(holder), "unreachable: %s", detail);
    else if (!holder_of(v, holder, sizeof(holder)))
        snprintf(holder, sizeof(holder), "just released");
    fprintf(stderr, "\r\033[Kdlock: waiting for %s, %s (waited %.1f s)", v->name, holder,
            (double)(now - v->start) / 1000);
    v->on_screen = true;
    v->shown_ms = now;
}

/* -v, once, even in a log where no terminal shows the status line. */
static void tell_holder(struct wait_view *v)
{
    char holder[400];
    if (!v->cli->verbose || v->told_holder)
        return;
    v->told_holder = true;
    if (holder_of(v, holder, sizeof(holder))) {
        clear_status_line(v);
        cli_debug(v->cli, "waiting for %s, %s", v->name, holder);
    }
}

static void tell_retry(struct wait_view *v, int code, const char *detail, int64_t retry_in_ms)
{
    if (code < 0 && code > -32)
        v->seen |= 1u << -code;
    if (!v->cli->verbose)
        return;
    clear_status_line(v);
    cli_debug(v->cli, "%s: %s; trying again in %lld ms (waited %.1f s)", v->name,
              *detail ? detail : dlock_strerror(code), (long long)retry_in_ms,
              (double)(cli_now_ms() - v->start) / 1000);
}

/* The library's on_retry: before each sleep of the wait. */
static void on_wait(int code, const char *detail, int64_t retry_in_ms, void *arg)
{
    struct wait_view *v = arg;
    if (code == DLOCK_EBUSY)
        tell_holder(v);
    else
        tell_retry(v, code, detail, retry_in_ms);
    if (v->status_line)
        show_status_line(v, code, detail);
}

static bool retried(const struct wait_view *v, int rc)
{
    return rc < 0 && rc > -32 && (v->seen & (1u << -rc));
}

/* A wait that ends on a failure it was retrying gave up on the servers:
 * say for how long it tried, and what it saw last. */
static void report_failure(dlock_client *client, int rc, const struct wait_view *v)
{
    if (retried(v, rc))
        cli_error("%s: gave up after %.1f s: %s", v->name,
                  (double)(cli_now_ms() - v->start) / 1000, dlock_client_errmsg(client));
    else
        cli_acquire_failed(client, rc, v->name);
}

/* One library call, the try and the wait (a fair waiter's place is its
 * token's, and the counters count what the call was): what we show of the
 * wait comes from its on_retry. */
int cli_acquire(const struct cli *cli, dlock_client *client, const char *name,
                const struct cli_wait *how, dlock_lock **out)
{
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    struct wait_view v = {.cli = cli, .name = name, .start = cli_now_ms(),
                          .status_line = !cli->quiet && isatty(STDERR_FILENO)};
    double took;
    int rc;

    /* A wait rides out servers that fail (dlock(1), "When servers fail
     * during a wait"): the library retries, we tell. */
    opts.on_retry = on_wait;
    opts.on_retry_arg = &v;
    opts.wait_ms = how->wait_ms;
    opts.auto_renew = how->auto_renew;
    opts.max_hold_ms = how->max_hold_ms;
    opts.on_lost = how->on_lost;
    opts.on_lost_arg = how->on_lost_arg;
    opts.permits = how->permits;
    opts.fair = how->fair;
    opts.lease_ms = how->lease_ms;
    opts.shared = how->shared;
    rc = dlock_lock_acquire(out, client, name, how->ttl_ms, &opts);
    clear_status_line(&v);
    dlock_client_close(v.reader);
    took = (double)(cli_now_ms() - v.start) / 1000;
    if (rc == 0 && dlock_lock_attempts(*out) > 1)
        cli_debug(cli, "acquired %s after %.1f s", name, took);
    else if (rc == DLOCK_EBUSY && how->wait_ms != 0)
        cli_debug(cli, "gave up waiting for %s after %.1f s", name, took);
    if (rc < 0 && rc != DLOCK_EBUSY && rc != DLOCK_ECANCELED)
        report_failure(client, rc, &v);
    return rc;
}

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0: no overlong
 * forms, no surrogates, nothing above U+10FFFF (RFC 3629). */
size_t cli_utf8_length(const unsigned char *s)
{
    /* the second byte's range, narrower after E0, ED, F0 and F4 */
    unsigned char lo = s[0] == 0xe0 ? 0xa0 : s[0] == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = s[0] == 0xed ? 0x9f : s[0] == 0xf4 ? 0x8f : 0xbf;
    size_t len;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4;
    else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

void cli_write_json_string(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    putc('"', f);
    while (*p) {
        size_t len = cli_utf8_length(p);
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else if (len == 0)
            fputs("\\ufffd", f); /* not UTF-8: the replacement character */
        else
            fwrite(p, 1, len, f);
        p += len ? len : 1;
    }
    putc('"', f);
}

void cli_print_json_string(const char *s)
{
    cli_write_json_string(stdout, s);
}
