/* floor: the commands of one uncontended acquire+release cycle (the same two
 * scripts, keys and argument sizes), sent with plain blocking hiredis round
 * trips and no library logic. It needs the scripts' text, so this one file
 * reads the library's private scripts.h. */
#include "bench.h"
#include "scripts.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NAME "bench:floor"
#define FENCE_KEY "{bench:floor}:fence"
#define OWNER_KEY "{bench:floor}:owner"
#define CHANNEL "{bench:floor}:released"

static int call(redisContext *c, int argc, const char **argv, long long expect)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    int ok = r && ((r->type == REDIS_REPLY_INTEGER && r->integer == expect) ||
                   (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
                    r->element[0]->integer == expect));
    if (!ok)
        fprintf(stderr, "dlock-bench floor: unexpected reply to %s\n", argv[0]);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* Sends each script once with EVAL, so that EVALSHA finds it. */
static int load_scripts(redisContext *c)
{
    const char *argv[] = {"SCRIPT", "LOAD", NULL};
    for (int id = DLOCK__SCRIPT_ACQUIRE; id <= DLOCK__SCRIPT_RELEASE; id++) {
        redisReply *r;
        argv[2] = dlock__script_source((enum dlock__script_id)id);
        r = redisCommandArgv(c, 3, argv, NULL);
        if (!r || r->type != REDIS_REPLY_STRING)
            return -1;
        freeReplyObject(r);
    }
    return 0;
}

int bench_floor(const struct bench_args *a)
{
    redisContext *c = redisConnect("127.0.0.1", a->port);
    char token[33], owner[256], host[128] = "";
    const char *acquire[] = {"EVALSHA", dlock__script_sha(DLOCK__SCRIPT_ACQUIRE), "3", NAME,
                             FENCE_KEY, OWNER_KEY, token, "30000", "86400000", owner};
    const char *release[] = {"EVALSHA", dlock__script_sha(DLOCK__SCRIPT_RELEASE), "2", NAME,
                             OWNER_KEY, token, CHANNEL, "1"};
    double *lat = malloc(sizeof(double) * (size_t)a->max_cycles);
    double start, end, prev;
    long n = 0;

    if (!c || c->err || !lat || load_scripts(c) < 0) {
        fprintf(stderr, "dlock-bench floor: cannot reach 127.0.0.1:%d\n", a->port);
        free(lat);
        redisFree(c);
        return 1;
    }
    gethostname(host, sizeof(host) - 1);
    snprintf(token, sizeof(token), "%032lx", (long)getpid());
    snprintf(owner, sizeof(owner), "{\"host\":\"%s\",\"pid\":%ld,\"since\":%lld,\"token\":\"%s\"}",
             host, (long)getpid(), (long long)time(NULL) * 1000, token);
    start = prev = bench_now();
    end = start + a->seconds;
    while (n < a->max_cycles && prev < end) {
        double now;
        if (call(c, 10, acquire, 1) < 0 || call(c, 8, release, 1) < 0)
            break;
        now = bench_now();
        lat[n++] = now - prev;
        prev = now;
    }
    if (n == 0 || prev < end) {
        free(lat);
        redisFree(c);
        return 1; /* a failed call ended the run early */
    }
    bench_sort(lat, (size_t)n);
    bench_json_begin("floor");
    bench_json_int("cycles", n);
    bench_json_num("cycles_per_s", (double)n / (prev - start));
    bench_json_num("us_per_cycle_p50", 1e6 * bench_percentile(lat, (size_t)n, 50));
    bench_json_num("us_per_cycle_p99", 1e6 * bench_percentile(lat, (size_t)n, 99));
    bench_json_end();
    free(lat);
    redisFree(c);
    return 0;
}
