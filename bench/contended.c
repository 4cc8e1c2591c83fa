/* contended: P processes take turns on one name for a fixed window. Each
 * process records its grants (when it asked, when it got the lock, when it
 * released) in shared memory; the parent merges them in time order. A
 * handoff is a grant to another process than the previous grant; its
 * latency runs from the previous holder's release to this grant. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NAME "bench:contended"
#define GRANTS_MAX 400000 /* per process */

struct grant {
    double asked, got, released;
    int proc;
};

struct shared {
    volatile double start_at; /* 0 until the parent says go */
    long count[BENCH_PROCS_MAX];
    struct grant grants[];    /* procs * GRANTS_MAX */
};

/* Records the grant; the release is sent next. */
static int record_grant(void *ctx, int proc, double asked, double end)
{
    struct shared *sh = ctx;
    struct grant *g = &sh->grants[(size_t)proc * GRANTS_MAX + (size_t)sh->count[proc]];
    (void)end;
    *g = (struct grant){.asked = asked, .got = bench_now(), .proc = proc};
    /* The critical section is empty: we measure the lock. A handoff
     * starts when the release is sent: its reply and the waiters' wake-up
     * travel at the same time. */
    g->released = bench_now();
    return ++sh->count[proc] == GRANTS_MAX;
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
    bench_json_int("renew", a->renew);
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
    struct bench_turns turns = {.name = NAME, .opts = DLOCK_ACQUIRE_OPTIONS_INIT,
                                .on_grant = record_grant};
    struct command_counts before, after;
    size_t n = 0;

    if (sh == MAP_FAILED || a->procs < 1 || a->procs > BENCH_PROCS_MAX)
        return 1;
    turns.opts.fair = a->fair;
    turns.opts.auto_renew = a->renew;
    turns.start_at = &sh->start_at;
    turns.ctx = sh;
    if (bench_turns_run(a, &turns, &before, &after) != 0)
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
