/* renew: K auto-renewed locks held by one client for a window: renewals per
 * second, CPU seconds the client used (its renewal thread does the work),
 * and memory per lock. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static long resident_bytes(void)
{
    long resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        char line[128] = "", *field;
        if (fgets(line, sizeof(line), f) && (field = strchr(line, ' ')))
            resident = strtol(field + 1, NULL, 10);
        fclose(f);
    }
    return resident * sysconf(_SC_PAGESIZE);
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int bench_renew(const struct bench_args *a)
{
    dlock_client *c = bench_client(a);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock **locks = calloc((size_t)a->locks, sizeof(dlock_lock *));
    struct command_counts before, after;
    long rss_before, rss_after;
    double cpu_before, cpu_used, start, elapsed;
    int lost = 0;

    if (!c || !locks) {
        free(locks);
        dlock_client_close(c);
        return 1;
    }
    opts.auto_renew = 1;
    rss_before = resident_bytes();
    for (int i = 0; i < a->locks; i++) {
        char name[64];
        snprintf(name, sizeof(name), "bench:renew:%d", i);
        if (dlock_lock_acquire(&locks[i], c, name, a->ttl_ms, &opts) < 0) {
            fprintf(stderr, "dlock-bench renew: %s\n", dlock_client_errmsg(c));
            for (int j = 0; j < i; j++)
                dlock_lock_free(locks[j]);
            free(locks);
            dlock_client_close(c);
            return 1;
        }
    }
    rss_after = resident_bytes();
    bench_command_counts(a->port, &before);
    cpu_before = cpu_seconds();
    start = bench_now();
    usleep((useconds_t)(a->seconds * 1e6));
    elapsed = bench_now() - start;
    cpu_used = cpu_seconds() - cpu_before; /* the window only, not the releases */
    bench_command_counts(a->port, &after);
    for (int i = 0; i < a->locks; i++) {
        lost += !dlock_lock_held(locks[i]);
        dlock_lock_release(locks[i]);
        dlock_lock_free(locks[i]);
    }
    bench_json_begin("renew");
    bench_json_int("locks", a->locks);
    bench_json_int("ttl_ms", a->ttl_ms);
    bench_json_num("window_s", elapsed);
    bench_json_num("renewals_per_s", (double)(after.top_level - before.top_level) / elapsed);
    bench_json_num("expected_renewals_per_s", a->locks / ((double)a->ttl_ms / 3000.0));
    bench_json_num("cpu_s", cpu_used);
    bench_json_num("rss_bytes_per_lock", (double)(rss_after - rss_before) / a->locks);
    bench_json_int("lost", lost);
    bench_json_end();
    free(locks);
    dlock_client_close(c);
    return lost ? 1 : 0;
}
