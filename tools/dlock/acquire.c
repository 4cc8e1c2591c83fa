/* The command's acquire: one library call, the try and the wait, and what
 * the command shows of the wait (its status line, -v's messages), told by
 * the library before each of its sleeps. */
#include "acquire.h"

#include "client_open.h"
#include "command_options.h"
#include "failure.h"
#include "global_options.h"
#include "holder.h"
#include "messages.h"
#include "times.h"

#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#define STATUS_EVERY_MS 1000

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
    if (!v->reader && cli_open_quietly(v->cli, &v->reader) < 0)
        return false;
    return cli_query_holder(v->reader, v->name, out, len);
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

/* A wait that ends on a failure it was retrying, or on the servers'
 * silence at its end, gave up on the servers: say for how long it tried,
 * and what it saw last. */
static void report_failure(dlock_client *client, int rc, const struct wait_view *v, bool waited)
{
    bool unanswered = rc == DLOCK_ETIMEDOUT || rc == DLOCK_ECONN || rc == DLOCK_ENOQUORUM;
    if (retried(v, rc) || (waited && unanswered))
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
        report_failure(client, rc, &v, how->wait_ms != 0);
    return rc;
}
