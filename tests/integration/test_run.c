/* dlock run, through the built binary, against a real redis-server: what it
 * does to the command when things go wrong around it (a loss with a stuck
 * stderr, dlock killed, Ctrl-Z at a terminal, a silent network). No TTL is
 * under 3 s: the command's first try has TTL/20 per node, its new
 * connection included, and gives up on a timeout; the 50 ms of a 1 s TTL
 * are missed on a busy machine. */
#include "helpers.h"
#include "pty_shell.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define server group_server

/* The interactive shell of the terminal tests; stopped here even when a
 * test failed half-way. */
static pty_shell shell;

static int teardown(void **state)
{
    if (shell.pid > 0)
        pty_shell_stop(&shell);
    shell.pid = 0;
    return cleanup_teardown(state);
}

/* Waits until `path` exists, at most `within_ms` (scaled); when it was
 * seen (test_now_ms), or -1. */
static long long wait_for_file(const char *path, int within_ms)
{
    long long until = test_now_ms() + (long long)within_ms * test_slowdown();
    while (access(path, F_OK) < 0) {
        if (test_now_ms() >= until)
            return -1;
        usleep(5000);
    }
    return test_now_ms();
}

/* 1 once no process of group `pgid` is left, within `within_ms` (scaled).
 * This process is the subreaper of orphans (see main): it reaps them, or
 * their zombies would still count as members (and so any child: call it
 * when dlock itself was collected). */
static int group_gone(pid_t pgid, int within_ms)
{
    long long until = test_now_ms() + (long long)within_ms * test_slowdown();
    while (test_now_ms() < until) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        if (kill(-pgid, 0) < 0 && errno == ESRCH)
            return 1;
        usleep(10000);
    }
    return 0;
}

/* Starts dlock with `args`, stdout on /dev/null and stderr on `err_fd`;
 * wait for it with wait_child_within(). */
static pid_t start_dlock(const char *url, const char *const *args, int err_fd)
{
    const char *argv[32] = {DLOCK_CLI_PATH};
    int n = 1;
    pid_t pid;
    while (args[n - 1] && n < 31) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    pid = fork_child();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(err_fd, STDERR_FILENO);
        setenv("DLOCK_REDIS", url, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* A command that records its process group and, on SIGTERM, a marker. */
static void trapping_command(char *script, size_t len, const char *pidfile, const char *marker)
{
    snprintf(script, len, "trap 'echo term > %s; exit 0' TERM; echo $$ > %s; sleep 30 & wait",
             marker, pidfile);
}

/* With its stderr a full pipe nobody reads, the command starts (-v's
 * "acquired" and "started" do not block dlock) and a loss still stops it at
 * once: dlock signals before it writes, and its message does not block it. */
static void test_run_loss_with_a_stuck_stderr_still_stops_the_command(void **state)
{
    redisContext *redis = *state;
    char pidfile[160], marker[160], script[400], junk[4096];
    int err[2], code;
    long long termed;
    pid_t dlock;
    memset(junk, 'x', sizeof(junk));
    scratch(pidfile, sizeof(pidfile), "run-stuck-pid");
    scratch(marker, sizeof(marker), "run-stuck-term");
    trapping_command(script, sizeof(script), pidfile, marker);
    assert_int_equal(pipe2(err, O_NONBLOCK), 0);
    kept_fd(err[0]);
    while (write(err[1], junk, sizeof(junk)) > 0)
        ;
    assert_int_equal(errno, EAGAIN);
    fcntl(err[1], F_SETFL, 0); /* dlock gets a plain, blocking, full pipe */
    {
        const char *args[] = {"-v", "run", "-t", "3", "run:stuck", "-c", script, NULL};
        dlock = start_dlock(server.url, args, err[1]);
    }
    close(err[1]);
    assert_true(wait_for_number(pidfile) > 0);
    freeReplyObject(run(redis, "DEL run:stuck"));
    /* The renewal at TTL/3 finds the key gone. */
    termed = wait_for_file(marker, 5000);
    code = wait_child_within(dlock, 5000);
    assert_true(termed > 0);
    assert_int_equal(code, 70);
}

/* A lost lock's command goes whole: its leader exits on SIGTERM, but a
 * member that ignores SIGTERM gets SIGKILL after --kill-after, and dlock
 * exits 70 only once nothing of the group is left. */
static void test_run_loss_kills_what_the_command_left_behind(void **state)
{
    redisContext *redis = *state;
    char pidfile[160], script[400];
    long group;
    pid_t dlock;
    scratch(pidfile, sizeof(pidfile), "run-leftover-pid");
    snprintf(script, sizeof(script),
             "trap 'exit 0' TERM; (trap '' TERM; exec sleep 30) & echo $$ > %s; wait", pidfile);
    {
        const char *args[] = {"run", "-t", "3", "--kill-after", "300ms", "run:leftover",
                              "-c", script, NULL};
        dlock = start_dlock(server.url, args, STDERR_FILENO);
    }
    group = wait_for_number(pidfile);
    assert_true(group > 0);
    freeReplyObject(run(redis, "DEL run:leftover"));
    assert_int_equal(wait_child_within(dlock, 5000), 70);
    /* Only its zombie may be left, for us (the subreaper) to reap; a member
     * left alive would stay 30 s. */
    assert_true(group_gone((pid_t)group, 2000));
}

/* kill -9 of dlock stops every process of the command's group, not only
 * its direct child; and once the TTL is over, the next run finds none of
 * them. */
static void test_run_killed_dlock_takes_the_whole_pipeline_down(void **state)
{
    char pidfile[160], script[300];
    long group;
    int gone, null = open("/dev/null", O_WRONLY);
    cli_proc next;
    pid_t dlock;
    (void)state;
    scratch(pidfile, sizeof(pidfile), "run-orphans");
    snprintf(script, sizeof(script), "echo $$ > %s; sleep 60 | cat", pidfile);
    {
        const char *args[] = {"run", "-t", "3", "run:orphans", "-c", script, NULL};
        dlock = start_dlock(server.url, args, null);
    }
    close(null);
    group = wait_for_number(pidfile);
    assert_true(group > 0);
    kill(dlock, SIGKILL);
    assert_int_equal(wait_child_within(dlock, 5000), 128 + SIGKILL);
    gone = group_gone((pid_t)group, 3000);
    if (!gone)
        kill((pid_t)-group, SIGKILL);
    assert_true(gone);
    usleep(3200 * 1000); /* the TTL runs out */
    {
        const char *args[] = {"run", "-n", "run:orphans", "--", "true", NULL};
        assert_int_equal(cli_run(&next, server.url, args, 10000), 0);
    }
    assert_true(group_gone((pid_t)group, 100));
}

/* Starts `dlock run` as the foreground job of an interactive shell on a
 * terminal, and suspends it with Ctrl-Z once the command runs. The
 * command must not be starting a foreground program then: sh starts one
 * with vfork(), and a child stopped before its exec holds its parent in
 * vfork(), unstoppable, so no job stops (as without dlock). */
static void run_and_suspend(pty_shell *sh, const char *run_line, const char *pidfile, long *group)
{
    assert_int_equal(pty_shell_start(sh, server.url), 0);
    assert_true(sh->pid > 0);
    assert_true(pty_shell_expect(sh, "pty$ ", 10000));
    pty_shell_type(sh, run_line);
    *group = wait_for_number(pidfile);
    assert_true(*group > 0);
    pty_shell_type(sh, "\x1a");
    assert_true(pty_shell_expect(sh, "Stopped", 15000));
    /* The prompt is back: the shell runs what we type. */
    pty_shell_type(sh, "echo \"back=$((40 + 2))\"\n");
    assert_true(pty_shell_expect(sh, "back=42", 5000));
}

/* Ctrl-Z at the terminal suspends the job (dlock and its command) and the
 * shell's prompt comes back; fg resumes both, with the terminal, and the
 * command completes. */
static void test_run_ctrl_z_suspends_the_job_and_fg_resumes_it(void **state)
{
    char pidfile[160], line[600];
    pty_shell *sh = &shell;
    long group;
    (void)state;
    scratch(pidfile, sizeof(pidfile), "run-ctrlz");
    snprintf(line, sizeof(line),
             "%s run -t 10 run:ctrlz -c 'echo $$ > %s; read answer; echo \"got=$answer\"'\n",
             DLOCK_CLI_PATH, pidfile);
    run_and_suspend(sh, line, pidfile, &group);
    pty_shell_type(sh, "fg\n");
    /* The command has the terminal again: it reads a line typed there. */
    pty_shell_type(sh, "yes\n");
    assert_true(pty_shell_expect(sh, "got=yes", 10000));
    pty_shell_type(sh, "echo \"status=$?\"\n");
    assert_true(pty_shell_expect(sh, "status=0", 5000));
}

/* While the job is suspended, nothing renews the lock. If it expired
 * meanwhile, fg stops the command instead of resuming it: exit 70. */
static void test_run_lock_expired_while_suspended_stops_the_command(void **state)
{
    char pidfile[160], line[600];
    pty_shell *sh = &shell;
    long group;
    (void)state;
    scratch(pidfile, sizeof(pidfile), "run-expired");
    snprintf(line, sizeof(line),
             "%s run -t 3 --kill-after 1s run:expired -c 'trap \"echo term-$((6 * 7)); exit 0\" TERM; "
             "echo $$ > %s; sleep 30 & wait'\n",
             DLOCK_CLI_PATH, pidfile);
    run_and_suspend(sh, line, pidfile, &group);
    usleep(3500 * 1000); /* past the TTL */
    pty_shell_type(sh, "fg\n");
    assert_true(pty_shell_expect(sh, "term-42", 5000));
    pty_shell_type(sh, "echo \"status=$?\"\n");
    assert_true(pty_shell_expect(sh, "status=70", 10000));
    assert_true(group_gone((pid_t)group, 5000));
    /* Said as it happened, not as a server that did not answer. */
    assert_non_null(strstr(sh->out, "dlock: lock run:expired expired while the job was stopped"));
}

/* Field `k` (0: the state letter, 1: the parent's pid) of /proc/PID/stat
 * after the command name, or -1. */
static long proc_stat_field(pid_t pid, int k)
{
    char path[64], buf[512], *at;
    FILE *f;
    size_t got;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    got = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[got] = '\0';
    at = strrchr(buf, ')');
    if (!at || at[1] != ' ' || !at[2])
        return -1;
    return k == 0 ? at[2] : strtol(at + 4, NULL, 10);
}

/* A terminal's stop that reaches dlock itself (its group had the terminal
 * for a moment: the shell handing it over, `fg` before dlock passes it on)
 * stops the command with it, not dlock alone: a command must not run on
 * while nothing renews its lock. fg then resumes both. (The command waits
 * for a subshell, which sh forks without vfork(): see run_and_suspend().) */
static void test_run_terminal_stop_sent_to_dlock_stops_the_command(void **state)
{
    char pidfile[160], line[600];
    pty_shell *sh = &shell;
    long group, dlock;
    long long until;
    (void)state;
    scratch(pidfile, sizeof(pidfile), "run-tstp");
    snprintf(line, sizeof(line), "%s run -t 10 run:tstp -c 'echo $$ > %s; (sleep 30)'\n",
             DLOCK_CLI_PATH, pidfile);
    assert_int_equal(pty_shell_start(sh, server.url), 0);
    assert_true(pty_shell_expect(sh, "pty$ ", 10000));
    pty_shell_type(sh, line);
    group = wait_for_number(pidfile);
    assert_true(group > 0);
    dlock = proc_stat_field((pid_t)group, 1);
    assert_true(dlock > 1);
    assert_int_equal(kill((pid_t)dlock, SIGTSTP), 0);
    assert_true(pty_shell_expect(sh, "Stopped", 15000));
    until = test_now_ms() + 5000LL * test_slowdown();
    while (proc_stat_field((pid_t)group, 0) != 'T' && test_now_ms() < until)
        usleep(10000);
    assert_int_equal(proc_stat_field((pid_t)group, 0), 'T');
    pty_shell_type(sh, "fg\n");
    until = test_now_ms() + 5000LL * test_slowdown();
    while (proc_stat_field((pid_t)group, 0) == 'T' && test_now_ms() < until)
        usleep(10000);
    assert_true(proc_stat_field((pid_t)group, 0) != 'T');
    pty_shell_type(sh, "\x03"); /* Ctrl-C: the command ends, and dlock with it */
    pty_shell_type(sh, "echo \"status=$?\"\n");
    assert_true(pty_shell_expect(sh, "status=130", 10000));
    assert_true(group_gone((pid_t)group, 5000));
}

/* With `stty tostop`, a background writer to the terminal is stopped by
 * SIGTTOU, and while the command owns the terminal dlock is one: its
 * messages (-v's "started" and "sent SIGKILL" too) must neither stop it
 * nor come before the command's signals. The loss stops the command (one
 * that outlives SIGTERM: SIGKILL at --kill-after) and dlock exits 70. */
static void test_run_loss_on_a_tostop_terminal_still_stops_the_command(void **state)
{
    redisContext *redis = *state;
    char pidfile[160], line[600];
    pty_shell *sh = &shell;
    scratch(pidfile, sizeof(pidfile), "run-tostop");
    snprintf(line, sizeof(line),
             "stty tostop; %s -v run -t 3 --kill-after 300ms run:tostop -c 'trap \"echo "
             "term-$((6 * 7))\" TERM; echo $$ > %s; while :; do sleep 0.1; done'\n",
             DLOCK_CLI_PATH, pidfile);
    assert_int_equal(pty_shell_start(sh, server.url), 0);
    assert_true(pty_shell_expect(sh, "pty$ ", 10000));
    pty_shell_type(sh, line);
    assert_true(wait_for_number(pidfile) > 0);
    freeReplyObject(run(redis, "DEL run:tostop"));
    assert_true(pty_shell_expect(sh, "term-42", 5000));
    pty_shell_type(sh, "echo \"status=$?\"\n");
    assert_true(pty_shell_expect(sh, "status=70", 10000));
}

/* Behind a network that goes silent, the command gets SIGTERM by the end of
 * the lock's validity (acquired before the command started, TTL 6 s: 300 ms
 * per node for the first try, through the proxy), not one or two command
 * timeouts (1 s each) later. */
static void test_run_silent_network_stops_the_command_by_the_end_of_validity(void **state)
{
    char pidfile[160], marker[160], script[400], url[96];
    fault_proxy *proxy = start_proxy(server.port, url, sizeof(url));
    const char *args[] = {"run", "-t", "6", "run:silent", "-c", script, NULL};
    long long started, termed;
    cli_proc *proc;
    int code;
    (void)state;
    scratch(pidfile, sizeof(pidfile), "run-silent-pid");
    scratch(marker, sizeof(marker), "run-silent-term");
    trapping_command(script, sizeof(script), pidfile, marker);
    proc = start_cli(url, args, NULL);
    started = wait_for_file(pidfile, 10000);
    assert_true(started > 0);
    fault_proxy_set(proxy, FAULT_BLACKHOLE, 0);
    termed = wait_for_file(marker, 10000);
    code = cli_wait(proc, 10000);
    assert_true(termed > 0);
    print_message("SIGTERM %lld ms after the command started\n", termed - started);
    assert_true(termed - started <= 6000 + 800LL * test_slowdown());
    assert_int_equal(code, 70);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_group_redis, teardown)
    const struct CMUnitTest tests[] = {
        T(test_run_loss_with_a_stuck_stderr_still_stops_the_command),
        T(test_run_loss_kills_what_the_command_left_behind),
        T(test_run_killed_dlock_takes_the_whole_pipeline_down),
        T(test_run_ctrl_z_suspends_the_job_and_fg_resumes_it),
        T(test_run_lock_expired_while_suspended_stops_the_command),
        T(test_run_terminal_stop_sent_to_dlock_stops_the_command),
        T(test_run_silent_network_stops_the_command_by_the_end_of_validity),
        T(test_run_loss_on_a_tostop_terminal_still_stops_the_command),
    };
#undef T
    /* Orphaned members of a command's group come to us, to be reaped. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}
