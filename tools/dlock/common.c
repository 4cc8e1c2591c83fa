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

static void vmessage(const char *fmt, va_list ap)
{
    fputs("dlock: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
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

int cli_open_client(const struct cli *cli, dlock_client **out)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    char why[512];
    int rc;
    opts.urls = cli->urls;
    opts.n_urls = cli->n_urls;
    opts.user = cli->user;
    opts.password = getenv("DLOCK_PASSWORD");
    opts.tls = cli->tls;
    opts.tls_ca_file = cli->cacert;
    opts.tls_ca_dir = cli->cacertdir;
    opts.tls_cert_file = cli->cert;
    opts.tls_key_file = cli->key;
    opts.tls_sni = cli->sni;
    opts.tls_insecure = cli->insecure;
    if (cli->insecure)
        cli_error("--insecure: server certificates and names are not verified");
    rc = dlock_client_open(out, &opts, why, sizeof(why));
    if (rc < 0) {
        cli_error("%s", why);
        return cli_exit_code(rc);
    }
    return 0;
}

int64_t cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void show_waiting(dlock_client *client, const char *name, int64_t waited_ms)
{
    dlock_status st;
    char holder[320] = "another owner";
    if (dlock_status_query(&st, client, name) == 0 && st.has_owner) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(holder, sizeof(holder), "%s pid %ld for %llds", st.host, st.pid,
                 (long long)((ts.tv_sec * 1000LL + ts.tv_nsec / 1000000 - st.since_ms) / 1000));
    }
    fprintf(stderr, "\r\033[Kdlock: waiting for %s, held by %s (waited %llds)", name, holder,
            (long long)(waited_ms / 1000));
}

int cli_acquire(const struct cli *cli, dlock_client *client, const char *name,
                const struct cli_wait *how, dlock_lock **out)
{
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    bool show = !cli->quiet && isatty(STDERR_FILENO) && how->wait_ms != 0;
    int64_t start = cli_now_ms();
    int rc;

    /* The command waits for a busy lock, not for an unreachable server. */
    opts.no_io_retry = 1;
    opts.auto_renew = how->auto_renew;
    opts.max_hold_ms = how->max_hold_ms;
    opts.on_lost = how->on_lost;
    opts.on_lost_arg = how->on_lost_arg;
    opts.wait_ms = how->wait_ms;
    if (!show)
        return dlock_lock_acquire(out, client, name, how->ttl_ms, &opts);
    /* On a terminal, wait in slices and say between them what we wait for. */
    for (;;) {
        int64_t waited = cli_now_ms() - start;
        opts.wait_ms = STATUS_EVERY_MS;
        if (how->wait_ms != DLOCK_WAIT_FOREVER && how->wait_ms - waited < STATUS_EVERY_MS)
            opts.wait_ms = how->wait_ms - waited > 0 ? how->wait_ms - waited : 0;
        rc = dlock_lock_acquire(out, client, name, how->ttl_ms, &opts);
        waited = cli_now_ms() - start;
        if (rc != DLOCK_EBUSY || opts.wait_ms == 0 ||
            (how->wait_ms != DLOCK_WAIT_FOREVER && waited >= how->wait_ms))
            break;
        show_waiting(client, name, waited);
    }
    fputs("\r\033[K", stderr);
    return rc;
}

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0: no overlong
 * forms, no surrogates, nothing above U+10FFFF (RFC 3629). */
static size_t utf8_length(const unsigned char *s)
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

void cli_print_json_string(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    putchar('"');
    while (*p) {
        size_t len = utf8_length(p);
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            printf("\\u%04x", *p);
        else if (len == 0)
            fputs("\\ufffd", stdout); /* not UTF-8: the replacement character */
        else
            fwrite(p, 1, len, stdout);
        p += len ? len : 1;
    }
    putchar('"');
}
