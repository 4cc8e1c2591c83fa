/* Processes that take turns on one name for a fixed window: the loop the
 * contended, semaphore and shared workloads share. See bench.h. */
#include "bench.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

/* One worker process: acquires until the window ends, then exits (0, or 1
 * on an error). */
static void take_turns(const struct bench_args *a, const struct bench_turns *t, int proc)
{
    dlock_client *c = bench_client(a);
    dlock_acquire_options opts = t->opts;
    double end;
    if (!c)
        _exit(1);
    opts.shared = proc < t->shared_procs;
    while (*t->start_at == 0)
        usleep(100);
    while (bench_now() < *t->start_at)
        ;
    end = *t->start_at + a->seconds;
    for (;;) {
        dlock_lock *lock = NULL;
        double asked = bench_now();
        int rc, stop;
        if (asked >= end)
            break;
        opts.wait_ms = (int64_t)((end - asked) * 1000) + 1;
        rc = dlock_lock_acquire(&lock, c, t->name, 30000, &opts);
        if (rc == DLOCK_EBUSY)
            break; /* the window closed while we waited */
        if (rc < 0) {
            fprintf(stderr, "dlock-bench: %s: %s\n", dlock_strerror(rc), dlock_client_errmsg(c));
            _exit(1);
        }
        stop = t->on_grant(t->ctx, proc, asked, end);
        rc = dlock_lock_release(lock);
        dlock_lock_free(lock);
        if (rc < 0)
            _exit(1);
        if (stop)
            break;
    }
    dlock_client_close(c);
    _exit(0);
}

int bench_turns_run(const struct bench_args *a, const struct bench_turns *t,
                    struct command_counts *before, struct command_counts *after)
{
    pid_t pids[BENCH_PROCS_MAX];
    int failed = 0;
    for (int p = 0; p < a->procs; p++) {
        pids[p] = fork();
        if (pids[p] == 0)
            take_turns(a, t, p);
    }
    usleep(300 * 1000); /* let every worker connect */
    bench_command_counts(a->port, before);
    *t->start_at = bench_now() + 0.05;
    usleep((useconds_t)((a->seconds + 0.05) * 1e6));
    bench_command_counts(a->port, after); /* at the window's end, like the peers */
    for (int p = 0; p < a->procs; p++) {
        int status;
        waitpid(pids[p], &status, 0);
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    return failed;
}
