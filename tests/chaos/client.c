/* One workload process: takes random names in turn through dlock, reports
 * each step to the checker with CLOCK_MONOTONIC times, and writes to the
 * checker's fenced store from inside the critical section. SIGTERM makes it
 * release what it holds and exit. */
#include "chaos.h"

#include <dlock.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define VALIDITY_SAMPLE_MS 50

static dlock_client *client;
static volatile sig_atomic_t stopping;
static int checker_sock = -1;
static int my_id;

static void on_term(int sig)
{
    (void)sig;
    stopping = 1;
    dlock_client_cancel(client);
}

/* SIGTERM interrupts without SA_RESTART: retry, it only sets a flag. */
static void report(struct chaos_msg m)
{
    ssize_t n;
    m.client = my_id;
    do
        n = send(checker_sock, &m, sizeof(m), MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(m))
        _exit(3); /* the checker is gone */
}

/* The store's answer to a write; the checker judges it, not the client. */
static void await_verdict(void)
{
    char verdict;
    ssize_t n;
    do
        n = recv(checker_sock, &verdict, 1, 0);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        _exit(3);
}

static atomic_bool loss_reported;

static void on_lost(dlock_lock *lock, int reason, void *arg)
{
    (void)lock;
    atomic_store(&loss_reported, true);
    report((struct chaos_msg){.type = MSG_LOST, .name = *(int *)arg, .code = reason,
                              .t_ns = chaos_now_ns()});
}

/* Which nodes hold our grant right now, by the owner record (pid, since). */
static uint32_t holding_nodes(const char *name, int64_t since_floor_ms)
{
    uint32_t mask = 0;
    size_t n = dlock_client_nodes(client);
    for (size_t i = 0; i < n; i++) {
        dlock_status *st = NULL;
        const dlock_holder *h = NULL;
        bool held = dlock_status_query_node(&st, client, name, i) == 0 && dlock_status_held(st);
        /* Shared holders are listed together: ours is any of them. */
        for (size_t j = 0; held && (h = dlock_status_holder(st, j)) != NULL; j++)
            if (h->pid == (long)getpid() && h->since_ms >= since_floor_ms)
                mask |= 1u << i;
        dlock_status_free(st);
    }
    return mask;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Inside the critical section: sleep, reporting the validity as it moves. */
static void stay(const struct chaos_config *cfg, dlock_lock *lock, int name)
{
    int64_t end = chaos_now_ns() + (int64_t)cfg->cs_ms * 1000000;
    while (!stopping && chaos_now_ns() < end) {
        int64_t left_ms = (end - chaos_now_ns()) / 1000000;
        usleep((useconds_t)(left_ms < VALIDITY_SAMPLE_MS ? left_ms + 1 : VALIDITY_SAMPLE_MS) * 1000);
        if (cfg->auto_renew && dlock_lock_held(lock)) {
            int64_t t = chaos_now_ns();
            report((struct chaos_msg){.type = MSG_VALID, .name = name, .t_ns = t,
                                      .until_ns = t + dlock_lock_validity_ms(lock) * 1000000});
        }
    }
}

static void one_turn(const struct chaos_config *cfg, unsigned *rng)
{
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *lock = NULL;
    int name = (int)(rand_r(rng) % (unsigned)cfg->names), rc;
    char key[32];
    int64_t started = chaos_now_ns(), since_floor = wall_ms() - 1000, t;
    struct chaos_msg m;

    snprintf(key, sizeof(key), "chaos:%d", name);
    opts.wait_ms = cfg->try_only ? 0 : 2 * (int64_t)cfg->ttl_ms;
    opts.auto_renew = cfg->auto_renew;
    opts.on_lost = cfg->auto_renew ? on_lost : NULL;
    opts.on_lost_arg = cfg->auto_renew ? &name : NULL;
    opts.permits = (unsigned)cfg->permits;
    opts.fair = cfg->fair;
    opts.lease_ms = cfg->lease_ms;
    opts.shared = cfg->shared_every > 0 && my_id % cfg->shared_every != 0;
    atomic_store(&loss_reported, false);
    rc = dlock_lock_acquire(&lock, client, key, cfg->ttl_ms, &opts);
    t = chaos_now_ns();
    if (rc != 0) {
        if (!stopping)
            report((struct chaos_msg){.type = MSG_FAILED, .name = name, .code = rc, .t_ns = t,
                                      .duration_ns = t - started});
        if (cfg->try_only)
            usleep(1000 + rand_r(rng) % 4000);
        return;
    }
    m = (struct chaos_msg){.type = MSG_GRANT, .name = name, .fence = dlock_lock_fence(lock),
                           .t_ns = t, .until_ns = t + dlock_lock_validity_ms(lock) * 1000000,
                           .duration_ns = t - started, .slot = (int32_t)dlock_lock_slot(lock),
                           .shared = opts.shared};
    m.nodes = dlock_client_nodes(client) > 1 ? holding_nodes(key, since_floor) : 1u;
    report(m);
    report((struct chaos_msg){.type = MSG_ENTER, .name = name, .t_ns = chaos_now_ns()});
    stay(cfg, lock, name);
    /* A nemesis pause usually lands here: the write shows what the holder
     * believes, and the store judges its token. */
    report((struct chaos_msg){.type = MSG_WRITE, .name = name, .fence = dlock_lock_fence(lock),
                              .held = dlock_lock_held(lock), .t_ns = chaos_now_ns(),
                              .until_ns = m.until_ns, .slot = m.slot});
    await_verdict();
    report((struct chaos_msg){.type = MSG_EXIT, .name = name, .t_ns = chaos_now_ns()});
    t = chaos_now_ns();
    rc = dlock_lock_release(lock);
    /* A release can be the first to know: the validity ran out in a pause. */
    if (rc == DLOCK_ELOST && !atomic_load(&loss_reported))
        report((struct chaos_msg){.type = MSG_LOST, .name = name, .code = rc, .t_ns = t});
    report((struct chaos_msg){.type = MSG_RELEASE, .name = name, .code = rc, .t_ns = t,
                              .duration_ns = chaos_now_ns() - t});
    dlock_lock_free(lock);
}

void client_main(const struct chaos_config *cfg, int id, int sock, const char urls[][64])
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    const char *list[CHAOS_NODES_MAX];
    struct sigaction sa;
    char why[256];
    unsigned rng = cfg->seed * 7919u + (unsigned)id;

    my_id = id;
    checker_sock = sock;
    for (int i = 0; i < cfg->nodes; i++)
        list[i] = urls[i];
    o.urls = list;
    o.n_urls = (size_t)cfg->nodes;
    o.command_timeout_ms = cfg->command_timeout_ms;
    /* Judged against the checker afterwards (audit.c): the whole run's
     * entries kept. */
    o.audit = 1;
    o.audit_maxlen = DLOCK_AUDIT_MAXLEN_MAX;
    if (dlock_client_open(&client, &o, why, sizeof(why)) != 0) {
        fprintf(stderr, "chaos client %d: %s\n", id, why);
        _exit(2);
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    while (!stopping)
        one_turn(cfg, &rng);
    dlock_client_close(client);
    close(sock);
    exit(0);
}
