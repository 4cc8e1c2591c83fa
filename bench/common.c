/* dlock-bench: time, statistics, the cycle loop, INFO commandstats, JSON
 * output. */
#include "bench.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), compare_doubles);
}

double bench_percentile(const double *sorted, size_t n, double p)
{
    size_t i;
    if (n == 0)
        return 0;
    i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return sorted[i < n ? i : n - 1];
}

long bench_cycles(int (*cycle)(void *ctx), void *ctx, double end, long max_cycles, double *lat)
{
    double prev = bench_now();
    long n = 0;
    while (n < max_cycles && prev < end) {
        double now;
        if (cycle(ctx) < 0)
            return -1;
        now = bench_now();
        if (lat)
            lat[n] = now - prev;
        n++;
        prev = now;
    }
    return n;
}

static int is_top_level(const char *name)
{
    /* dlock sends nothing else itself; SET, GET, DEL... run inside its
     * scripts, where Redis counts them too. */
    static const char *const names[] = {"evalsha", "eval", "subscribe", "unsubscribe",
                                        "script|load", "script"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return 0;
}

int bench_command_counts(int port, struct command_counts *out)
{
    redisContext *c = redisConnect("127.0.0.1", port);
    redisReply *r;
    char *line, *save = NULL;
    memset(out, 0, sizeof(*out));
    if (!c || c->err) {
        redisFree(c);
        return -1;
    }
    r = redisCommand(c, "INFO commandstats");
    if (!r || r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        redisFree(c);
        return -1;
    }
    for (line = strtok_r(r->str, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
        /* cmdstat_NAME:calls=N,usec=U,... */
        char *name = line + strlen("cmdstat_"), *colon = strchr(line, ':'), *end;
        long long calls, usec;
        if (strncmp(line, "cmdstat_", 8) != 0 || !colon || strncmp(colon, ":calls=", 7) != 0)
            continue;
        calls = strtoll(colon + 7, &end, 10);
        if (strncmp(end, ",usec=", 6) != 0)
            continue;
        usec = strtoll(end + 6, NULL, 10);
        *colon = '\0';
        if (strcmp(name, "info") == 0)
            continue; /* the measurement's own */
        out->total += calls;
        out->usec += usec;
        if (is_top_level(name))
            out->top_level += calls;
    }
    freeReplyObject(r);
    redisFree(c);
    return 0;
}

dlock_client *bench_client(const struct bench_args *a)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;
    char urls[BENCH_PORTS_MAX][48], why[256];
    const char *u[BENCH_PORTS_MAX];
    for (int i = 0; i < a->n_ports; i++) {
        snprintf(urls[i], sizeof(urls[i]), "redis://127.0.0.1:%d", a->ports[i]);
        u[i] = urls[i];
    }
    opts.urls = u;
    opts.n_urls = (size_t)a->n_ports;
    opts.node_timeout_ms = a->node_timeout_ms;
    opts.replicas = a->replicas;
    opts.restart_delay_ms = a->restart_delay_ms;
    opts.audit = a->audit;
    if (dlock_client_open(&c, &opts, why, sizeof(why)) < 0) {
        fprintf(stderr, "dlock-bench: %s\n", why);
        return NULL;
    }
    return c;
}

void bench_json_begin(const char *workload)
{
    printf("{\"impl\":\"dlock\",\"workload\":\"%s\"", workload);
}

void bench_json_num(const char *key, double value)
{
    printf(",\"%s\":%.3f", key, value);
}

void bench_json_int(const char *key, long long value)
{
    printf(",\"%s\":%lld", key, value);
}

void bench_json_server_cost(const struct command_counts *before,
                            const struct command_counts *after, long cycles)
{
    bench_json_num("commands_per_cycle", (double)(after->total - before->total) / (double)cycles);
    bench_json_num("server_us_per_cycle", (double)(after->usec - before->usec) / (double)cycles);
}

void bench_json_end(void)
{
    printf("}\n");
    fflush(stdout);
}
