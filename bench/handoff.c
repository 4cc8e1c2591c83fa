/* The floor of a fair handoff: P processes pass one lock round-robin with
 * plain hiredis round trips and no library logic. The queue is fixed and
 * kept by the clients (process i hands to i + 1 mod P), so the server runs
 * no queue logic at all.
 *   floor-handoff         the holder's release is one EVALSHA that DELs the
 *                         key and PUBLISHes to the next process's own
 *                         channel; the next one wakes on its subscription,
 *                         sends SET key token NX PX ttl and, granted, hands
 *                         on: a release, a wake-up and an acquire, the least
 *                         a targeted queue sends per handoff.
 *   floor-handoff-direct  the release SETs the key to the next process's
 *                         token instead of deleting it: the lock is granted
 *                         by the release and the wake-up alone (no acquire
 *                         round trip), the raw wake chain.
 * Each process has its own subscription and command connections. A grant
 * is logged in memory the processes share, in grant order (one holder at a
 * time); a handoff's latency runs from the release being sent to the next
 * grant, as in the contended workload. */
#include "bench.h"

#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEY "bench:floor-handoff"
#define STOP "stop" /* the parent's message on every channel after the window */

static const char release_script[] =
    "redis.call('del',KEYS[1]) return redis.call('publish',KEYS[2],ARGV[1])";
static const char direct_script[] =
    "redis.call('set',KEYS[1],ARGV[1],'px',ARGV[2]) return redis.call('publish',KEYS[2],ARGV[1])";

struct grant {
    double got, released;
    int requests; /* round trips this grant sent: its acquire, if any, and its release */
};

struct shared {
    volatile double start_at; /* 0 until the parent says go */
    atomic_int ready;         /* processes subscribed */
    atomic_long n;            /* grants logged */
    long count[BENCH_PROCS_MAX];
    struct grant log[];       /* max_cycles */
};

/* One process's side of the chain. */
struct proc {
    const struct bench_args *a;
    struct shared *sh;
    redisContext *cmd, *sub;
    int i, direct;
    char sha[41], ttl[24], token[DLOCK_TOKEN_LEN + 1];
    char next_channel[64], next_token[DLOCK_TOKEN_LEN + 1];
};

/* floor-handoff-direct: the release grants the lock itself. */
static int is_direct(const struct bench_args *a)
{
    return strcmp(a->workload, "floor-handoff-direct") == 0;
}

static void channel_of(char *out, size_t size, int proc)
{
    snprintf(out, size, KEY ":%d", proc);
}

static void token_of(char out[DLOCK_TOKEN_LEN + 1], int proc)
{
    snprintf(out, DLOCK_TOKEN_LEN + 1, "%0*x", DLOCK_TOKEN_LEN, (unsigned)proc + 1);
}

static redisContext *handoff_connect(const struct bench_args *a)
{
    redisContext *c = redisConnect("127.0.0.1", a->port);
    if (!c || c->err) {
        fprintf(stderr, "dlock-bench floor-handoff: cannot reach 127.0.0.1:%d\n", a->port);
        redisFree(c);
        return NULL;
    }
    return c;
}

/* The head's acquire: SET NX PX, which must find the key free; 0 or -1. */
static int acquire(const struct proc *p)
{
    const char *set[] = {"SET", KEY, p->token, "NX", "PX", p->ttl};
    redisReply *r = redisCommandArgv(p->cmd, 6, set, NULL);
    int ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
    freeReplyObject(r);
    if (!ok)
        fprintf(stderr, "dlock-bench floor-handoff: SET NX refused: the key was not free\n");
    return ok ? 0 : -1;
}

/* The lock is this process's (after its acquire, if `acquired`): logs the
 * grant and hands on. 0, 1 when the log is full (the chain ends here), or
 * -1 after saying why. */
static int grant(struct proc *p, int acquired)
{
    const char *release[] = {"EVALSHA", p->sha, "2", KEY, p->next_channel, p->next_token, p->ttl};
    double end = p->sh->start_at + p->a->seconds;
    redisReply *r;
    struct grant *g;
    long k;
    int ok;
    k = atomic_fetch_add(&p->sh->n, 1);
    if (k >= p->a->max_cycles)
        return 1;
    g = &p->sh->log[k];
    g->got = bench_now();
    g->requests = acquired + 1;
    if (g->got <= end)
        p->sh->count[p->i]++;
    g->released = bench_now(); /* the critical section is empty */
    r = redisCommandArgv(p->cmd, 7, release, NULL);
    /* One receiver, the next process; none once it left after the window. */
    ok = r && r->type == REDIS_REPLY_INTEGER && (r->integer == 1 || bench_now() > end);
    freeReplyObject(r);
    if (!ok)
        fprintf(stderr, "dlock-bench floor-handoff: the release did not reach the next process\n");
    return ok ? 0 : -1;
}

/* Takes the lock this process was woken for: acquires it first if
 * `acquiring`, then logs the grant and hands on (as grant()). */
static int take(struct proc *p, int acquiring)
{
    return acquiring && acquire(p) < 0 ? -1 : grant(p, acquiring);
}

/* The next message on the subscription: 1 for a wake-up, 0 for the stop,
 * -1 on an error. */
static int next_message(redisContext *sub)
{
    redisReply *r = NULL;
    int rc = -1;
    if (redisGetReply(sub, (void **)&r) == REDIS_OK && r && r->type == REDIS_REPLY_ARRAY &&
        r->elements == 3 && r->element[2]->type == REDIS_REPLY_STRING)
        rc = strcmp(r->element[2]->str, STOP) != 0;
    freeReplyObject(r);
    return rc;
}

/* Process 0 takes the first grant at the window's start (with SET NX in
 * both workloads: the key starts free); every process then takes the
 * grants it is woken for until the window ends, and exits at the stop. */
static int chain(struct proc *p)
{
    int rc = 0, woken;
    if (p->i == 0) {
        while (p->sh->start_at == 0)
            usleep(100);
        while (bench_now() < p->sh->start_at)
            ;
        rc = take(p, 1);
    }
    while (rc >= 0 && (woken = next_message(p->sub)) != 0) {
        if (woken < 0)
            return -1;
        /* After the window, or once the log is full, the chain ends here. */
        if (rc == 0 && bench_now() <= p->sh->start_at + p->a->seconds)
            rc = take(p, !p->direct);
    }
    return rc < 0 ? -1 : 0;
}

/* One worker process: connects, subscribes to its channel, then runs its
 * part of the chain. Exits 0, or 1 on an error. */
static void worker(const struct bench_args *a, struct shared *sh, int i, const char *sha)
{
    struct proc p = {.a = a, .sh = sh, .i = i, .direct = is_direct(a)};
    char channel[64];
    redisReply *r;
    int ok;
    p.cmd = handoff_connect(a);
    p.sub = handoff_connect(a);
    if (!p.cmd || !p.sub)
        _exit(1);
    memcpy(p.sha, sha, sizeof(p.sha));
    snprintf(p.ttl, sizeof(p.ttl), "%lld", (long long)a->ttl_ms);
    token_of(p.token, i);
    token_of(p.next_token, (i + 1) % a->procs);
    channel_of(p.next_channel, sizeof(p.next_channel), (i + 1) % a->procs);
    channel_of(channel, sizeof(channel), i);
    r = redisCommand(p.sub, "SUBSCRIBE %s", channel);
    ok = r && r->type == REDIS_REPLY_ARRAY;
    freeReplyObject(r);
    if (!ok)
        _exit(1);
    atomic_fetch_add(&sh->ready, 1);
    ok = chain(&p) == 0;
    redisFree(p.sub);
    redisFree(p.cmd);
    _exit(ok ? 0 : 1);
}

/* Loads the release script of the workload, deletes the key; 0 or -1. */
static int prepare(redisContext *c, const struct bench_args *a, char sha[41])
{
    redisReply *r = redisCommand(c, "SCRIPT LOAD %s", is_direct(a) ? direct_script : release_script);
    int ok = r && r->type == REDIS_REPLY_STRING && r->len == 40;
    if (ok)
        memcpy(sha, r->str, 41);
    freeReplyObject(r);
    r = redisCommand(c, "DEL %s", KEY);
    ok = ok && r && r->type == REDIS_REPLY_INTEGER;
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* Waits up to 10 s for every process to subscribe; 0 or -1. */
static int wait_ready(const struct bench_args *a, struct shared *sh)
{
    double give_up = bench_now() + 10;
    while (atomic_load(&sh->ready) < a->procs)
        if (bench_now() > give_up)
            return -1;
        else
            usleep(1000);
    return 0;
}

/* The stop on every channel, then the exits of the processes spawned; 0,
 * or 1 if one failed. */
static int stop_all(redisContext *c, const struct bench_args *a, const pid_t *pids, int spawned)
{
    char channel[64];
    int failed = 0;
    for (int i = 0; i < a->procs; i++) {
        channel_of(channel, sizeof(channel), i);
        freeReplyObject(redisCommand(c, "PUBLISH %s %s", channel, STOP));
    }
    for (int i = 0; i < spawned; i++) {
        int status;
        waitpid(pids[i], &status, 0);
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    return failed;
}

static void report(const struct bench_args *a, const struct shared *sh,
                   const struct command_counts *before, const struct command_counts *after)
{
    long logged = atomic_load(&sh->n), n = 0, handoffs, requests = 0, min = -1, max = 0;
    double end = sh->start_at + a->seconds, *handoff;
    logged = logged < a->max_cycles ? logged : a->max_cycles;
    while (n < logged && sh->log[n].got <= end) /* in grant order, so in time order */
        requests += sh->log[n++].requests;
    handoffs = n > 0 ? n - 1 : 0; /* every grant but the first changes hands */
    handoff = malloc(sizeof(double) * (size_t)(n + 1));
    if (!handoff)
        return;
    for (long k = 0; k < handoffs; k++)
        handoff[k] = sh->log[k + 1].got - sh->log[k].released;
    bench_sort(handoff, (size_t)handoffs);
    for (int i = 0; i < a->procs; i++) {
        min = min < 0 || sh->count[i] < min ? sh->count[i] : min;
        max = sh->count[i] > max ? sh->count[i] : max;
    }
    bench_json_begin(a->workload);
    bench_json_int("procs", a->procs);
    bench_json_num("window_s", a->seconds);
    bench_json_int("grants", n);
    bench_json_num("grants_per_s", (double)n / a->seconds);
    bench_json_int("handoffs", handoffs);
    bench_json_num("handoffs_per_s", (double)handoffs / a->seconds);
    bench_json_num("handoff_ms_p50", 1e3 * bench_percentile(handoff, (size_t)handoffs, 50));
    bench_json_num("handoff_ms_p99", 1e3 * bench_percentile(handoff, (size_t)handoffs, 99));
    bench_json_int("min_grants_per_proc", min);
    bench_json_int("max_grants_per_proc", max);
    bench_json_num("client_commands_per_grant", n ? (double)requests / (double)n : 0);
    bench_json_num("commands_per_grant", n ? (double)(after->total - before->total) / (double)n : 0);
    bench_json_end();
    free(handoff);
}

int bench_floor_handoff(const struct bench_args *a)
{
    size_t size = sizeof(struct shared) + sizeof(struct grant) * (size_t)a->max_cycles;
    struct shared *sh;
    struct command_counts before, after;
    pid_t pids[BENCH_PROCS_MAX];
    redisContext *c;
    char sha[41];
    int spawned = 0, failed;
    if (a->procs < 2 || a->procs > BENCH_PROCS_MAX) {
        fprintf(stderr, "dlock-bench floor-handoff: --procs 2 to %d\n", BENCH_PROCS_MAX);
        return 1;
    }
    sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    c = handoff_connect(a);
    if (!c || prepare(c, a, sha) < 0) {
        redisFree(c);
        munmap(sh, size);
        return 1;
    }
    while (spawned < a->procs && (pids[spawned] = fork()) >= 0) {
        if (pids[spawned] == 0)
            worker(a, sh, spawned, sha);
        spawned++;
    }
    failed = spawned < a->procs || wait_ready(a, sh) < 0;
    if (!failed) {
        bench_command_counts(a->port, &before);
        sh->start_at = bench_now() + 0.05;
        usleep((useconds_t)((a->seconds + 0.05) * 1e6));
        bench_command_counts(a->port, &after);
    }
    failed |= stop_all(c, a, pids, spawned);
    if (!failed)
        report(a, sh, &before, &after);
    redisFree(c);
    munmap(sh, size);
    return failed;
}
