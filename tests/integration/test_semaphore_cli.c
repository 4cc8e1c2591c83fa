/* Semaphores through the dlock command against a real redis-server: N
 * concurrent runs at most, dead holders' permits, refusals, the wrong kind,
 * per-slot fences, loss, several servers, bad input and status. */
#include "helpers.h"

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define server group_server

/* 12 runs, 3 permits, holds of a second: each logs its start and end to
 * one append-only file. A start is appended while the permit is held, an
 * end before it is released: counting them in file order never gives more
 * than the holders of that moment. (No times in it: a time read before its
 * append is appended after a later one when its run is preempted between.) */
static void test_semcli_twelve_runs_three_at_a_time(void **state)
{
    enum { RUNS = 12, PERMITS = 3 };
    char log[160], script[512];
    const char *args[] = {"run", "--permits", "3", "-t", "30", "-w", "120", "sem:twelve",
                          "--", "sh", "-c", script, NULL};
    cli_proc *procs[RUNS];
    int now = 0, most = 0, slots = 0, lines = 0;
    FILE *f;
    (void)state;

    scratch(log, sizeof(log), "sem-overlap");
    snprintf(script, sizeof(script),
             "echo \"start $DLOCK_SLOT\" >>%s; sleep 1; echo \"end $DLOCK_SLOT\" >>%s",
             log, log);
    for (int i = 0; i < RUNS; i++)
        procs[i] = start_cli(server.url, args, NULL);
    for (int i = 0; i < RUNS; i++)
        assert_int_equal(cli_wait(procs[i], 120000 * test_slowdown()), 0);

    f = fopen(log, "r");
    assert_non_null(f);
    for (char line[64]; fgets(line, sizeof(line), f);) {
        /* "start SLOT" or "end SLOT" */
        char *at = strchr(line, ' ');
        long long slot;
        assert_non_null(at);
        slot = number_of(at + 1);
        assert_true(slot >= 0 && slot < PERMITS);
        lines++;
        if (strncmp(line, "start ", 6) == 0) {
            now++;
            slots |= 1 << slot;
        } else {
            now--;
        }
        most = now > most ? now : most;
    }
    fclose(f);
    assert_int_equal(lines, 2 * RUNS);
    assert_int_equal(most, PERMITS);
    assert_int_equal(slots, (1 << PERMITS) - 1);
}

/* The server's clock in ms. */
static long long server_ms(redisContext *redis)
{
    redisReply *r = kept_reply(run(redis, "TIME"));
    long long ms = number_of(r->element[0]->str) * 1000 + number_of(r->element[1]->str) / 1000;
    cleanup_now(r); /* read in a loop */
    return ms;
}

/* Three holders SIGKILLed with their dlock parents: a fourth waiter gets a
 * permit no earlier than the first dead one expires (read once the parents
 * were stopped, so no renewal moved it since) and soon after the last.
 * TTL 5 s: the command's first try, a fresh connection and all, has TTL/20
 * per node and does not retry a timeout; 100 ms (for 2 s) was missed on a
 * busy machine. */
static void test_semcli_dead_holders_free_their_permits(void **state)
{
    redisContext *redis = *state;
    cli_proc *holders[3], fourth;
    char pidfile[3][160], script[512];
    long long first_ms, last_ms, now_server, now_local;
    redisReply *r;

    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof(name), "sem-dead-%d", i);
        scratch(pidfile[i], sizeof(pidfile[i]), name);
        snprintf(script, sizeof(script), "echo $$ > %s; exec sleep 60", pidfile[i]);
        const char *args[] = {"run", "--permits", "3", "-t", "5", "sem:dead", "-c", script, NULL};
        holders[i] = start_cli(server.url, args, NULL);
    }
    wait_for_zcard(redis, "sem:dead", 3);
    for (int i = 0; i < 3; i++) {
        assert_true(wait_for_number(pidfile[i]) > 0);
        kill(holders[i]->pid, SIGSTOP);
    }
    usleep(100 * 1000); /* a renewal that was on the wire has landed */
    r = kept_reply(run(redis, "ZRANGE sem:dead 0 -1 WITHSCORES"));
    assert_int_equal(r->elements, 6);
    first_ms = number_of(r->element[1]->str);
    last_ms = number_of(r->element[5]->str);
    now_server = server_ms(redis);
    now_local = test_now_ms();
    for (int i = 0; i < 3; i++) {
        kill(-(pid_t)read_number_file(pidfile[i]), SIGKILL);
        kill(holders[i]->pid, SIGKILL);
        cli_wait(holders[i], 10000);
    }

    const char *args[] = {"acquire", "--permits", "3", "-w", "20", "sem:dead", NULL};
    assert_int_equal(cli_run(&fourth, server.url, args, 30000), 0);
    long long got = now_server + (test_now_ms() - now_local);
    assert_true(got >= first_ms);
    assert_true(got <= last_ms + 500LL * test_slowdown());
    /* Once the last dead permit is past its TTL, nothing of the dead is left. */
    while (server_ms(redis) <= last_ms)
        usleep(10000);
    fourth.out[32] = '\0';
    {
        cli_proc rel;
        assert_int_equal(DLOCK(&rel, 10000, "release", "sem:dead", fourth.out), 0);
    }
    assert_false(key_exists(redis, "sem:dead"));
    assert_false(key_exists(redis, aux_key("sem:dead", "owners")));
    assert_false(key_exists(redis, aux_key("sem:dead", "slots")));
    assert_false(key_exists(redis, aux_key("sem:dead", "limit")));
}

/* Takes a permit with `dlock acquire` and returns its token (static). */
static const char *acquire_token(const char *name, const char *permits, const char *ttl)
{
    static char token[33];
    cli_proc p;
    assert_int_equal(DLOCK(&p, 10000, "acquire", "--permits", permits, "-t", ttl, name), 0);
    memcpy(token, p.out, 32);
    token[32] = '\0';
    return token;
}

/* Takes a permit that dies young, and leaves it: through the library, with
 * a per-node deadline of its own (the command's, TTL/20, would be 15 ms,
 * which a fresh process connecting on a busy machine misses). */
static void take_short_permit(const char *name, unsigned permits, int64_t ttl_ms)
{
    const char *url = server.url;
    dlock_acquire_options o = permits_options(permits);
    take(client_on_nodes(&url, 1, 1000, 0), name, ttl_ms, &o);
}

static void test_semcli_refusals_leave_the_set_alone(void **state)
{
    redisContext *redis = *state;
    char keep[33], mine[33], *before;
    cli_proc p;

    snprintf(keep, sizeof(keep), "%s", acquire_token("sem:refuse", "3", "30"));
    snprintf(mine, sizeof(mine), "%s", acquire_token("sem:refuse", "3", "30"));
    take_short_permit("sem:refuse", 3, 300);
    usleep(300 * 1000);
    assert_int_equal(DLOCK(&p, 10000, "release", "sem:refuse", mine), 0);
    assert_int_equal(zcard(redis, "sem:refuse"), 1); /* mine went, the expired one was reaped */

    before = digest_of(redis);
    assert_int_equal(DLOCK(&p, 10000, "release", "sem:refuse", mine), 1);
    assert_int_equal(DLOCK(&p, 10000, "release", "sem:refuse", "0123456789abcdef0123456789abcdef"),
                     1);
    assert_int_equal(DLOCK(&p, 10000, "extend", "sem:refuse", mine), 1);
    /* Another limit: refused with the limit in force (docs/semaphores.md). */
    assert_int_equal(DLOCK(&p, 10000, "acquire", "--permits", "2", "sem:refuse"), 69);
    assert_non_null(strstr(p.err, "DLOCKLIMIT sem:refuse is a semaphore of 3 permits (1 held), not 2"));
    /* A mutex on a semaphore's name. */
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-n", "sem:refuse"), 69);
    assert_non_null(strstr(p.err, "sem:refuse is a semaphore of 3 permits, not a mutex"));
    assert_int_equal(DLOCK(&p, 10000, "run", "-n", "sem:refuse", "--", "true"), 69);
    assert_string_equal(before, digest_of(redis));
    assert_int_equal(DLOCK(&p, 10000, "release", "sem:refuse", keep), 0);
}

static void test_semcli_semaphore_on_a_mutex_writes_nothing(void **state)
{
    redisContext *redis = *state;
    char token[33], *before;
    cli_proc p;

    assert_int_equal(DLOCK(&p, 10000, "acquire", "sem:mutex"), 0);
    memcpy(token, p.out, 32);
    token[32] = '\0';
    before = digest_of(redis);
    assert_int_equal(DLOCK(&p, 10000, "acquire", "--permits", "3", "sem:mutex"), 69);
    assert_non_null(strstr(p.err, "sem:mutex is a mutex or a fair lock, not a semaphore of 3 permits"));
    assert_string_equal(before, digest_of(redis));
    assert_int_equal(DLOCK(&p, 10000, "release", "sem:mutex", token), 0);
}

/* Checks that each line "SLOT FENCE" of `path` has a larger fence than the
 * last one of its slot; returns how many lines there were. */
static int check_fences(const char *path, uint64_t *last, int permits)
{
    FILE *f = fopen(path, "r");
    int n = 0;
    assert_non_null(f);
    for (char line[64]; fgets(line, sizeof(line), f);) {
        /* "DLOCK_SLOT DLOCK_FENCE" */
        char *space = strchr(line, ' ');
        long long slot = number_of(line);
        uint64_t fence;
        assert_non_null(space);
        fence = (uint64_t)number_of(space + 1);
        assert_true(slot >= 0 && slot < permits);
        if (fence <= last[slot])
            fail_msg("slot %lld: DLOCK_FENCE %" PRIu64 " after %" PRIu64, slot, fence, last[slot]);
        last[slot] = fence;
        n++;
    }
    fclose(f);
    unlink(path);
    return n;
}

/* Two loops of `dlock run`s side by side, `each` runs apiece, appending
 * "DLOCK_SLOT DLOCK_FENCE" to `path` while they hold their permit. */
static void run_loops(const test_redis *r, const char *path, int each)
{
    char script[512];
    pid_t loops[2];
    snprintf(script, sizeof(script),
             "i=0; while [ $i -lt %d ]; do %s run --permits 3 -w 30 sem:fences -c "
             "'echo $DLOCK_SLOT $DLOCK_FENCE >> %s' || exit 1; i=$((i + 1)); done",
             each, DLOCK_CLI_PATH, path);
    for (int i = 0; i < 2; i++) {
        loops[i] = fork_child();
        if (loops[i] == 0) {
            setenv("DLOCK_REDIS", r->url, 1);
            execl("/bin/sh", "sh", "-c", script, (char *)NULL);
            _exit(127);
        }
    }
    for (int i = 0; i < 2; i++) {
        int status = wait_child(loops[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

/* 200 runs give strictly increasing DLOCK_FENCE per slot, also after a
 * restart without persistence and a restart from an older snapshot. */
static void test_semcli_fences_per_slot_across_restarts(void **state)
{
    test_redis *r = start_servers(1);
    uint64_t last[3] = {0, 0, 0};
    char path[160];
    (void)state;

    scratch_path(path, sizeof(path), r->dir, "sem-fences");
    run_loops(r, path, 100);
    assert_int_equal(check_fences(path, last, 3), 200);
    assert_true(last[0] && last[1]); /* side by side, they took two slots */
    assert_int_equal(test_redis_restart(r), 0);
    run_loops(r, path, 3);
    freeReplyObject(run(connect_to(r), "SAVE"));
    run_loops(r, path, 3);
    assert_int_equal(check_fences(path, last, 3), 12);
    assert_int_equal(test_redis_restart(r), 0); /* SIGKILL: back to the snapshot */
    run_loops(r, path, 3);
    assert_int_equal(check_fences(path, last, 3), 6);
}

/* A permit removed by hand: the command gets SIGTERM within TTL/3 and a
 * margin, and dlock exits 70. TTL 6 s: the command's first try has TTL/20
 * per node (see above). */
static void test_semcli_removed_permit_stops_the_command(void **state)
{
    redisContext *redis = *state;
    char marker[160], tokenfile[160], script[1024], token[40] = "";
    long long removed, termed;
    cli_proc *proc;
    FILE *f;

    scratch(marker, sizeof(marker), "sem-term");
    scratch(tokenfile, sizeof(tokenfile), "sem-token");
    snprintf(script, sizeof(script),
             "trap 'echo term > %s; exit 0' TERM; echo $DLOCK_TOKEN > %s.tmp; mv %s.tmp %s; "
             "sleep 30 & wait",
             marker, tokenfile, tokenfile, tokenfile);
    const char *args[] = {"run", "--permits", "2", "-t", "6", "sem:lost", "-c", script, NULL};
    proc = start_cli(server.url, args, NULL);
    long long until = test_now_ms() + 10000LL * test_slowdown();
    while (!(f = fopen(tokenfile, "r")) && test_now_ms() < until)
        usleep(10000);
    assert_non_null(f);
    assert_non_null(fgets(token, sizeof(token), f));
    fclose(f);
    token[strcspn(token, "\n")] = '\0';
    freeReplyObject(run(redis, "ZREM sem:lost %s", token));
    removed = test_now_ms();
    until = removed + (2000 + 1000LL) * test_slowdown();
    while (access(marker, F_OK) != 0 && test_now_ms() < until)
        usleep(5000);
    termed = test_now_ms();
    assert_int_equal(access(marker, F_OK), 0);
    assert_true(termed - removed <= 2000 + 1000LL * test_slowdown());
    assert_int_equal(cli_wait(proc, 10000), 70);
    assert_non_null(strstr(proc->err, "was lost"));
}

static void test_semcli_several_servers_refused(void **state)
{
    test_redis *r = start_servers(3);
    const char *args[] = {"acquire", "--permits", "2", "sem:three", NULL};
    cli_proc p;
    (void)state;
    assert_int_equal(cli_run(&p, url_list(r, 3), args, 10000), 64);
    assert_non_null(strstr(p.err, "a majority cannot bound its holders"));
    for (int i = 0; i < 3; i++)
        assert_empty(&r[i]);
}

static void test_semcli_bad_permits(void **state)
{
    static const char *const bad[] = {"0", "-2", "1025", "abc", "3x", ""};
    cli_proc p;
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(DLOCK(&p, 10000, "acquire", "--permits", bad[i], "sem:bad"), 64);
        assert_true(strstr(p.err, "--permits must be from 1 to 1024") ||
                    strstr(p.err, "bad value"));
        assert_int_equal(DLOCK(&p, 10000, "run", "--permits", bad[i], "sem:bad", "--", "true"),
                         64);
    }
    assert_int_equal(DLOCK(&p, 10000, "release", "--permits", "2", "sem:bad", "x"), 64);
}

static void test_semcli_status_text_and_json(void **state)
{
    char tokens[3][33];
    cli_proc p;
    (void)state;
    for (int i = 0; i < 3; i++)
        snprintf(tokens[i], sizeof(tokens[i]), "%s", acquire_token("sem:status", "3", "30"));
    assert_int_equal(DLOCK(&p, 10000, "status", "sem:status"), 0);
    assert_non_null(strstr(p.out, "sem:status: 3/3 held"));
    for (int i = 0; i < 3; i++) {
        char slot[32];
        snprintf(slot, sizeof(slot), "  slot %d: held by ", i);
        assert_non_null(strstr(p.out, slot));
    }
    /* Full: -n and -E as for a mutex, and who holds it. */
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-n", "-E", "42", "--permits", "3", "sem:status"),
                     42);
    assert_non_null(strstr(p.err, "3 of its 3 permits held"));
    assert_int_equal(DLOCK(&p, 10000, "status", "--json", "sem:status"), 0);
    assert_non_null(strstr(p.out, "\"limit\":3,\"holders\":[{"));
    assert_non_null(strstr(p.out, "\"slot\":2,\"fence\":"));
    for (int i = 0; i < 3; i++)
        assert_int_equal(DLOCK(&p, 10000, "release", "sem:status", tokens[i]), 0);
    assert_int_equal(DLOCK(&p, 10000, "status", "sem:status"), 1);
    assert_non_null(strstr(p.out, "sem:status: free"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_group_redis, cleanup_teardown)
#define U(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        U(test_semcli_twelve_runs_three_at_a_time),
        T(test_semcli_dead_holders_free_their_permits),
        T(test_semcli_refusals_leave_the_set_alone),
        T(test_semcli_semaphore_on_a_mutex_writes_nothing),
        U(test_semcli_fences_per_slot_across_restarts),
        T(test_semcli_removed_permit_stops_the_command),
        U(test_semcli_several_servers_refused),
        U(test_semcli_bad_permits),
        U(test_semcli_status_text_and_json),
    };
#undef T
#undef U
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
