/* contended: P processes take turns on one name for a fixed window. Each
 * process records its grants (when it asked, when it got the lock, when it
 * released) in shared memory; the parent merges them in time order. A
 * handoff is a grant to another process than the previous grant; its
 * latency runs from the previous holder's release to this grant. */
#include "bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME "bench:contended"
#define GRANTS_MAX 400000 /* per process */

struct grant {
    double asked, got, released;
    int proc;
};

struct shared {
    volatile double start_at; /* 0 until the parent says go */
    long count[64];
    struct grant grants[];    /* procs * GRANTS_MAX */
};

static void worker(const struct bench_args *a, struct shared *sh, int proc)
{
    dlock_client *c = bench_client(a);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    struct grant *mine = &sh->grants[(size_t)proc * GRANTS_MAX];
    double end;
    long n = 0;
    if (!c)
        _exit(1);
    opts.fair = a->fair;
    while (sh->start_at == 0)
        usleep(100);
    while (bench_now() < sh->start_at)
        ;
    end = sh->start_at + a->seconds;
    while (n < GRANTS_MAX) {
        dlock_lock *lock = NULL;
        double asked = bench_now();
        int rc;
        if (asked >= end)
            break;
        opts.wait_ms = (int64_t)((end - asked) * 1000) + 1;
        rc = dlock_lock_acquire(&lock, c, NAME, 30000, &opts);
        if (rc == DLOCK_EBUSY)
            break; /* the window closed while we waited */
        if (rc < 0) {
            fprintf(stderr, "dlock-bench: %s: %s\n", dlock_strerror(rc), dlock_client_errmsg(c));
            _exit(1);
        }
        mine[n] = (struct grant){.asked = asked, .got = bench_now(), .proc = proc};
        /* The critical section is empty: we measure the lock. A handoff
         * starts when the release is sent: its reply and the waiters' wake-up
         * travel at the same time. */
        mine[n++].released = bench_now();
        rc = dlock_lock_release(lock);
        dlock_lock_free(lock);
        if (rc < 0)
            _exit(1);
    }
    sh->count[proc] = n;
    dlock_client_close(c);
    _exit(0);
}

static int by_time(const void *x, const void *y)
{
    const struct grant *a = x, *b = y;
    return (a->got > b->got) - (a->got < b->got);
}

static void report(const struct bench_args *a, struct grant *all, size_t n,
                   const struct shared *sh, const struct command_counts *before,
                   const struct command_counts *after)
{
    double *wait = malloc(sizeof(double) * (n + 1)), *handoff = malloc(sizeof(double) * (n + 1));
    size_t handoffs = 0;
    long min = -1, max = 0;
    qsort(all, n, sizeof(*all), by_time);
    for (size_t i = 0; i < n; i++) {
        wait[i] = all[i].got - all[i].asked;
        if (i > 0 && all[i].proc != all[i - 1].proc)
            handoff[handoffs++] = all[i].got - all[i - 1].released;
    }
    for (int p = 0; p < a->procs; p++) {
        min = min < 0 || sh->count[p] < min ? sh->count[p] : min;
        max = sh->count[p] > max ? sh->count[p] : max;
    }
    bench_sort(wait, n);
    bench_sort(handoff, handoffs);
    bench_json_begin("contended");
    bench_json_int("procs", a->procs);
    bench_json_int("fair", a->fair);
    bench_json_num("window_s", a->seconds);
    bench_json_int("grants", (long long)n);
    bench_json_num("grants_per_s", (double)n / a->seconds);
    bench_json_int("handoffs", (long long)handoffs);
    bench_json_num("handoffs_per_s", (double)handoffs / a->seconds);
    bench_json_num("wait_ms_p50", 1e3 * bench_percentile(wait, n, 50));
    bench_json_num("wait_ms_p99", 1e3 * bench_percentile(wait, n, 99));
    bench_json_num("handoff_ms_p50", 1e3 * bench_percentile(handoff, handoffs, 50));
    bench_json_num("handoff_ms_p99", 1e3 * bench_percentile(handoff, handoffs, 99));
    bench_json_int("min_grants_per_proc", min);
    bench_json_int("max_grants_per_proc", max);
    bench_json_num("requests_per_grant",
                   n ? (double)(after->top_level - before->top_level) / (double)n : 0);
    bench_json_num("commands_per_grant", n ? (double)(after->total - before->total) / (double)n : 0);
    bench_json_end();
    free(wait);
    free(handoff);
}

int bench_contended(const struct bench_args *a)
{
    size_t size = sizeof(struct shared) + sizeof(struct grant) * GRANTS_MAX * (size_t)a->procs;
    struct shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct command_counts before, after;
    pid_t pids[64];
    size_t n = 0;
    int failed = 0;

    if (sh == MAP_FAILED || a->procs < 1 || a->procs > 64)
        return 1;
    for (int p = 0; p < a->procs; p++) {
        pids[p] = fork();
        if (pids[p] == 0)
            worker(a, sh, p);
    }
    usleep(300 * 1000); /* let every worker connect */
    bench_command_counts(a->port, &before);
    sh->start_at = bench_now() + 0.05;
    usleep((useconds_t)((a->seconds + 0.05) * 1e6));
    bench_command_counts(a->port, &after); /* at the window's end, like the peers */
    for (int p = 0; p < a->procs; p++) {
        int status;
        waitpid(pids[p], &status, 0);
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    if (failed)
        return 1;
    /* Gather the grants inside the window. */
    for (int p = 0; p < a->procs; p++)
        for (long i = 0; i < sh->count[p]; i++) {
            struct grant g = sh->grants[(size_t)p * GRANTS_MAX + (size_t)i];
            if (g.got <= sh->start_at + a->seconds)
                sh->grants[n++] = g;
        }
    report(a, sh->grants, n, sh, &before, &after);
    munmap(sh, size);
    return 0;
}
