/* dlock-bench: workloads that measure the library against the protocol floor
 * (the same commands sent with plain hiredis round trips). Each workload
 * prints one JSON line on stdout. */
#ifndef DLOCK_BENCH_H
#define DLOCK_BENCH_H

#include <dlock.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_PORTS_MAX 15
#define BENCH_PROCS_MAX 64 /* contended, semaphore, floor-handoff: processes */

struct bench_args {
    const char *workload;
    int port; /* the first server's; counts are taken there */
    int ports[BENCH_PORTS_MAX];
    int n_ports; /* several: the client is a Redlock client */
    double seconds;
    int procs;   /* contended, floor-handoff: processes */
    int locks;   /* renew: locks held */
    int clients; /* many: client threads */
    int64_t ttl_ms;
    int node_timeout_ms; /* the client's per-node deadline; 0: its default */
    int replicas;              /* the client's replicas option (WAIT) */
    int64_t restart_delay_ms;  /* the client's restart rule; 0: off */
    long max_cycles;
    int permits; /* semaphore: its permits */
    int writers; /* shared: the processes that take the name exclusively */
    int cs_us;   /* semaphore: the critical section */
    int fair; /* contended: fair locks (a queue) instead of notify-all */
    int renew; /* contended: locks auto-renewed (as `dlock run` holds them) */
    int audit; /* the client's audit option (uncontended-audit) */
};

/* Time and statistics. */
double bench_now(void); /* seconds, CLOCK_MONOTONIC */
double bench_percentile(const double *sorted, size_t n, double p);
void bench_sort(double *v, size_t n);

/* Runs cycle(ctx) (0, or -1 after saying why on stderr) until `end` or
 * max_cycles; each one's latency into lat (may be NULL). Returns the number
 * of cycles, or -1. */
long bench_cycles(int (*cycle)(void *ctx), void *ctx, double end, long max_cycles, double *lat);

/* INFO commandstats, without the INFO calls themselves: calls summed as
 * "every command Redis ran" and as "top-level requests" (what dlock sends:
 * evalsha, eval, subscribe, unsubscribe, script), and the microseconds
 * Redis reports for all of them. A script's usec includes the commands it
 * runs, which Redis reports again on their own lines: the sum counts them
 * twice, alike for every workload that runs scripts. */
struct command_counts {
    long long total;
    long long top_level;
    long long usec;
};
int bench_command_counts(int port, struct command_counts *out);
/* Adds commands_per_cycle and server_us_per_cycle: (after - before) / cycles. */
void bench_json_server_cost(const struct command_counts *before,
                            const struct command_counts *after, long cycles);

/* A client on 127.0.0.1 at every port of `a`. */
dlock_client *bench_client(const struct bench_args *a);

/* P processes (a->procs, at most BENCH_PROCS_MAX) taking turns on one
 * name for a->seconds: each acquires with `opts` (wait_ms: what is left of
 * the window) and calls on_grant before it releases. */
struct bench_turns {
    const char *name;
    dlock_acquire_options opts;
    volatile double *start_at; /* in memory the processes share; 0 until the window opens */
    /* With each grant (asked: when the attempt began); nonzero: this
     * process stops. */
    int (*on_grant)(void *ctx, int proc, double asked, double end);
    void *ctx; /* shared with the processes too, where on_grant writes */
    int shared_procs; /* processes [0, shared_procs) hold the name shared */
};
/* Forks the processes, opens the window once they had time to connect and
 * waits for them; the server's counts just before and after the window.
 * 0, or 1 if a process failed. */
int bench_turns_run(const struct bench_args *a, const struct bench_turns *t,
                    struct command_counts *before, struct command_counts *after);

/* JSON output helpers: bench_json_begin("uncontended") ... bench_json_end(). */
void bench_json_begin(const char *workload);
void bench_json_num(const char *key, double value);
void bench_json_int(const char *key, long long value);
void bench_json_end(void);

int bench_floor(const struct bench_args *a);
int bench_floor_minimal(const struct bench_args *a);
int bench_floor_null(const struct bench_args *a);
int bench_floor_handoff(const struct bench_args *a); /* and floor-handoff-direct */
int bench_uncontended(const struct bench_args *a);
int bench_many(const struct bench_args *a);
int bench_contended(const struct bench_args *a);
int bench_renew(const struct bench_args *a);
int bench_semaphore(const struct bench_args *a);
int bench_shared(const struct bench_args *a);

#endif
