/* semaphore: P processes share one semaphore of N permits (--permits,
 * default 4) for a fixed window, each holding its permit for a short
 * critical section (--cs-us, default 200 µs), auto-renewed with --renew. A counter in shared memory
 * counts the processes inside their critical sections: its largest value is
 * the concurrency observed, which must never exceed N. Fairness is the
 * spread of the grants per process and Jain's index over them (1: equal). */
#include "bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define NAME "bench:semaphore"

struct shared {
    volatile double start_at; /* 0 until the parent says go */
    atomic_int inside;        /* processes in their critical section now */
    atomic_int most_inside;
    int cs_us;                /* the critical section */
    long grants[BENCH_PROCS_MAX];
    long waited_us[BENCH_PROCS_MAX]; /* sum of the waits, for the mean */
};

static void enter(struct shared *sh)
{
    int now = atomic_fetch_add(&sh->inside, 1) + 1;
    int most = atomic_load(&sh->most_inside);
    while (now > most && !atomic_compare_exchange_weak(&sh->most_inside, &most, now))
        ;
}

/* Holds the permit for the critical section, counted inside it. */
static int hold(void *ctx, int proc, double asked, double end)
{
    struct shared *sh = ctx;
    enter(sh);
    if (bench_now() <= end) {
        sh->grants[proc]++;
        sh->waited_us[proc] += (long)((bench_now() - asked) * 1e6);
    }
    usleep((useconds_t)sh->cs_us);
    atomic_fetch_sub(&sh->inside, 1);
    return 0;
}

static void report(const struct bench_args *a, const struct shared *sh,
                   const struct command_counts *before, const struct command_counts *after)
{
    long n = 0, min = -1, max = 0, waited = 0;
    double sum_sq = 0;
    for (int p = 0; p < a->procs; p++) {
        long g = sh->grants[p];
        n += g;
        waited += sh->waited_us[p];
        sum_sq += (double)g * (double)g;
        min = min < 0 || g < min ? g : min;
        max = g > max ? g : max;
    }
    bench_json_begin("semaphore");
    bench_json_int("procs", a->procs);
    bench_json_int("permits", a->permits);
    bench_json_int("cs_us", a->cs_us);
    bench_json_int("renew", a->renew);
    bench_json_num("window_s", a->seconds);
    bench_json_int("grants", n);
    bench_json_num("grants_per_s", (double)n / a->seconds);
    bench_json_num("wait_ms_mean", n ? (double)waited / (double)n / 1e3 : 0);
    bench_json_num("requests_per_grant",
                   n ? (double)(after->top_level - before->top_level) / (double)n : 0);
    bench_json_num("commands_per_grant", n ? (double)(after->total - before->total) / (double)n : 0);
    bench_json_int("max_concurrency", atomic_load(&sh->most_inside));
    bench_json_int("min_grants_per_proc", min);
    bench_json_int("max_grants_per_proc", max);
    bench_json_num("jain_fairness", sum_sq > 0 ? (double)n * (double)n / (a->procs * sum_sq) : 0);
    bench_json_end();
}

int bench_semaphore(const struct bench_args *a)
{
    struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                             -1, 0);
    struct bench_turns turns = {.name = NAME, .opts = DLOCK_ACQUIRE_OPTIONS_INIT, .on_grant = hold};
    struct command_counts before, after;
    int failed;

    if (sh == MAP_FAILED || a->procs < 1 || a->procs > BENCH_PROCS_MAX || a->permits < 2 ||
        a->permits > DLOCK_PERMITS_MAX)
        return 1;
    sh->cs_us = a->cs_us;
    turns.opts.permits = (unsigned)a->permits;
    turns.opts.auto_renew = a->renew;
    turns.start_at = &sh->start_at;
    turns.ctx = sh;
    failed = bench_turns_run(a, &turns, &before, &after);
    if (!failed)
        report(a, sh, &before, &after);
    if (!failed && atomic_load(&sh->most_inside) > a->permits) {
        fprintf(stderr, "dlock-bench: %d processes held one of %d permits at once\n",
                atomic_load(&sh->most_inside), a->permits);
        failed = 1;
    }
    munmap(sh, sizeof(*sh));
    return failed;
}
