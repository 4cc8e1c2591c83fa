/* shared: P processes on one name (--procs), the last --writers
 * of them (default 1) taking it exclusively, the others shared
 * (docs/shared.md), each for a short critical section (--cs-us, default
 * 200 µs), for a fixed window. Shared-memory counters follow who is inside:
 * a writer inside together with anyone else fails the run. It reports the
 * grants of each side, the requests per grant, and the writers' wait (mean
 * and longest), which is what a stream of readers may starve. */
#include "bench.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define NAME "bench:shared"

struct shared {
    volatile double start_at; /* 0 until the parent says go */
    atomic_int readers_inside, writers_inside;
    atomic_int most_readers, overlaps;
    int cs_us, first_writer;
    long grants[BENCH_PROCS_MAX];
    long waited_us[BENCH_PROCS_MAX]; /* sum of the waits, for the mean */
    long longest_us[BENCH_PROCS_MAX];
};

static void raise_to(atomic_int *most, int now)
{
    int seen = atomic_load(most);
    while (now > seen && !atomic_compare_exchange_weak(most, &seen, now))
        ;
}

static int hold(void *ctx, int proc, double asked, double end)
{
    struct shared *sh = ctx;
    bool writer = proc >= sh->first_writer;
    long waited = (long)((bench_now() - asked) * 1e6);
    if (writer) {
        if (atomic_fetch_add(&sh->writers_inside, 1) > 0 || atomic_load(&sh->readers_inside) > 0)
            atomic_fetch_add(&sh->overlaps, 1);
    } else {
        raise_to(&sh->most_readers, atomic_fetch_add(&sh->readers_inside, 1) + 1);
        if (atomic_load(&sh->writers_inside) > 0)
            atomic_fetch_add(&sh->overlaps, 1);
    }
    if (bench_now() <= end) {
        sh->grants[proc]++;
        sh->waited_us[proc] += waited;
        sh->longest_us[proc] = waited > sh->longest_us[proc] ? waited : sh->longest_us[proc];
    }
    usleep((useconds_t)sh->cs_us);
    atomic_fetch_sub(writer ? &sh->writers_inside : &sh->readers_inside, 1);
    return 0;
}

/* Grants, summed waits and the longest wait of processes [from, to). */
static void side(const struct shared *sh, int from, int to, long *grants, long *waited,
                 long *longest)
{
    *grants = *waited = *longest = 0;
    for (int p = from; p < to; p++) {
        *grants += sh->grants[p];
        *waited += sh->waited_us[p];
        *longest = sh->longest_us[p] > *longest ? sh->longest_us[p] : *longest;
    }
}

static void report(const struct bench_args *a, const struct shared *sh,
                   const struct command_counts *before, const struct command_counts *after)
{
    long rg, rw, rl, wg, ww, wl, n;
    side(sh, 0, sh->first_writer, &rg, &rw, &rl);
    side(sh, sh->first_writer, a->procs, &wg, &ww, &wl);
    n = rg + wg;
    bench_json_begin("shared");
    bench_json_int("readers", sh->first_writer);
    bench_json_int("writers", a->procs - sh->first_writer);
    bench_json_int("cs_us", a->cs_us);
    bench_json_num("window_s", a->seconds);
    bench_json_num("grants_per_s", (double)n / a->seconds);
    bench_json_num("reader_grants_per_s", (double)rg / a->seconds);
    bench_json_num("writer_grants_per_s", (double)wg / a->seconds);
    bench_json_num("requests_per_grant",
                   n ? (double)(after->top_level - before->top_level) / (double)n : 0);
    bench_json_num("reader_wait_ms_mean", rg ? (double)rw / (double)rg / 1e3 : 0);
    bench_json_num("writer_wait_ms_mean", wg ? (double)ww / (double)wg / 1e3 : 0);
    bench_json_num("writer_wait_ms_max", (double)wl / 1e3);
    bench_json_int("max_readers_inside", atomic_load(&sh->most_readers));
    bench_json_end();
}

int bench_shared(const struct bench_args *a)
{
    struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                             -1, 0);
    struct bench_turns turns = {.name = NAME, .opts = DLOCK_ACQUIRE_OPTIONS_INIT, .on_grant = hold};
    struct command_counts before, after;
    int failed;

    if (sh == MAP_FAILED || a->procs < 2 || a->procs > BENCH_PROCS_MAX || a->writers < 1 ||
        a->writers >= a->procs || a->n_ports != 1)
        return 1;
    sh->cs_us = a->cs_us;
    sh->first_writer = a->procs - a->writers;
    turns.shared_procs = sh->first_writer;
    turns.start_at = &sh->start_at;
    turns.ctx = sh;
    failed = bench_turns_run(a, &turns, &before, &after);
    if (!failed)
        report(a, sh, &before, &after);
    if (!failed && atomic_load(&sh->overlaps) > 0) {
        fprintf(stderr, "dlock-bench: a writer held the name with someone else %d times\n",
                atomic_load(&sh->overlaps));
        failed = 1;
    }
    munmap(sh, sizeof(*sh));
    return failed;
}
