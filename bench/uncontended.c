/* uncontended: acquire+release cycles of one name in one process; many: the
 * same with M client threads on distinct names, to see where the server,
 * not the library, becomes the limit. */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* An acquire+release cycle of one name. */
struct cycle {
    dlock_client *c;
    const char *name;
};

static int run_cycle(void *ctx)
{
    const struct cycle *cy = ctx;
    dlock_lock *lock = NULL;
    int rc = dlock_lock_acquire(&lock, cy->c, cy->name, 30000, NULL);
    if (rc == 0)
        rc = dlock_lock_release(lock);
    dlock_lock_free(lock);
    if (rc < 0) {
        fprintf(stderr, "dlock-bench: %s: %s\n", dlock_strerror(rc), dlock_client_errmsg(cy->c));
        return -1;
    }
    return 0;
}

/* Runs cycles on `name` until `end` or max_cycles; latencies into lat (may
 * be NULL). Returns the number of cycles, or -1. */
static long cycles(dlock_client *c, const char *name, double end, long max_cycles, double *lat)
{
    struct cycle cy = {c, name};
    return bench_cycles(run_cycle, &cy, end, max_cycles, lat);
}

int bench_uncontended(const struct bench_args *a)
{
    dlock_client *c = bench_client(a);
    double *lat = malloc(sizeof(double) * (size_t)a->max_cycles);
    struct command_counts before, after;
    char name[64];
    double start;
    long n;
    /* One name per workload: a Redlock workload whose paused nodes run a
     * late acquire when resumed leaves no key in the way of the others. */
    snprintf(name, sizeof(name), "bench:%s", a->workload);
    if (!c || !lat) {
        free(lat);
        dlock_client_close(c);
        return 1;
    }
    cycles(c, name, bench_now() + 0.2, 1000, NULL); /* warm-up */
    bench_command_counts(a->port, &before);
    start = bench_now();
    n = cycles(c, name, start + a->seconds, a->max_cycles, lat);
    if (n <= 0) {
        free(lat);
        dlock_client_close(c);
        return 1;
    }
    {
        double elapsed = bench_now() - start;
        bench_command_counts(a->port, &after);
        bench_sort(lat, (size_t)n);
        bench_json_begin(a->workload);
        bench_json_int("nodes", a->n_ports);
        bench_json_int("node_timeout_ms", a->node_timeout_ms); /* 0: the default */
        bench_json_int("replicas", a->replicas);
        bench_json_int("restart_delay_ms", a->restart_delay_ms);
        bench_json_int("cycles", n);
        bench_json_num("cycles_per_s", (double)n / elapsed);
        bench_json_num("us_per_cycle_p50", 1e6 * bench_percentile(lat, (size_t)n, 50));
        bench_json_num("us_per_cycle_p99", 1e6 * bench_percentile(lat, (size_t)n, 99));
        bench_json_num("requests_per_cycle",
                       (double)(after.top_level - before.top_level) / (double)n);
        bench_json_server_cost(&before, &after, n);
        bench_json_end();
    }
    free(lat);
    dlock_client_close(c);
    return 0;
}

struct many_worker {
    const struct bench_args *a;
    int index;
    double end;
    long cycles;
    pthread_t thread;
};

static void *many_thread(void *arg)
{
    struct many_worker *w = arg;
    dlock_client *c = bench_client(w->a);
    char name[64];
    snprintf(name, sizeof(name), "bench:many:%d", w->index);
    w->cycles = c ? cycles(c, name, w->end, w->a->max_cycles, NULL) : -1;
    dlock_client_close(c);
    return NULL;
}

int bench_many(const struct bench_args *a)
{
    struct many_worker *w = calloc((size_t)a->clients, sizeof(*w));
    double start = bench_now();
    long total = 0;
    int failed = 0;
    if (!w)
        return 1;
    for (int i = 0; i < a->clients; i++) {
        w[i] = (struct many_worker){.a = a, .index = i, .end = start + a->seconds};
        pthread_create(&w[i].thread, NULL, many_thread, &w[i]);
    }
    for (int i = 0; i < a->clients; i++) {
        pthread_join(w[i].thread, NULL);
        total += w[i].cycles;
        failed |= w[i].cycles < 0;
    }
    if (failed) {
        free(w);
        return 1;
    }
    bench_json_begin("many");
    bench_json_int("clients", a->clients);
    bench_json_int("cycles", total);
    bench_json_num("cycles_per_s", (double)total / (bench_now() - start));
    bench_json_end();
    free(w);
    return 0;
}
