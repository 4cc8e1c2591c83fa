/* A paused minority of Redlock servers costs nothing: acquire (trying once
 * or waiting for a free lock), extend, release and status, in the library
 * and through the dlock command, proceed as soon as a majority answered;
 * the paused servers get at most the per-node deadline, never the connect
 * or command timeout. A paused server accepts connections (the kernel
 * does) and then never answers: the worst kind of slow.
 *
 * Each operation is timed RUNS times and its median must stay under
 * BOUND_MS. The library's client has connect and command timeouts of 5 s
 * and a per-node deadline of 500 ms (which a live server on a busy machine
 * must make, connect and script preloads included); the command runs with
 * its defaults (a per-node deadline of 1 s for a 30 s TTL). What an engine
 * that waits for every node costs (measured on 5 servers, 2 paused):
 *   - release and status: the command timeout, 5 s a call;
 *   - acquire, a waiting acquire of a free lock, extend: the per-node
 *     deadline (about 500 ms: these pass already and guard the rest);
 *   - the command: acquire (which waits: it subscribes first and waits for
 *     every confirmation), release and extend 1 s each, run 2 s, status 2
 *     to 3 s (the connect timeout). */
#include "helpers.h"
#include "nodes.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define RUNS 5
#define BOUND_MS 1000
#define SLOW_TIMEOUT_MS 5000 /* connect and command: never to be waited for */
#define NODE_TIMEOUT_MS 500
#define TTL_MS 30000

static char redis_env[NODES * 100]; /* DLOCK_REDIS: the test's servers */

/* One check: `measure` times one run of an operation on the first `nodes`
 * servers, the last `paused` of them stopped. */
struct minority_case {
    const char *op;
    size_t nodes, paused;
    long long (*measure)(const struct minority_case *mc, dlock_client *c, int run);
};

/* Empty servers, the minority paused (setup_nodes() resumes them for the
 * next test). */
static int setup(void **state)
{
    const struct minority_case *mc = *state;
    size_t used = 0;
    if (setup_nodes(state) != 0)
        return -1;
    for (size_t i = 0; i < mc->nodes; i++)
        used += (size_t)snprintf(redis_env + used, sizeof(redis_env) - used, "%s%s",
                                 i ? "," : "", nodes[i].url);
    for (size_t i = mc->nodes - mc->paused; i < mc->nodes; i++)
        test_redis_pause(&nodes[i]);
    return 0;
}

static dlock_client *open_slow_client(size_t n)
{
    dlock_client_options o = client_options(urls_of(nodes, n), n);
    o.connect_timeout_ms = SLOW_TIMEOUT_MS;
    o.command_timeout_ms = SLOW_TIMEOUT_MS;
    o.node_timeout_ms = NODE_TIMEOUT_MS;
    return client_with(&o);
}

/* The lock name of a run: unique to the case, so that what a paused server
 * applies after it resumes meets nothing of the next case. */
static const char *name_of(const struct minority_case *mc, int run)
{
    static char name[64];
    snprintf(name, sizeof(name), "min:%zu:%s:%d", mc->nodes, mc->op, run);
    return name;
}

static long long since(long long start)
{
    return test_now_ms() - start;
}

/* A lock to extend, release or ask about, taken before the clock starts. */
static dlock_lock *hold(const struct minority_case *mc, dlock_client *c, int run)
{
    return take(c, name_of(mc, run), TTL_MS, NULL);
}

static long long acquire_once(const struct minority_case *mc, dlock_client *c, int run)
{
    long long start = test_now_ms();
    take(c, name_of(mc, run), TTL_MS, NULL);
    return since(start);
}

static long long acquire_waiting(const struct minority_case *mc, dlock_client *c, int run)
{
    dlock_acquire_options o = wait_options(30000);
    long long start = test_now_ms();
    take(c, name_of(mc, run), TTL_MS, &o);
    return since(start);
}

static long long extend(const struct minority_case *mc, dlock_client *c, int run)
{
    dlock_lock *lock = hold(mc, c, run);
    long long start = test_now_ms(), took;
    int rc = dlock_lock_extend(lock, TTL_MS);
    took = since(start);
    if (rc != 0)
        fail_msg("extend: %s: %s", dlock_err_name(rc), dlock_client_errmsg(c));
    return took;
}

static long long release(const struct minority_case *mc, dlock_client *c, int run)
{
    dlock_lock *lock = hold(mc, c, run);
    long long start = test_now_ms(), took;
    int rc = dlock_lock_release(lock);
    took = since(start);
    if (rc != 0)
        fail_msg("release: %s: %s", dlock_err_name(rc), dlock_client_errmsg(c));
    return took;
}

static long long status(const struct minority_case *mc, dlock_client *c, int run)
{
    status_view st;
    long long start = test_now_ms(), took;
    int rc;
    hold(mc, c, run);
    rc = status_of(&st, c, name_of(mc, run));
    took = since(start);
    if (rc != 0)
        fail_msg("status: %s: %s", dlock_err_name(rc), dlock_client_errmsg(c));
    assert_true(st.held);
    assert_true(st.nodes_answered > mc->nodes / 2);
    return took;
}

/* `dlock ARGS`, which must succeed; how long it took, start-up included. */
static long long time_cli(const char *const *args)
{
    static cli_proc p; /* 32 KiB of output buffers */
    int rc = cli_run(&p, redis_env, args, 60000);
    if (rc != 0)
        fail_msg("dlock %s: exit %d after %lld ms: %s", args[0], rc, p.took_ms, p.err);
    return p.took_ms;
}

static long long cli_run_true(const struct minority_case *mc, dlock_client *c, int run)
{
    const char *args[] = {"run", "-t", "30", name_of(mc, run), "--", "true", NULL};
    (void)c;
    return time_cli(args);
}

static long long cli_acquire(const struct minority_case *mc, dlock_client *c, int run)
{
    const char *args[] = {"acquire", name_of(mc, run), NULL};
    (void)c;
    return time_cli(args);
}

/* `dlock VERB NAME [TOKEN]` on a lock the library took. */
static long long cli_on_held(const struct minority_case *mc, dlock_client *c, int run,
                             const char *verb, int with_token)
{
    dlock_lock *lock = hold(mc, c, run);
    const char *args[] = {verb, name_of(mc, run), with_token ? dlock_lock_token(lock) : NULL,
                          NULL};
    return time_cli(args);
}

static long long cli_release(const struct minority_case *mc, dlock_client *c, int run)
{
    return cli_on_held(mc, c, run, "release", 1);
}

static long long cli_extend(const struct minority_case *mc, dlock_client *c, int run)
{
    return cli_on_held(mc, c, run, "extend", 1);
}

static long long cli_status(const struct minority_case *mc, dlock_client *c, int run)
{
    return cli_on_held(mc, c, run, "status", 0);
}

/* The median of RUNS is under the bound iff fewer than half the runs reach
 * it: stop as soon as that fails, since a slow engine costs seconds a run. */
static void test_minority(void **state)
{
    const struct minority_case *mc = *state;
    dlock_client *c = open_slow_client(mc->nodes);
    long long bound = (long long)BOUND_MS * test_slowdown();
    char runs[RUNS * 24] = "";
    size_t used = 0;
    int over = 0;
    for (int i = 0; i < RUNS && over <= RUNS / 2; i++) {
        long long took = mc->measure(mc, c, i);
        over += took >= bound;
        used += (size_t)snprintf(runs + used, sizeof(runs) - used, " %lld", took);
    }
    if (over > RUNS / 2)
        fail_msg("%s, %zu of %zu servers paused: %d of %d runs took %lld ms or more, so "
                 "does the median (runs, ms:%s)",
                 mc->op, mc->paused, mc->nodes, over, RUNS, bound, runs);
}

/* How many connections wait in the accept queue of the server that listens
 * on 127.0.0.1:`port` (Linux: /proc/net/tcp, where a listening socket's
 * rx_queue is that queue). A paused server accepts none, so every connect
 * made to it while paused stays there. */
static long accept_queue(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];
    long queued = -1;
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        /* sl, local address:port, remote one, state, tx_queue:rx_queue */
        char *field[5], *save = NULL;
        int n = 0;
        for (char *t = strtok_r(line, " ", &save); t && n < 5; t = strtok_r(NULL, " ", &save))
            field[n++] = t;
        if (n < 5 || !strchr(field[1], ':') || !strchr(field[4], ':'))
            continue;
        if (strtol(strchr(field[1], ':') + 1, NULL, 16) == port && strcmp(field[3], "0A") == 0)
            queued = strtol(strchr(field[4], ':') + 1, NULL, 16); /* 0A: LISTEN */
    }
    fclose(f);
    return queued;
}

#define RECONNECT_CYCLES 300
#define RECONNECT_FIRST_MS 100 /* the first reconnect back-off */

static void cycle(dlock_client *c)
{
    take_and_release(c, "min:reconnects", TTL_MS, NULL);
}

/* A paused server's connection, once it owes too many replies, is dropped
 * and made again at once (a server that is only slow answers the new one);
 * a new one that never answered is rebuilt after the reconnect back-off,
 * not on the next call. Each rebuild costs a connect, the scripts' preload
 * and a wait for the server's run_id: rebuilt every 16 calls owed, as it
 * was, a paused minority cost Redlock a quarter of its rate (about 60
 * connects to each paused server in these cycles, where the back-off
 * allows one per 100 ms at most). */
static void test_minority_reconnects_rate_limited(void **state)
{
    const struct minority_case *mc = *state;
    dlock_client *c = open_slow_client(mc->nodes);
    size_t first_paused = mc->nodes - mc->paused;
    long before[NODES] = {0}, start, took;
    /* Connections that answered, as they had before their server paused. */
    for (size_t i = first_paused; i < mc->nodes; i++)
        test_redis_resume(&nodes[i]);
    cycle(c);
    for (size_t i = first_paused; i < mc->nodes; i++) {
        test_redis_pause(&nodes[i]);
        before[i] = accept_queue(nodes[i].port);
    }
    start = test_now_ms();
    for (int i = 0; i < RECONNECT_CYCLES; i++)
        cycle(c);
    took = since(start);
    for (size_t i = first_paused; i < mc->nodes; i++) {
        long connects = accept_queue(nodes[i].port) - before[i];
        long bound = 3 + took / RECONNECT_FIRST_MS; /* at once, then per back-off */
        if (before[i] < 0 || connects > bound)
            fail_msg("%d cycles in %ld ms made %ld connects to paused server %s (bound %ld)",
                     RECONNECT_CYCLES, took, connects, nodes[i].url, bound);
    }
}

#define MINORITY(nodes, paused, op)                                                                \
    {"test_minority_" #nodes "_" #paused "_paused_" #op, test_minority, setup, cleanup_teardown,   \
     &(struct minority_case){#op, nodes, paused, op}}

#define MINORITY_CASES(nodes, paused)                                                              \
    MINORITY(nodes, paused, acquire_once), MINORITY(nodes, paused, acquire_waiting),               \
        MINORITY(nodes, paused, extend), MINORITY(nodes, paused, release),                         \
        MINORITY(nodes, paused, status), MINORITY(nodes, paused, cli_run_true),                    \
        MINORITY(nodes, paused, cli_acquire), MINORITY(nodes, paused, cli_release),                \
        MINORITY(nodes, paused, cli_extend), MINORITY(nodes, paused, cli_status)

int main(void)
{
    const struct CMUnitTest tests[] = {
        MINORITY_CASES(5, 2),
        MINORITY_CASES(3, 1),
        {"test_minority_5_2_paused_reconnects_rate_limited", test_minority_reconnects_rate_limited,
         setup, cleanup_teardown, &(struct minority_case){"reconnects", 5, 2, NULL}},
    };
    return cmocka_run_group_tests(tests, group_setup_nodes, group_teardown_nodes);
}
