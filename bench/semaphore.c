/* semaphore: P processes share one semaphore of N permits (--permits,
 * default 4) for a fixed window, each holding its permit for a short
 * critical section (--cs-us, default 200 µs). A counter in shared memory
 * counts the processes inside their critical sections: its largest value is
 * the concurrency observed, which must never exceed N. Fairness is the
 * spread of the grants per process and Jain's index over them (1: equal). */
#include "bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME "bench:semaphore"
#define PROCS_MAX 64

struct shared {
    volatile double start_at; /* 0 until the parent says go */
    atomic_int inside;        /* processes in their critical section now */
    atomic_int most_inside;
    long grants[PROCS_MAX];
    long waited_us[PROCS_MAX]; /* sum of the waits, for the mean */
};

static void enter(struct shared *sh)
{
    int now = atomic_fetch_add(&sh->inside, 1) + 1;
    int most = atomic_load(&sh->most_inside);
    while (now > most && !atomic_compare_exchange_weak(&sh->most_inside, &most, now))
        ;
}

static void worker(const struct bench_args *a, struct shared *sh, int proc)
{
    dlock_client *c = bench_client(a);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    double end;
    if (!c)
        _exit(1);
    opts.permits = (unsigned)a->permits;
    while (sh->start_at == 0)
        usleep(100);
    while (bench_now() < sh->start_at)
        ;
    end = sh->start_at + a->seconds;
    for (;;) {
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
        enter(sh);
        if (bench_now() <= end) {
            sh->grants[proc]++;
            sh->waited_us[proc] += (long)((bench_now() - asked) * 1e6);
        }
        usleep((useconds_t)a->cs_us);
        atomic_fetch_sub(&sh->inside, 1);
        rc = dlock_lock_release(lock);
        dlock_lock_free(lock);
        if (rc < 0)
            _exit(1);
    }
    dlock_client_close(c);
    _exit(0);
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
    struct command_counts before, after;
    pid_t pids[PROCS_MAX];
    int failed = 0;

    if (sh == MAP_FAILED || a->procs < 1 || a->procs > PROCS_MAX || a->permits < 2 ||
        a->permits > DLOCK_PERMITS_MAX)
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
    bench_command_counts(a->port, &after);
    for (int p = 0; p < a->procs; p++) {
        int status;
        waitpid(pids[p], &status, 0);
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
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
