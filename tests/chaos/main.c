/* dlock-chaos: runs one fault scenario and judges it.
 *   dlock-chaos --scenario NAME [--seed N] [--seconds S] [--min-grants G]
 *               [--history FILE] [--shim PATH]
 *   dlock-chaos --list
 * Prints the seed first (a run is replayable with it) and one summary line
 * last. Exit 0: passed; 1: failed; 2: invalid (the fault did not bite, or
 * too few grants); 64: usage. */
#include "chaos.h"

#include <dlock.h>

#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_GRACE_MS 2000

struct run;

/* A scenario: its configuration, its nemesis and what makes it count. */
struct scenario {
    const char *name;
    const char *what;
    struct chaos_config cfg;
    /* Called often; breaks or heals something when its time has come. */
    void (*nemesis)(struct run *r, int64_t now);
    /* Extra pass criteria and the bite; NULL message: fine. */
    const char *(*failed)(const struct verdict *v);
    const char *(*did_not_bite)(const struct verdict *v, const struct run *r);
};

struct run {
    const struct scenario *sc;
    struct chaos_config cfg;
    struct chaos_nodes nodes;
    struct checker *checker;
    pid_t pids[CHAOS_CLIENTS_MAX];
    int socks[CHAOS_CLIENTS_MAX];
    unsigned rng;
    int64_t next_fault_ns;
    int64_t heal_ns;   /* when the current fault ends; 0: none */
    int target;        /* of the current fault */
    int second;        /* a second node it hits at the same time, or -1 */
    long faults;       /* faults injected */
};

static int64_t ms_ns(long long ms)
{
    return ms * 1000000LL;
}

/* A random duration in [lo, hi] ms. */
static int64_t between(struct run *r, int lo, int hi)
{
    return ms_ns(lo + (long long)(rand_r(&r->rng) % (unsigned)(hi - lo + 1)));
}

static void record(struct run *r, enum fault_kind kind, int target, long long amount,
                   bool data_lost)
{
    struct fault_event e = {kind, target, chaos_now_ns(), amount, data_lost};
    checker_fault(r->checker, &e);
}

/* ---- nemeses ---- */

/* Picks the node(s) of the next fault: `count` (1 or 2) distinct ones. */
static void pick_nodes(struct run *r, int count)
{
    int n = r->cfg.nodes;
    r->target = (int)(rand_r(&r->rng) % (unsigned)n);
    r->second = count > 1 ? (r->target + 1 + (int)(rand_r(&r->rng) % (unsigned)(n - 1))) % n : -1;
}

/* SIGSTOPs a client `pick` chooses (none: try again later), and SIGCONTs
 * it `hold_ms` plus [lo, hi] ms later. */
static void pause_a_client(struct run *r, int64_t now,
                           int (*pick)(const struct checker *k, int from), int64_t hold_ms,
                           int lo, int hi)
{
    if (r->heal_ns && now >= r->heal_ns) {
        /* Recorded before the client runs again: it may hear of its loss
         * within microseconds, before a record taken after the signal. */
        record(r, FAULT_CLIENT_RESUME, r->target, 0, false);
        kill(r->pids[r->target], SIGCONT);
        r->heal_ns = 0;
        r->next_fault_ns = now + between(r, 1000, 2000);
    } else if (!r->heal_ns && now >= r->next_fault_ns) {
        int c = pick(r->checker, (int)(rand_r(&r->rng) % (unsigned)r->cfg.clients));
        if (c < 0)
            return;
        kill(r->pids[c], SIGSTOP);
        record(r, FAULT_CLIENT_PAUSE, c, 0, false);
        r->target = c;
        r->faults++;
        r->heal_ns = now + ms_ns(hold_ms) + between(r, lo, hi);
    }
}

/* A holder in its section, past the TTL and past the section of the next
 * holder, so that its write comes first and this one's is stale. */
static void pause_a_holder(struct run *r, int64_t now)
{
    pause_a_client(r, now, checker_client_in_section, r->cfg.ttl_ms + r->cfg.cs_ms, 300, 1000);
}

/* Fair runs: a client that holds nothing (a waiter, most likely), past its
 * presence lease, so that it loses its place, and stalls the queue for at
 * most a lease when it was the head. */
static void pause_a_waiter(struct run *r, int64_t now)
{
    int lease = r->cfg.lease_ms ? r->cfg.lease_ms : DLOCK_LEASE_DEFAULT_MS;
    pause_a_client(r, now, checker_client_waiting, lease, 500, 1500);
}

/* Crash `count` nodes at once; restart them empty after `down` ms (0: at
 * once). */
static void crash_and_restart(struct run *r, int64_t now, int count, int down_lo, int down_hi)
{
    if (r->heal_ns && now >= r->heal_ns) {
        /* everysec may lose the last second of writes: the model allows
         * for it as for no persistence at all. */
        bool lost = r->nodes.persistence != PERSIST_AOF_ALWAYS;
        for (int i = 0; i < count; i++) {
            /* Recorded before the new process exists: no grant on it can
             * come before the record. */
            int node = i ? r->second : r->target;
            record(r, FAULT_NODE_RESTART, node, 0, lost);
            if (nodes_restart(&r->nodes, node) != 0)
                fprintf(stderr, "dlock-chaos: node %d did not restart\n", node);
        }
        r->heal_ns = 0;
        r->next_fault_ns = now + between(r, 1500, 3000);
    } else if (!r->heal_ns && now >= r->next_fault_ns) {
        pick_nodes(r, count);
        for (int i = 0; i < count; i++) {
            int node = i ? r->second : r->target;
            nodes_crash(&r->nodes, node);
            record(r, FAULT_NODE_CRASH, node, 0, false);
        }
        r->faults++;
        r->heal_ns = now + (down_hi ? between(r, down_lo, down_hi) : 1);
    }
}

/* Down for longer than the TTL and the drift: the Redis distlock rule. */
static void crash_delayed_restart_of(struct run *r, int64_t now, int count)
{
    int ttl = r->cfg.ttl_ms, drift = ttl / 100 + 2;
    crash_and_restart(r, now, count, ttl + drift + 200, ttl + drift + 1000);
}

static void crash_delayed_restart(struct run *r, int64_t now)
{
    crash_delayed_restart_of(r, now, 1);
}

static void crash_two_delayed_restart(struct run *r, int64_t now)
{
    crash_delayed_restart_of(r, now, 2);
}

static void crash_immediate_restart(struct run *r, int64_t now)
{
    crash_and_restart(r, now, 1, 0, 0);
}

static void net_fault(struct run *r, int64_t now, enum fault_mode mode, int delay_ms)
{
    if (r->heal_ns && now >= r->heal_ns) {
        fault_proxy_set(r->nodes.proxies[r->target], FAULT_PASS, 0);
        record(r, FAULT_NET, r->target, FAULT_PASS, false);
        r->heal_ns = 0;
        r->next_fault_ns = now + between(r, 1000, 2500);
    } else if (!r->heal_ns && now >= r->next_fault_ns) {
        pick_nodes(r, 1);
        fault_proxy_set(r->nodes.proxies[r->target], mode, delay_ms);
        record(r, FAULT_NET, r->target, mode, false);
        r->faults++;
        r->heal_ns = now + between(r, 1500, 3000);
    }
}

static void blackhole(struct run *r, int64_t now)
{
    net_fault(r, now, FAULT_BLACKHOLE, 0);
}

static void slow_net(struct run *r, int64_t now)
{
    net_fault(r, now, FAULT_DELAY, 150);
}

static void reset_net(struct run *r, int64_t now)
{
    net_fault(r, now, FAULT_RESET, 0);
}

static void pause_a_node(struct run *r, int64_t now)
{
    if (r->heal_ns && now >= r->heal_ns) {
        nodes_pause(&r->nodes, r->target, false);
        record(r, FAULT_NODE_RESUME, r->target, 0, false);
        r->heal_ns = 0;
        r->next_fault_ns = now + between(r, 1000, 2500);
    } else if (!r->heal_ns && now >= r->next_fault_ns) {
        pick_nodes(r, 1);
        nodes_pause(&r->nodes, r->target, true);
        record(r, FAULT_NODE_PAUSE, r->target, 0, false);
        r->faults++;
        r->heal_ns = now + between(r, 500, 2500);
    }
}

/* Two nodes at once, in different ways: one SIGSTOPped, one black-holed. */
static void pause_and_blackhole(struct run *r, int64_t now)
{
    if (r->heal_ns && now >= r->heal_ns) {
        nodes_pause(&r->nodes, r->target, false);
        record(r, FAULT_NODE_RESUME, r->target, 0, false);
        fault_proxy_set(r->nodes.proxies[r->second], FAULT_PASS, 0);
        record(r, FAULT_NET, r->second, FAULT_PASS, false);
        r->heal_ns = 0;
        r->next_fault_ns = now + between(r, 1000, 2500);
    } else if (!r->heal_ns && now >= r->next_fault_ns) {
        pick_nodes(r, 2);
        nodes_pause(&r->nodes, r->target, true);
        record(r, FAULT_NODE_PAUSE, r->target, 0, false);
        fault_proxy_set(r->nodes.proxies[r->second], FAULT_BLACKHOLE, 0);
        record(r, FAULT_NET, r->second, FAULT_BLACKHOLE, false);
        r->faults++;
        r->heal_ns = now + between(r, 1500, 3000);
    }
}

static void clock_jump(struct run *r, int64_t now)
{
    if (now < r->next_fault_ns)
        return;
    {
        int node = (int)(rand_r(&r->rng) % (unsigned)r->cfg.nodes);
        long long ms = 500 + rand_r(&r->rng) % 2500;
        nodes_shift_clock(&r->nodes, node, ms);
        record(r, FAULT_CLOCK_JUMP, node, ms, false);
        r->faults++;
        r->next_fault_ns = now + between(r, 1500, 3000);
    }
}

/* A replica takes over every few seconds: SENTINEL FAILOVER (asynchronous:
 * the last writes may be lost with the old primary) or CLUSTER FAILOVER (the
 * replica catches up first, clients paused: nothing lost). */
static void failover(struct run *r, int64_t now)
{
    if (now < r->next_fault_ns)
        return;
    r->next_fault_ns = now + between(r, 3000, 5000);
    if (nodes_failover(&r->nodes, &r->rng) == 0) {
        record(r, FAULT_FAILOVER, 0, 0, r->cfg.topology == TOPO_SENTINEL);
        r->faults++;
    }
}

/* ---- criteria ---- */

static const char *no_overlap(const struct verdict *v)
{
    if (v->bug_overlaps)
        return "overlapping validity windows the model does not permit";
    if (v->stale_accepted)
        return "the store accepted a write after a newer holder's";
    if (v->held_after_expiry)
        return "dlock_lock_held() said yes after the validity ended";
    return NULL;
}

static const char *no_overlap_loss_on_time(const struct verdict *v)
{
    return v->late_loss_reports ? "a resumed holder heard of its loss late, or never"
                                : no_overlap(v);
}

static const char *no_overlap_attempts_bounded(const struct verdict *v)
{
    return v->slow_attempts ? "an attempt took longer than its node deadlines allow"
                            : no_overlap(v);
}

static const char *no_overlap_no_regression(const struct verdict *v)
{
    return v->fence_regressions ? "a fencing token went backwards" : no_overlap(v);
}

static const char *at_most_n_holders(const struct verdict *v)
{
    if (v->holders_over_limit)
        return "more holders than permits at once, or a slot out of range";
    return no_overlap_no_regression(v);
}

static const char *fair_and_no_overlap(const struct verdict *v)
{
    if (v->fifo_violations)
        return "a grant passed a live waiter that had asked clearly earlier";
    if (v->stalls)
        return "the next grant came later after a release than a presence lease allows";
    return no_overlap_no_regression(v);
}

static const char *checker_sees_overlap(const struct verdict *v)
{
    if (!v->permitted_overlaps)
        return "no overlap flagged after restarts without persistence: the checker is broken";
    return no_overlap(v);
}

static const char *bite_stale_rejected(const struct verdict *v, const struct run *r)
{
    (void)r;
    return v->stale_rejected ? NULL : "no stale write was rejected";
}

static const char *bite_degraded(const struct verdict *v, const struct run *r)
{
    (void)r;
    return v->degraded_grants || v->failed_acquires ? NULL : "no grant missed a node";
}

static const char *bite_slow(const struct verdict *v, const struct run *r)
{
    unsigned long long hits = 0;
    for (int i = 0; i < r->cfg.nodes; i++)
        hits += fault_proxy_hits(r->nodes.proxies[i]);
    if (!hits)
        return "the proxies saw no traffic to hold back";
    return v->slow_ops || v->failed_acquires || v->degraded_grants ? NULL
                                                                   : "no operation was slowed";
}

static const char *bite_faults(const struct verdict *v, const struct run *r)
{
    (void)v;
    return r->faults ? NULL : "no fault was injected";
}

#define BASE .clients = 8, .names = 3, .ttl_ms = 2000, .command_timeout_ms = 400

static const struct scenario scenarios[] = {
    {"client-pause", "SIGSTOP a holder inside its critical section past its TTL",
     {BASE, .cs_ms = 10, .nodes = 3, .seconds = 25, .min_grants = 200}, pause_a_holder, no_overlap,
     bite_stale_rejected},
    {"crash-delayed", "crash a minority node without persistence, restart it after TTL+drift",
     {BASE, .cs_ms = 10, .nodes = 3, .seconds = 25, .min_grants = 1000}, crash_delayed_restart,
     no_overlap_no_regression, bite_degraded},
    {"blackhole", "black-hole a node's network through the proxy",
     {BASE, .cs_ms = 10, .nodes = 3, .seconds = 25, .min_grants = 200, .stray_check_ms = 1000},
     blackhole, no_overlap, bite_slow},
    {"negative-control", "one node, no persistence, restarted at once: overlaps must be flagged",
     {BASE, .nodes = 1, .cs_ms = 1500, .seconds = 15, .min_grants = 10}, crash_immediate_restart,
     checker_sees_overlap, bite_faults},
    {"crash-aof", "crash a node with appendfsync always, restart it at once",
     {BASE, .cs_ms = 10, .nodes = 3, .seconds = 60, .min_grants = 1000, .persistence = PERSIST_AOF_ALWAYS},
     crash_immediate_restart, no_overlap_no_regression, bite_degraded},
    {"crash-everysec", "crash a node with appendfsync everysec, restart it at once",
     {BASE, .cs_ms = 10, .nodes = 3, .seconds = 60, .min_grants = 1000,
      .persistence = PERSIST_AOF_EVERYSEC},
     crash_immediate_restart, no_overlap, bite_degraded},
    {"crash-single", "the single node crashes (AOF always) and restarts at once",
     {BASE, .cs_ms = 10, .nodes = 1, .seconds = 60, .min_grants = 500, .persistence = PERSIST_AOF_ALWAYS},
     crash_immediate_restart, no_overlap_no_regression, bite_faults},
    {"node-pause", "SIGSTOP a minority node; single attempts, each timed",
     {BASE, .cs_ms = 10, .nodes = 3, .try_only = true, .seconds = 60, .min_grants = 500},
     pause_a_node, no_overlap_attempts_bounded, bite_degraded},
    {"single-pause", "SIGSTOP the single node; single attempts, each timed",
     {BASE, .cs_ms = 10, .nodes = 1, .try_only = true, .seconds = 60, .min_grants = 200},
     pause_a_node, no_overlap_attempts_bounded, bite_faults},
    {"slow-net", "delay a node's traffic by 150 ms",
     {BASE, .cs_ms = 10, .nodes = 3, .seconds = 60, .min_grants = 500}, slow_net, no_overlap, bite_slow},
    {"reset-net", "reset a node's connections, and new ones",
     {BASE, .cs_ms = 10, .nodes = 3, .seconds = 60, .min_grants = 500}, reset_net, no_overlap, bite_slow},
    {"clock-jump", "move a node's clock forward by 0.5 to 3 s (needs --shim)",
     {BASE, .cs_ms = 10, .nodes = 3, .seconds = 60, .min_grants = 500}, clock_jump, no_overlap,
     bite_degraded},
    {"crash-two-delayed", "crash two of five nodes without persistence, restart them after TTL+drift",
     {BASE, .cs_ms = 10, .nodes = 5, .seconds = 60, .min_grants = 500}, crash_two_delayed_restart,
     no_overlap_no_regression, bite_degraded},
    {"pause-blackhole", "two of five nodes at once: one SIGSTOPped, one black-holed",
     {BASE, .cs_ms = 10, .nodes = 5, .seconds = 60, .min_grants = 500, .stray_check_ms = 1000},
     pause_and_blackhole, no_overlap, bite_slow},
    {"sentinel-failover", "SENTINEL FAILOVER every 3-5 s: overlaps only in a failover's window",
     {BASE, .cs_ms = 10, .nodes = 1, .seconds = 40, .min_grants = 200,
      .topology = TOPO_SENTINEL},
     failover, no_overlap, bite_faults},
    {"cluster-failover", "CLUSTER FAILOVER of a master every 3-5 s: no overlap at all",
     {BASE, .cs_ms = 10, .nodes = 1, .seconds = 40, .min_grants = 200, .topology = TOPO_CLUSTER},
     failover, no_overlap, bite_faults},
    {"renew-pause", "long renewed sections, holders paused past their TTL",
     {BASE, .nodes = 3, .cs_ms = 3000, .auto_renew = true, .seconds = 60, .min_grants = 20},
     pause_a_holder, no_overlap_loss_on_time, bite_stale_rejected},
    {"semaphore-pause", "a semaphore of 3 permits; SIGSTOP a holder in its section past its TTL",
     {BASE, .permits = 3, .cs_ms = 10, .nodes = 1, .seconds = 25, .min_grants = 200},
     pause_a_holder, at_most_n_holders, bite_stale_rejected},
    {"fair-pause", "a fair lock, one name; SIGSTOP a waiter past its presence lease",
     {.clients = 8, .names = 1, .ttl_ms = 2000, .command_timeout_ms = 400, .fair = true,
      .cs_ms = 10, .nodes = 1, .seconds = 25, .min_grants = 300},
     pause_a_waiter, fair_and_no_overlap, bite_faults},
    {"shared-pause", "shared and exclusive holders (2 clients in 3 shared), 3 nodes; SIGSTOP a "
     "holder in its section past its TTL",
     {BASE, .shared_every = 3, .cs_ms = 10, .nodes = 3, .seconds = 25, .min_grants = 300},
     pause_a_holder, no_overlap_no_regression, bite_stale_rejected},
};

/* ---- the run ---- */

/* A client is this program again, run afresh: a fork of the parent would
 * carry its proxy threads' state (and the sanitizers' view of them). */
static void exec_client(const struct run *r, int id, int sock, const char urls[][64])
{
    char id_s[16], fd_s[16], seed_s[16];
    const char *argv[12 + CHAOS_NODES_MAX];
    int n = 0;
    snprintf(id_s, sizeof(id_s), "%d", id);
    snprintf(fd_s, sizeof(fd_s), "%d", sock);
    snprintf(seed_s, sizeof(seed_s), "%u", r->cfg.seed);
    fcntl(sock, F_SETFD, 0);
    argv[n++] = "dlock-chaos";
    argv[n++] = "--client";
    argv[n++] = id_s;
    argv[n++] = "--fd";
    argv[n++] = fd_s;
    argv[n++] = "--scenario";
    argv[n++] = r->sc->name;
    argv[n++] = "--seed";
    argv[n++] = seed_s;
    for (int i = 0; i < r->cfg.nodes; i++)
        argv[n++] = urls[i];
    argv[n] = NULL;
    execv("/proc/self/exe", (char *const *)argv);
    perror("dlock-chaos: exec client");
    _exit(127);
}

static int start_clients(struct run *r)
{
    char urls[CHAOS_NODES_MAX][64];
    nodes_urls(&r->nodes, urls);
    fflush(NULL);
    for (int i = 0; i < r->cfg.clients; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
            return -1;
        r->pids[i] = fork();
        if (r->pids[i] < 0)
            return -1;
        if (r->pids[i] == 0)
            exec_client(r, i, sv[1], urls);
        close(sv[1]);
        r->socks[i] = sv[0];
    }
    return 0;
}

/* Serves the clients' messages for up to `ms`. */
static void serve(struct run *r, int ms)
{
    struct pollfd fds[CHAOS_CLIENTS_MAX];
    int n = 0;
    for (int i = 0; i < r->cfg.clients; i++)
        if (r->socks[i] >= 0)
            fds[n++] = (struct pollfd){.fd = r->socks[i], .events = POLLIN};
    if (poll(fds, (nfds_t)n, ms) <= 0)
        return;
    for (int i = 0; i < n; i++) {
        if (fds[i].revents & POLLIN)
            checker_receive(r->checker, fds[i].fd);
        else if (fds[i].revents & (POLLHUP | POLLERR))
            for (int c = 0; c < r->cfg.clients; c++)
                if (r->socks[c] == fds[i].fd) {
                    close(r->socks[c]);
                    r->socks[c] = -1;
                }
    }
}

/* Undoes every fault: the end of a run is judged on a healthy system. */
static void heal(struct run *r)
{
    for (int i = 0; i < r->cfg.clients; i++)
        kill(r->pids[i], SIGCONT);
    for (int i = 0; r->cfg.topology == TOPO_SERVERS && i < r->cfg.nodes; i++) {
        fault_proxy_set(r->nodes.proxies[i], FAULT_PASS, 0);
        nodes_pause(&r->nodes, i, false);
        if (r->nodes.down[i]) {
            record(r, FAULT_NODE_RESTART, i, 0, r->nodes.persistence != PERSIST_AOF_ALWAYS);
            nodes_restart(&r->nodes, i);
        }
    }
}

/* SIGTERM to every client; returns how many took longer than the grace or
 * exited unhappily (a sanitizer report, a crash). */
static int stop_clients(struct run *r)
{
    int64_t deadline = chaos_now_ns() + ms_ns(EXIT_GRACE_MS);
    int bad = 0, left = r->cfg.clients;
    bool done[CHAOS_CLIENTS_MAX] = {false};
    for (int i = 0; i < r->cfg.clients; i++)
        kill(r->pids[i], SIGTERM);
    while (left > 0 && chaos_now_ns() < deadline) {
        serve(r, 10);
        for (int i = 0; i < r->cfg.clients; i++) {
            int status;
            if (done[i] || waitpid(r->pids[i], &status, WNOHANG) != r->pids[i])
                continue;
            done[i] = true;
            left--;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "dlock-chaos: client %d ended with status %#x\n", i, status);
                bad++;
            }
        }
    }
    for (int i = 0; i < r->cfg.clients; i++) {
        if (done[i])
            continue;
        fprintf(stderr, "dlock-chaos: client %d still running %d ms after SIGTERM\n", i,
                EXIT_GRACE_MS);
        kill(r->pids[i], SIGKILL);
        waitpid(r->pids[i], NULL, 0);
        bad++;
    }
    return bad;
}

static void usage(void)
{
    fprintf(stderr, "usage: dlock-chaos --scenario NAME [--seed N] [--seconds S] "
                    "[--min-grants G] [--history FILE] [--shim PATH]\n"
                    "       dlock-chaos --list\n");
    exit(64);
}

static const struct scenario *find(const char *name)
{
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
        if (strcmp(scenarios[i].name, name) == 0)
            return &scenarios[i];
    return NULL;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"scenario", required_argument, NULL, 'S'}, {"seed", required_argument, NULL, 's'},
        {"seconds", required_argument, NULL, 't'},  {"history", required_argument, NULL, 'H'},
        {"shim", required_argument, NULL, 'c'},     {"list", no_argument, NULL, 'l'},
        {"client", required_argument, NULL, 'C'},   {"fd", required_argument, NULL, 'F'},
        {"min-grants", required_argument, NULL, 'g'},
        {NULL, 0, NULL, 0}};
    static struct run r;
    const char *history_path = NULL, *shim = NULL, *problem;
    FILE *history = NULL;
    struct verdict v;
    struct audit_agreement audit;
    char node_urls[CHAOS_NODES_MAX][64];
    int opt, seconds = 0, min_grants = 0, stray, bad_exits, client_id = -1, client_fd = -1;
    int64_t end;

    r.cfg.seed = (unsigned)time(NULL);
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (opt) {
        case 'S': r.sc = find(optarg); if (!r.sc) usage(); break;
        case 's': r.cfg.seed = (unsigned)strtoul(optarg, NULL, 10); break;
        case 't': seconds = (int)strtol(optarg, NULL, 10); break;
        case 'g': min_grants = (int)strtol(optarg, NULL, 10); break;
        case 'H': history_path = optarg; break;
        case 'c': shim = optarg; break;
        case 'C': client_id = (int)strtol(optarg, NULL, 10); break;
        case 'F': client_fd = (int)strtol(optarg, NULL, 10); break;
        case 'l':
            for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
                printf("%-17s %s\n", scenarios[i].name, scenarios[i].what);
            return 0;
        default: usage();
        }
    }
    if (!r.sc || (client_id < 0 && optind != argc))
        usage();
    {
        unsigned seed = r.cfg.seed;
        r.cfg = r.sc->cfg;
        r.cfg.scenario = r.sc->name;
        r.cfg.seed = seed;
    }
    if (client_id >= 0) {
        char urls[CHAOS_NODES_MAX][64];
        if (argc - optind != r.cfg.nodes || client_id >= r.cfg.clients || client_fd < 0)
            usage();
        for (int i = 0; i < r.cfg.nodes; i++)
            snprintf(urls[i], sizeof(urls[i]), "%s", argv[optind + i]);
        client_main(&r.cfg, client_id, client_fd, urls);
    }
    if (seconds > 0)
        r.cfg.seconds = seconds;
    if (min_grants > 0)
        r.cfg.min_grants = min_grants;
    if (r.sc->nemesis == clock_jump && !shim) {
        fprintf(stderr, "dlock-chaos: %s needs --shim\n", r.sc->name);
        return 64;
    }
    r.rng = r.cfg.seed;
    printf("scenario %s seed %u\n", r.sc->name, r.cfg.seed);
    fflush(stdout);
    if (history_path && !(history = fopen(history_path, "w"))) {
        perror(history_path);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    if ((r.cfg.topology == TOPO_SERVERS ? nodes_start(&r.nodes, r.cfg.nodes, r.cfg.persistence, shim)
                                        : nodes_start_topology(&r.nodes, r.cfg.topology)) != 0) {
        nodes_stop(&r.nodes);
        return 1;
    }
    r.checker = checker_new(&r.cfg, history);
    if (!r.checker || start_clients(&r) != 0) {
        perror("dlock-chaos");
        nodes_stop(&r.nodes);
        return 1;
    }
    r.next_fault_ns = chaos_now_ns() + ms_ns(1000);
    end = chaos_now_ns() + ms_ns(r.cfg.seconds * 1000LL);
    while (chaos_now_ns() < end) {
        serve(&r, 5);
        r.sc->nemesis(&r, chaos_now_ns());
    }
    heal(&r);
    bad_exits = stop_clients(&r);
    usleep((useconds_t)(r.cfg.stray_check_ms ? r.cfg.stray_check_ms : 2 * r.cfg.ttl_ms) * 1000);
    stray = nodes_stray_keys(&r.nodes, r.cfg.names);
    checker_judge(r.checker, &v);
    nodes_urls(&r.nodes, node_urls);
    audit_agree(&r.cfg, node_urls, r.checker, v.jumps[0] + v.jumps[1] + v.jumps[2] > 0, &audit);

    problem = bad_exits ? "a client did not exit cleanly within 2 s of SIGTERM"
              : stray != 0 ? "lock keys were left behind"
              : audit.unreadable ? "the audit streams could not be read"
              : audit.missed || audit.extra ? "the audit disagrees with the checker"
                           : r.sc->failed(&v);
    {
        const char *invalid = r.sc->did_not_bite(&v, &r);
        const char *outcome = problem ? "FAIL" : (invalid || v.grants < r.cfg.min_grants) ? "INVALID" : "PASS";
        printf("{\"scenario\":\"%s\",\"seed\":%u,\"outcome\":\"%s\",\"reason\":\"%s\","
               "\"nodes\":%d,\"clients\":%d,\"seconds\":%d,\"faults\":%ld,\"grants\":%ld,"
               "\"failed_acquires\":%ld,\"degraded_grants\":%ld,\"slow_releases\":%ld,"
               "\"validity_overlaps\":%ld,\"permitted_overlaps\":%ld,\"bug_overlaps\":%ld,"
               "\"section_overlaps\":%ld,\"fence_regressions\":%ld,\"stale_rejected\":%ld,"
               "\"stale_accepted\":%ld,\"failover_fence_slips\":%ld,\"held_after_expiry\":%ld,"
               "\"lost\":%ld,"
               "\"loss_report_max_ms\":%ld,\"max_attempt_ms\":%ld,"
               "\"jumps_under_1s_1to2s_over_2s\":[%ld,%ld,%ld],"
               "\"overlaps_by_jump_size\":[%ld,%ld,%ld],\"stray_keys\":%d,"
               "\"permits\":%d,\"max_holders\":%ld,\"holders_over_limit\":%ld,"
               "\"fifo_violations\":%ld,\"stalls\":%ld,\"max_stall_ms\":%ld,"
               "\"shared_fence_splits\":%ld,\"audit_findings\":%ld,\"audit_overlaps\":%ld,"
               "\"audit_checked\":%ld,\"audit_missed\":%ld,\"audit_extra\":%ld}\n",
               r.sc->name, r.cfg.seed, outcome,
               problem ? problem : invalid ? invalid : v.grants < r.cfg.min_grants ? "too few grants" : "",
               r.cfg.nodes, r.cfg.clients, r.cfg.seconds, r.faults, v.grants, v.failed_acquires,
               v.degraded_grants, v.slow_ops, v.validity_overlaps, v.permitted_overlaps,
               v.bug_overlaps, v.section_overlaps, v.fence_regressions, v.stale_rejected,
               v.stale_accepted, v.failover_fence_slips, v.held_after_expiry, v.lost,
               v.loss_report_max_ms,
               v.max_attempt_ms, v.jumps[0], v.jumps[1], v.jumps[2], v.jump_overlaps[0],
               v.jump_overlaps[1], v.jump_overlaps[2], stray, r.cfg.permits, v.max_holders,
               v.holders_over_limit, v.fifo_violations, v.stalls, v.max_stall_ms,
               v.shared_fence_splits, audit.findings, audit.overlaps, audit.checked,
               audit.missed, audit.extra);
        checker_free(r.checker);
        nodes_stop(&r.nodes);
        if (history)
            fclose(history);
        return problem ? 1 : strcmp(outcome, "INVALID") == 0 ? 2 : 0;
    }
}
