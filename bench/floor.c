/* The floors: one uncontended acquire+release cycle sent with plain blocking
 * hiredis round trips and no library logic.
 *   floor          dlock's own two scripts, keys and argument shapes (as
 *                  src/lock.c calls them): what dlock's protocol costs.
 *   floor-minimal  the textbook lock: SET NX PX, then EVALSHA of the classic
 *                  compare-and-delete: what any Redis lock costs.
 *   floor-null     two scripts that only answer, sent as `floor` sends
 *                  dlock's (the same keys and arguments): the ceiling of any
 *                  lock whose acquire is a script, as the fence rule needs.
 * The first needs the scripts' text and the auxiliary keys' names, so this
 * one file reads the library's private scripts.h and names.h. */
#include "bench.h"
#include "names.h"
#include "scripts.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TTL_MS "30000"
#define FENCE_TTL_MS "86400000" /* the client's default fence_ttl_ms */

/* What floor-null's scripts answer: a grant, and a release. */
static const char null_acquire[] = "return {1, '1'}";
static const char null_release[] = "return 1";

static const char classic_release[] =
    "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) "
    "else return 0 end";

struct floor_call {
    int argc;
    const char **argv;
};

/* Granted or released: OK, 1, or an array that starts with 1. */
static int succeeded(const redisReply *r)
{
    return r && ((r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) ||
                 (r->type == REDIS_REPLY_INTEGER && r->integer == 1) ||
                 (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                  r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == 1));
}

/* Loads `source` (so that EVALSHA finds it) and writes its SHA1 to sha. */
static int load_script(redisContext *c, const char *source, char sha[41])
{
    redisReply *r = redisCommand(c, "SCRIPT LOAD %s", source);
    int ok = r && r->type == REDIS_REPLY_STRING && r->len == 40;
    if (ok)
        memcpy(sha, r->str, 41);
    else
        fprintf(stderr, "dlock-bench floor: SCRIPT LOAD failed\n");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* An acquire+release cycle: two calls on one connection. */
struct floor_cycle {
    redisContext *c;
    const struct floor_call *calls;
};

static int run_cycle(void *ctx)
{
    const struct floor_cycle *f = ctx;
    for (int i = 0; i < 2; i++) {
        const struct floor_call *call = &f->calls[i];
        redisReply *r = redisCommandArgv(f->c, call->argc, call->argv, NULL);
        int ok = succeeded(r);
        freeReplyObject(r);
        if (!ok) {
            fprintf(stderr, "dlock-bench floor: unexpected reply to %s\n", call->argv[0]);
            return -1;
        }
    }
    return 0;
}

/* Warm-up, then the timed window with the server's cost over it; prints
 * the workload's JSON line. */
static int measure(redisContext *c, const struct bench_args *a, const struct floor_call calls[2])
{
    double *lat = malloc(sizeof(double) * (size_t)a->max_cycles);
    struct floor_cycle cycle = {c, calls};
    struct command_counts before, after;
    double start, elapsed;
    long n;
    if (!lat || bench_cycles(run_cycle, &cycle, bench_now() + 0.2, 1000, NULL) < 0 ||
        bench_command_counts(a->port, &before) < 0) {
        free(lat);
        return 1;
    }
    start = bench_now();
    n = bench_cycles(run_cycle, &cycle, start + a->seconds, a->max_cycles, lat);
    elapsed = bench_now() - start;
    if (n <= 0 || bench_command_counts(a->port, &after) < 0) {
        free(lat);
        return 1;
    }
    bench_sort(lat, (size_t)n);
    bench_json_begin(a->workload);
    bench_json_int("cycles", n);
    bench_json_num("cycles_per_s", (double)n / elapsed);
    bench_json_num("us_per_cycle_p50", 1e6 * bench_percentile(lat, (size_t)n, 50));
    bench_json_num("us_per_cycle_p99", 1e6 * bench_percentile(lat, (size_t)n, 99));
    bench_json_server_cost(&before, &after, n);
    bench_json_end();
    free(lat);
    return 0;
}

static redisContext *floor_connect(const struct bench_args *a)
{
    redisContext *c = redisConnect("127.0.0.1", a->port);
    if (!c || c->err) {
        fprintf(stderr, "dlock-bench floor: cannot reach 127.0.0.1:%d\n", a->port);
        redisFree(c);
        return NULL;
    }
    return c;
}

/* A token of dlock's length, the same every cycle as in one dlock lock. */
static void floor_token(char token[DLOCK_TOKEN_LEN + 1])
{
    snprintf(token, DLOCK_TOKEN_LEN + 1, "%0*lx", DLOCK_TOKEN_LEN, (long)getpid());
}

/* One server's plain acquire and release, in the shapes src/lock.c sends,
 * with the scripts `acquire_source` and `release_source`. */
static int floor_scripted(const struct bench_args *a, const char *acquire_source,
                          const char *release_source)
{
    redisContext *c = floor_connect(a);
    dlock__keys keys;
    char token[DLOCK_TOKEN_LEN + 1], owner[256], host[128] = "", why[256];
    char acquire_sha[41], release_sha[41];
    int rc = 1;
    if (!c)
        return 1;
    if (dlock__keys_make(&keys, "bench:floor", why, sizeof(why)) < 0) {
        fprintf(stderr, "dlock-bench floor: %s\n", why);
        redisFree(c);
        return 1;
    }
    floor_token(token);
    gethostname(host, sizeof(host) - 1);
    snprintf(owner, sizeof(owner), "{\"host\":\"%s\",\"pid\":%ld,\"since\":%lld,\"token\":\"%s\"}",
             host, (long)getpid(), (long long)time(NULL) * 1000, token);
    if (load_script(c, acquire_source, acquire_sha) == 0 &&
        load_script(c, release_source, release_sha) == 0) {
        const char *acquire[] = {"EVALSHA", acquire_sha, "3", keys.lock, keys.fence, keys.owner,
                                 token, TTL_MS, FENCE_TTL_MS, owner};
        const char *release[] = {"EVALSHA", release_sha, "3", keys.lock, keys.owner, keys.fence,
                                 token, keys.channel, "1", "queue"};
        const struct floor_call calls[2] = {{10, acquire}, {10, release}};
        rc = measure(c, a, calls);
    }
    dlock__keys_clear(&keys);
    redisFree(c);
    return rc;
}

int bench_floor(const struct bench_args *a)
{
    return floor_scripted(a, dlock__script_source(DLOCK__SCRIPT_ACQUIRE),
                          dlock__script_source(DLOCK__SCRIPT_RELEASE));
}

int bench_floor_null(const struct bench_args *a)
{
    return floor_scripted(a, null_acquire, null_release);
}

int bench_floor_minimal(const struct bench_args *a)
{
    redisContext *c = floor_connect(a);
    char token[DLOCK_TOKEN_LEN + 1], sha[41];
    int rc = 1;
    if (!c)
        return 1;
    floor_token(token);
    if (load_script(c, classic_release, sha) == 0) {
        const char *acquire[] = {"SET", "bench:floor-minimal", token, "NX", "PX", TTL_MS};
        const char *release[] = {"EVALSHA", sha, "1", "bench:floor-minimal", token};
        const struct floor_call calls[2] = {{6, acquire}, {5, release}};
        rc = measure(c, a, calls);
    }
    redisFree(c);
    return rc;
}
