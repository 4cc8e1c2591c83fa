/* The fault-injection harness: real redis-servers behind fault proxies,
 * client processes contending through dlock, a nemesis that breaks things
 * on a seeded schedule, and a checker that keeps a fenced store and judges
 * the history afterwards. */
#ifndef DLOCK_CHAOS_H
#define DLOCK_CHAOS_H

#include "fault_proxy.h"
#include "redis_server.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CHAOS_NODES_MAX 7
#define CHAOS_CLIENTS_MAX 32
#define CHAOS_NAMES_MAX 16

enum persistence { PERSIST_NONE, PERSIST_AOF_EVERYSEC, PERSIST_AOF_ALWAYS };

/* What the clients' one endpoint is, in the failover scenarios: standalone
 * servers behind proxies otherwise. */
enum topology { TOPO_SERVERS, TOPO_SENTINEL, TOPO_CLUSTER };

/* What a run is made of; a scenario fills it in. */
struct chaos_config {
    const char *scenario;
    unsigned seed;
    int nodes, clients, names;
    int ttl_ms;
    int cs_ms;          /* time inside the critical section */
    bool auto_renew;    /* long critical sections kept alive by renewal */
    bool try_only;      /* single attempts (the client backs off itself): each
                           attempt's time is judged */
    int seconds;        /* how long the workload runs */
    int min_grants;     /* fewer makes the run invalid */
    enum persistence persistence;
    int command_timeout_ms;
    int stray_check_ms; /* after the end, no lock key may be left; 0: 2 x TTL */
    int permits;        /* > 1: every name is a semaphore of this many permits */
    enum topology topology; /* not TOPO_SERVERS: `nodes` is 1, the topology's endpoint */
    bool fair;          /* fair locks: waiters queue (docs/fair.md) */
    int lease_ms;       /* fair: the presence lease; 0: the library's default */
    int shared_every;   /* > 0: clients whose id it does not divide hold shared */
};

/* Client -> checker messages, one per datagram. */
enum msg_type {
    MSG_GRANT,   /* fence, t (acquire returned), until (validity end), nodes */
    MSG_ENTER,   /* t */
    MSG_WRITE,   /* fence, t, held (dlock_lock_held() just before): answered */
    MSG_EXIT,    /* t */
    MSG_RELEASE, /* t (about to release), code (its result, sent after) */
    MSG_LOST,    /* t, code: on_lost ran */
    MSG_FAILED,  /* t, code, duration: an acquire that gave up */
    MSG_VALID,   /* t, until: the validity seen inside the section (renewed) */
};

struct chaos_msg {
    int32_t type, client, name, code;
    int32_t held;
    uint32_t nodes; /* bit i: node i holds our token right after the grant */
    uint64_t fence;
    int64_t t_ns, until_ns, duration_ns;
    int32_t slot; /* a semaphore's permit: its slot (0 for a mutex) */
    int32_t shared; /* a shared holder's grant */
};

/* Nemesis events, for the history and for judging overlaps. */
enum fault_kind {
    FAULT_CLIENT_PAUSE,
    FAULT_CLIENT_RESUME,
    FAULT_NODE_PAUSE,
    FAULT_NODE_RESUME,
    FAULT_NODE_CRASH,
    FAULT_NODE_RESTART, /* data lost unless persisted */
    FAULT_NET,          /* proxy mode change */
    FAULT_CLOCK_JUMP,   /* node's clock moved forward by `amount` ms */
    FAULT_FAILOVER,     /* a replica took over; data_lost: asynchronous (Sentinel) */
};

struct fault_event {
    enum fault_kind kind;
    int target; /* client or node */
    int64_t t_ns;
    long long amount;
    bool data_lost;
};

/* Nodes: servers, their proxies, their clock offsets. */
struct test_sentinels;
struct test_cluster;

struct chaos_nodes {
    int n;
    enum topology topology;
    struct test_sentinels *sentinels; /* TOPO_SENTINEL */
    struct test_cluster *cluster;     /* TOPO_CLUSTER */
    test_redis servers[CHAOS_NODES_MAX];
    fault_proxy *proxies[CHAOS_NODES_MAX];
    char clock_file[CHAOS_NODES_MAX][160];
    long long clock_offset_ms[CHAOS_NODES_MAX];
    bool down[CHAOS_NODES_MAX];
    enum persistence persistence;
    char shim[512]; /* path of the clock shim, or "" */
};

int nodes_start(struct chaos_nodes *ns, int n, enum persistence p, const char *shim);
/* A primary with a replica behind three sentinels, or a cluster of three
 * masters with a replica each: one endpoint. */
int nodes_start_topology(struct chaos_nodes *ns, enum topology t);
/* SENTINEL FAILOVER, or CLUSTER FAILOVER on a random replica. 0 if asked. */
int nodes_failover(struct chaos_nodes *ns, unsigned *rng);
void nodes_stop(struct chaos_nodes *ns);
void nodes_crash(struct chaos_nodes *ns, int i);
int nodes_restart(struct chaos_nodes *ns, int i);
void nodes_pause(struct chaos_nodes *ns, int i, bool paused);
void nodes_shift_clock(struct chaos_nodes *ns, int i, long long ms);
/* Lock and owner keys of the run's names still on any node (fence keys are
 * meant to stay); -1 if a node cannot be asked. */
int nodes_stray_keys(struct chaos_nodes *ns, int names);
/* "redis://127.0.0.1:P" of each proxy, for the clients. */
void nodes_urls(const struct chaos_nodes *ns, char urls[][64]);

/* The workload of one client process; never returns. `sock` talks to the
 * checker. */
void client_main(const struct chaos_config *cfg, int id, int sock, const char urls[][64]);

/* The checker: the fenced store live, the judgement afterwards. */
struct checker;
struct checker *checker_new(const struct chaos_config *cfg, FILE *history);
/* Handles one message from client socket `sock` (answers writes). */
void checker_receive(struct checker *k, int sock);
void checker_fault(struct checker *k, const struct fault_event *e);
/* A client inside its critical section (the first from `from` on), or -1. */
int checker_client_in_section(const struct checker *k, int from);
/* A client that holds nothing (the first from `from` on): in a fair run,
 * most likely a waiter in the queue; or -1. */
int checker_client_waiting(const struct checker *k, int from);
long checker_grants(const struct checker *k);

struct verdict {
    long grants, failed_acquires, slow_ops;
    long degraded_grants; /* granted without every node */
    long validity_overlaps, permitted_overlaps, bug_overlaps;
    long section_overlaps, fence_regressions;
    long stale_rejected, stale_accepted;
    /* A stale write accepted or a fence gone backwards across a failover
     * that lost data: the fence key went with it, and the clock covers only
     * a counter not ahead of it (docs/fencing.md). Expected, not a bug. */
    long failover_fence_slips;
    long held_after_expiry; /* held() said yes past the validity */
    long lost;
    long late_loss_reports; /* renewed: a resumed holder heard of its loss late */
    long max_attempt_ms;    /* try_only: the longest single attempt */
    /* Clock jumps by size (< 1 s, 1-2 s, >= 2 s), and the permitted
     * overlaps in whose window the largest jump was of that size. */
    long jumps[3], jump_overlaps[3];
    long slow_attempts;     /* try_only: attempts past 3 node deadlines + slack */
    long loss_report_max_ms;
    /* Semaphores: the most validity windows of one name open at once, and
     * the instants at which more than its permits were (a bug). Per slot
     * every check above applies as to a mutex. */
    long max_holders, holders_over_limit;
    /* Fair locks: grants that passed a live waiter that asked clearly
     * earlier, and releases after which the next grant came later than a
     * presence lease (and a renewal) allow; the longest such gap. */
    long fifo_violations, stalls, max_stall_ms;
    /* Shared holders: grants whose fence is below an earlier shared
     * holder's of the same epoch (see checker.c). */
    long shared_fence_splits;
};
void checker_judge(struct checker *k, struct verdict *v);
void checker_free(struct checker *k);

/* Two grants of a name whose critical sections overlapped. */
struct chaos_overlap {
    int name;
    uint64_t fence_a, fence_b; /* a granted first */
    /* The entries that tell of it were written with every node up, and no
     * server lost its data (its streams with it) afterwards. */
    bool knowable;
};
/* After checker_judge(): the section overlaps (the first 4096), and the
 * overlapping validity windows of name `name`. */
size_t checker_section_overlaps(const struct checker *k, const struct chaos_overlap **out);
long checker_validity_overlaps(const struct checker *k, int name);

/* The audit against the checker: every run's clients write the audit
 * stream, and afterwards dlock_audit_read() must find, for every section
 * overlap that its streams can know of (knowable), a finding about one of
 * its two holds (an overlap, a hold past its validity...); and no overlap
 * of grants on a name where the checker found no overlapping validity
 * windows (unless a server's clock jumped: the audit reads server clocks). */
struct audit_agreement {
    long findings, overlaps; /* the audit's, over every name */
    long checked;            /* knowable section overlaps */
    long missed;             /* of those, with no finding about them */
    long extra;              /* audit overlaps where the checker saw none */
    bool unreadable;         /* a stream could not be read */
};
void audit_agree(const struct chaos_config *cfg, const char urls[][64], const struct checker *k,
                 bool clocks_jumped, struct audit_agreement *out);

int64_t chaos_now_ns(void);

#endif
