/* dlock run's supervision contract, through the built binary, against a
 * real redis-server: the command's status and environment, mutual
 * exclusion between runs, renewal past the TTL, a lost lock stopping the
 * command (one that ignores SIGTERM, a whole pipeline), signals forwarded
 * or cancelling a wait, and a dlock killed taking its command down. */
#include "helpers.h"

#include <errno.h>
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

/* The group's server: group_server, from the helpers. */
#define server group_server

static int process_gone(pid_t pid, int within_ms)
{
    long long until = test_now_ms() + (long long)within_ms * test_slowdown();
    while (test_now_ms() < until) {
        if (kill(pid, 0) < 0 && errno == ESRCH)
            return 1;
        usleep(10000);
    }
    return 0;
}

static void test_cli_run_passes_status_and_environment(void **state)
{
    redisContext *redis = *state;
    cli_proc p;

    assert_int_equal(DLOCK(&p, 10000, "run", "cli:run", "--", "true"), 0);
    assert_int_equal(DLOCK(&p, 10000, "run", "cli:run", "--", "sh", "-c", "exit 7"), 7);
    assert_int_equal(DLOCK(&p, 10000, "run", "cli:run", "-c", "kill -TERM $$"), 128 + 15);
    assert_int_equal(DLOCK(&p, 10000, "run", "cli:run", "--", "sh", "-c",
                           "echo \"$DLOCK_NAME ${#DLOCK_TOKEN} $DLOCK_FENCE\""),
                     0);
    assert_int_equal(strncmp(p.out, "cli:run 32 ", 11), 0);
    assert_true(strtoll(p.out + 11, NULL, 10) > 0);
    assert_false(key_exists(redis, "cli:run")); /* released at exit */
}

static void test_cli_run_keeps_a_plain_server_list_for_the_child(void **state)
{
    const char *args[] = {"run", "cli:env", "--", "sh", "-c", "echo \"$DLOCK_REDIS\"", NULL};
    cli_proc p;
    (void)state;
    assert_int_equal(cli_run(&p, server.url, args, 10000), 0);
    assert_int_equal(strncmp(p.out, server.url, strlen(server.url)), 0);
}

static void test_cli_concurrent_runs_count_exactly(void **state)
{
    enum { RUNS = 6, ROUNDS = 5 };
    char path[160], script[1024];
    pid_t procs[RUNS];
    (void)state;
    scratch(path, sizeof(path), "cli-counter");
    write_number_file(path, 0);
    snprintf(script, sizeof(script),
             "for i in 1 2 3 4 5; do %s run -w 30 cli:counter -- sh -c "
             "'v=$(cat %s); sleep 0.01; echo $((v + 1)) > %s' || exit 1; done",
             DLOCK_CLI_PATH, path, path);
    /* Each worker is a shell loop of `dlock run`s. */
    for (int i = 0; i < RUNS; i++) {
        pid_t pid = fork_child();
        if (pid == 0) {
            setenv("DLOCK_REDIS", server.url, 1);
            execl("/bin/sh", "sh", "-c", script, (char *)NULL);
            _exit(127);
        }
        procs[i] = pid;
    }
    for (int i = 0; i < RUNS; i++) {
        int status = wait_child(procs[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    assert_int_equal(read_number_file(path), RUNS * ROUNDS);
}

static void test_cli_run_renews_past_the_ttl(void **state)
{
    redisContext *redis = *state;
    const char *args[] = {"run", "-t", "1", "cli:long", "--", "sleep", "3", NULL};
    cli_proc *proc = start_cli(server.url, args, NULL), st;
    char pid[32];

    usleep(2000 * 1000); /* two TTLs later */
    assert_int_equal(DLOCK(&st, 10000, "status", "--json", "cli:long"), 0);
    snprintf(pid, sizeof(pid), "\"pid\":%ld,", (long)proc->pid);
    assert_non_null(strstr(st.out, pid)); /* held by that dlock process */
    {
        char host[256] = "", want[300];
        gethostname(host, sizeof(host) - 1);
        snprintf(want, sizeof(want), "\"host\":\"%s\"", host);
        assert_non_null(strstr(st.out, want));
    }
    assert_int_equal(cli_wait(proc, 10000), 0);
    assert_false(key_exists(redis, "cli:long"));
}

static void test_cli_run_lost_lock_stops_the_command(void **state)
{
    redisContext *redis = *state;
    char marker[160], script[300];
    const char *args[] = {"run", "-t", "1", "cli:lost", "-c", script, NULL};
    cli_proc *proc;
    scratch(marker, sizeof(marker), "cli-term-marker");
    snprintf(script, sizeof(script), "trap 'echo term > %s; exit 0' TERM; sleep 30 & wait", marker);
    proc = start_cli(server.url, args, NULL);
    usleep(500 * 1000);
    freeReplyObject(run(redis, "DEL cli:lost"));
    assert_int_equal(cli_wait(proc, 10000), 70);
    assert_non_null(strstr(proc->err, "was lost"));
    {
        FILE *f = fopen(marker, "r");
        char buf[16] = "";
        assert_non_null(f);
        assert_non_null(fgets(buf, sizeof(buf), f));
        fclose(f);
        assert_string_equal(buf, "term\n");
    }
}

static void test_cli_run_kills_a_command_that_ignores_sigterm(void **state)
{
    redisContext *redis = *state;
    char pidfile[160], script[300];
    const char *args[] = {"run", "-t", "1", "--kill-after", "500ms", "cli:stubborn", "-c",
                          script, NULL};
    cli_proc *proc;
    long child;
    scratch(pidfile, sizeof(pidfile), "cli-stubborn");
    snprintf(script, sizeof(script), "trap '' TERM; echo $$ > %s; while :; do sleep 0.05; done",
             pidfile);
    proc = start_cli(server.url, args, NULL);
    child = wait_for_number(pidfile);
    assert_true(child > 0);
    freeReplyObject(run(redis, "DEL cli:stubborn"));
    assert_int_equal(cli_wait(proc, 10000), 70);
    assert_true(process_gone((pid_t)child, 10000));
}

static void test_cli_lost_lock_stops_a_whole_pipeline(void **state)
{
    redisContext *redis = *state;
    char pidfile[160], script[300];
    const char *args[] = {"run", "-t", "1", "cli:pipeline", "-c", script, NULL};
    cli_proc *proc;
    long group;
    scratch(pidfile, sizeof(pidfile), "cli-pipeline");
    snprintf(script, sizeof(script), "echo $$ > %s; sleep 100 | cat", pidfile);
    proc = start_cli(server.url, args, NULL);
    group = wait_for_number(pidfile);
    assert_true(group > 0);
    freeReplyObject(run(redis, "DEL cli:pipeline"));
    assert_int_equal(cli_wait(proc, 15000), 70);
    assert_true(process_gone((pid_t)-group, 10000)); /* no member of the group is left */
}

static void test_cli_sigterm_reaches_the_command_and_releases(void **state)
{
    redisContext *redis = *state;
    char pidfile[160], script[300];
    const char *args[] = {"run", "cli:forward", "-c", script, NULL};
    cli_proc *proc;
    scratch(pidfile, sizeof(pidfile), "cli-forward");
    snprintf(script, sizeof(script), "trap 'exit 5' TERM; echo $$ > %s; sleep 30 & wait", pidfile);
    proc = start_cli(server.url, args, NULL);
    assert_true(wait_for_number(pidfile) > 0);
    kill(proc->pid, SIGTERM);
    assert_int_equal(cli_wait(proc, 10000), 5); /* the command's own status */
    assert_false(key_exists(redis, "cli:forward"));
}

/* A signal while dlock waits for the lock cancels the wait: 128 + signal,
 * at once, and nothing was run. */
static void test_cli_signal_while_waiting(void **state)
{
    char marker[160], script[240];
    const char *args[] = {"run", "cli:interrupt", "-c", script, NULL};
    cli_proc holder, *waiter;
    (void)state;
    scratch(marker, sizeof(marker), "cli-never-ran");
    snprintf(script, sizeof(script), "touch %s", marker);
    assert_int_equal(DLOCK(&holder, 10000, "acquire", "-t", "30", "cli:interrupt"), 0);
    waiter = start_cli(server.url, args, NULL);
    usleep(300 * 1000);
    kill(waiter->pid, SIGINT);
    assert_int_equal(cli_wait(waiter, 10000), 128 + SIGINT);
    assert_true(waiter->took_ms < 300 + 3000LL * test_slowdown());
    assert_int_equal(access(marker, F_OK), -1);
}

static void test_cli_sigkill_of_dlock_takes_the_command_down(void **state)
{
    char pidfile[160], script[300];
    const char *args[] = {"run", "cli:orphan", "-c", script, NULL};
    cli_proc *proc;
    long child;
    (void)state;
    scratch(pidfile, sizeof(pidfile), "cli-orphan");
    snprintf(script, sizeof(script), "echo $$ > %s; exec sleep 30", pidfile);
    proc = start_cli(server.url, args, NULL);
    child = wait_for_number(pidfile);
    assert_true(child > 0);
    kill(proc->pid, SIGKILL);
    assert_int_equal(cli_wait(proc, 10000), 128 + 9);
    assert_true(process_gone((pid_t)child, 10000));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_group_redis, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_cli_run_passes_status_and_environment),
        T(test_cli_run_keeps_a_plain_server_list_for_the_child),
        T(test_cli_concurrent_runs_count_exactly),
        T(test_cli_run_renews_past_the_ttl),
        T(test_cli_run_lost_lock_stops_the_command),
        T(test_cli_run_kills_a_command_that_ignores_sigterm),
        T(test_cli_lost_lock_stops_a_whole_pipeline),
        T(test_cli_sigterm_reaches_the_command_and_releases),
        T(test_cli_signal_while_waiting),
        T(test_cli_sigkill_of_dlock_takes_the_command_down),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
