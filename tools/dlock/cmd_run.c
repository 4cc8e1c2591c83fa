/* run: hold the lock while a command runs.
 *
 * The command runs in its own process group with DLOCK_NAME, DLOCK_TOKEN,
 * DLOCK_FENCE and DLOCK_SLOT set, and has SIGINT, SIGTERM and SIGHUP forwarded to its group.
 * The client's renewal thread keeps the lock alive; if it is lost anyway, the
 * group gets SIGTERM, then SIGKILL after --kill-after (to what is left of it
 * even when its leader has exited), and dlock exits 70. If
 * dlock dies, a guard process stops the group the same way. A terminal's
 * stop (Ctrl-Z) stops dlock too, like any job. Signal handlers and the loss
 * callback only write a byte to a pipe; the main loop does the rest. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOST_MARK 0 /* the byte on the wake pipe that means "lock lost" */
#define GUARD_DONE 1 /* the byte to the guard that means "dlock is done" */
#define MESSAGE_WAIT_US 100000 /* how long one write of a message may block */
#define GROUP_POLL_MS 50 /* how often a stopping group is looked at */

extern char **environ;

static bool own_terminal; /* we are the foreground job of a terminal */
static int wake_pipe[2] = {-1, -1};
static dlock_client *acquiring_client; /* set while waiting: a signal cancels */
static atomic_int lost_reason;

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    (void)!write(wake_pipe[1], &b, 1);
    if (acquiring_client && sig != SIGCHLD)
        dlock_client_cancel(acquiring_client);
    errno = saved;
}

static void on_lost(dlock_lock *lock, int reason, void *arg)
{
    unsigned char b = LOST_MARK;
    (void)lock;
    (void)arg;
    atomic_store(&lost_reason, reason);
    (void)!write(wake_pipe[1], &b, 1);
}

/* While the command runs, a terminal's stop (Ctrl-Z) is the command's: if
 * the terminal's foreground group is dlock's at that moment (the shell
 * handing it over, `fg` before dlock passes it on), dlock would stop alone
 * and the command run on without renewals. Caught, it is forwarded to the
 * command's group, and dlock stops once the command did (command_stopped). */
static void catch_terminal_stop(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTSTP, &sa, NULL);
}

/* Stops dlock as a job stops, until it is continued (fg, bg). */
static void stop_self(void)
{
    struct sigaction dfl, caught;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGTSTP, &dfl, &caught);
    kill(getpid(), SIGTSTP); /* returns once continued */
    sigaction(SIGTSTP, &caught, NULL);
}

/* SIGALRM only interrupts a message's write that blocks (no SA_RESTART). */
static void on_alarm(int sig)
{
    (void)sig;
}

static const int handled[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};

static int setup_signals(void)
{
    struct sigaction sa;
    if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
        if (sigaction(handled[i], &sa, NULL) < 0)
            return -1;
    sa.sa_handler = on_alarm;
    sa.sa_flags = 0;
    return sigaction(SIGALRM, &sa, NULL);
}

/* While the command runs, a message must not hold dlock up: its stderr may
 * be a full pipe nobody reads, or a terminal with tostop that stops a
 * background writer with SIGTTOU. Around messages SIGTTOU is blocked (the
 * write then goes through) and an interval timer interrupts any write that
 * blocks for more than MESSAGE_WAIT_US: a message is cut short rather than
 * the command left running or its SIGKILL late. */
static void message_guard(bool on)
{
    struct itimerval t = {{0, 0}, {0, 0}};
    sigset_t ttou;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    if (on)
        t.it_value = t.it_interval = (struct timeval){0, MESSAGE_WAIT_US};
    setitimer(ITIMER_REAL, &t, NULL);
    sigprocmask(on ? SIG_BLOCK : SIG_UNBLOCK, &ttou, NULL);
}

/* SIGTERM to the command's group; SIGCONT too, for a stopped member that
 * traps SIGTERM (a stopped process runs no handler). Async-signal-safe. */
static void stop_group(pid_t pgid)
{
    kill(-pgid, SIGTERM);
    kill(-pgid, SIGCONT);
}

static bool keep_variable(const char *entry)
{
    static const char *const ours[] = {"DLOCK_NAME=", "DLOCK_TOKEN=", "DLOCK_FENCE=",
                                       "DLOCK_PASSWORD=", "DLOCK_SLOT="};
    for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
        if (strncmp(entry, ours[i], strlen(ours[i])) == 0)
            return false;
    /* A server list with credentials in it stays with us. */
    return !(strncmp(entry, "DLOCK_REDIS=", 12) == 0 && strchr(entry, '@'));
}

/* The child's environment, built before fork: after fork only
 * async-signal-safe calls are allowed, and the renewal thread exists. */
static char **child_environment(dlock_lock *lock, char *vars[4])
{
    size_t n = 0, k = 0;
    char **env;
    while (environ[n])
        n++;
    env = calloc(n + 5, sizeof(*env));
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (keep_variable(environ[i]))
            env[k++] = environ[i];
    if (asprintf(&vars[0], "DLOCK_NAME=%s", dlock_lock_name(lock)) < 0 ||
        asprintf(&vars[1], "DLOCK_TOKEN=%s", dlock_lock_token(lock)) < 0 ||
        asprintf(&vars[2], "DLOCK_FENCE=%" PRIu64, dlock_lock_fence(lock)) < 0 ||
        asprintf(&vars[3], "DLOCK_SLOT=%u", dlock_lock_slot(lock)) < 0) {
        free(env);
        return NULL;
    }
    env[k++] = vars[0];
    env[k++] = vars[1];
    env[k++] = vars[2];
    env[k++] = vars[3];
    return env;
}

/* Hands the terminal to process group `pgid`: an interactive command in its
 * own group must be the foreground job to read from the terminal. Both
 * sides are then out of the foreground for a moment, so SIGTTOU is held off.
 * Async-signal-safe. */
static void take_terminal(pid_t pgid)
{
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    sigprocmask(SIG_BLOCK, &ttou, &old);
    tcsetpgrp(STDIN_FILENO, pgid);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Waits up to `wait_ms` for every process of group `pgid` to end, then
 * SIGKILLs what is left. In dlock it also reaps the members orphaned to it
 * (it is their subreaper), or their zombies would keep the group alive.
 * Async-signal-safe. */
static void kill_group_unless_gone(pid_t pgid, int64_t wait_ms)
{
    for (int64_t waited = 0;; waited += GROUP_POLL_MS) {
        while (waitpid(-pgid, NULL, WNOHANG) > 0)
            ;
        if (kill(-pgid, 0) < 0 && errno == ESRCH)
            return;
        if (waited >= wait_ms)
            break;
        poll(NULL, 0, GROUP_POLL_MS);
    }
    kill(-pgid, SIGKILL);
}

/* The guard process's life: it learns the command's process group from the
 * pipe (the command writes it before exec), then waits for the end of the
 * pipe. Only dlock holds its write end, so the end comes when dlock exits,
 * however it exits (SIGKILL included). Without dlock's GUARD_DONE byte
 * first, dlock died with the command running: the guard stops the group as
 * a lost lock would (PR_SET_PDEATHSIG reaches only the direct child), SIGKILL
 * after `kill_after_ms` or as soon as the group is gone. Forked from a
 * threaded process: async-signal-safe calls only. */
static void guard(int fd, int64_t kill_after_ms)
{
    pid_t pgid = 0;
    unsigned char b = 0;
    ssize_t got;
    while ((got = read(fd, &pgid, sizeof(pgid))) < 0 && errno == EINTR)
        ;
    if (got != (ssize_t)sizeof(pgid) || pgid <= 0)
        _exit(0); /* dlock died or gave up before the command existed */
    while ((got = read(fd, &b, 1)) != 0 && b != GUARD_DONE)
        if (got < 0 && errno != EINTR)
            break;
    if (got == 1)
        _exit(0);
    stop_group(pgid);
    kill_group_unless_gone(pgid, kill_after_ms);
    _exit(0);
}

/* Starts the guard in a process group of its own (no terminal signal, no
 * signal sent to dlock's group reaches it), with nothing of dlock's open
 * but the pipe. Returns its pid, or -1; *fd is the pipe's write end. */
static pid_t start_guard(const struct cli_command_opts *o, int *fd)
{
    int p[2];
    pid_t pid;
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
            signal(handled[i], SIG_DFL);
        setpgid(0, 0);
        int null = open("/dev/null", O_RDWR);
        for (int i = 0; i < 3; i++)
            dup2(null, i);
        dup2(p[0], 3);
        close_range(4, ~0U, 0);
        guard(3, o->kill_after_ms);
    }
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return -1;
    }
    *fd = p[1];
    return pid;
}

/* Lets the guard go: the command is over. */
static void stop_guard(pid_t pid, int fd)
{
    unsigned char b = GUARD_DONE;
    (void)!write(fd, &b, 1);
    close(fd);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* Starts the command; it tells the guard (`guard_fd`) its process group.
 * Returns its pid, or -1 with *exec_errno set. */
static pid_t spawn(const struct cli_command_opts *o, char **env, int guard_fd, int *exec_errno)
{
    char *shell_argv[] = {"sh", "-c", (char *)o->shell_command, NULL};
    char **argv = o->command ? o->command : shell_argv;
    pid_t parent = getpid(), pid;
    int errpipe[2], e = 0;

    if (pipe2(errpipe, O_CLOEXEC) < 0) {
        *exec_errno = errno;
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        close(errpipe[0]);
        setpgid(0, 0);
        pid = getpid();
        (void)!write(guard_fd, &pid, sizeof(pid));
        if (own_terminal)
            take_terminal(pid);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(EXIT_LOST); /* dlock died before we could notice */
        if (o->command)
            execvpe(argv[0], argv, env);
        else
            execve("/bin/sh", argv, env);
        e = errno;
        (void)!write(errpipe[1], &e, sizeof(e));
        _exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
    }
    close(errpipe[1]);
    if (pid < 0) {
        *exec_errno = errno;
        close(errpipe[0]);
        return -1;
    }
    setpgid(pid, pid); /* also here: whichever runs first */
    if (read(errpipe[0], &e, sizeof(e)) == (ssize_t)sizeof(e)) {
        waitpid(pid, NULL, 0);
        *exec_errno = e;
        pid = -1;
    }
    close(errpipe[0]);
    return pid;
}

struct supervision {
    dlock_lock *lock;
    pid_t pid;
    int status;
    bool lost;
    int64_t kill_at_ms; /* 0: no SIGKILL pending */
};

/* Why dlock learnt of the loss only when it was continued after a stop. */
#define LOST_WHILE_STOPPED 1

/* Stops the command first, then says why: a message may be slow to go.
 * `reason`: the library's code, or LOST_WHILE_STOPPED. */
static void lock_lost(const struct cli *cli, const struct cli_command_opts *o, struct supervision *s,
                      int reason)
{
    if (s->lost)
        return;
    s->lost = true;
    stop_group(s->pid);
    s->kill_at_ms = cli_now_ms() + o->kill_after_ms;
    message_guard(true);
    if (reason == LOST_WHILE_STOPPED)
        cli_error("lock %s expired while the job was stopped; stopping the command", o->name);
    else if (reason == DLOCK_ELOST)
        cli_error("lock %s: held for the --max-hold limit; stopping the command", o->name);
    else if (reason == DLOCK_EPAUSED)
        cli_error("lock %s was lost: its validity ran out while dlock was not running (stopped "
                  "or paused longer than the TTL); stopping the command", o->name);
    else
        cli_error("lock %s was lost (%s); stopping the command", o->name, dlock_strerror(reason));
    cli_debug(cli, "sent SIGTERM to process group %ld", (long)s->pid);
    message_guard(false);
}

/* The command was stopped. By a terminal's stop signal (Ctrl-Z), dlock stops
 * too, as a job must for the shell to get its prompt back. Once continued
 * (fg or bg), it continues the command, with the terminal if dlock has it
 * (fg), but only if the lock outlived the pause: the renewal thread was
 * stopped with dlock. A stop by SIGSTOP is left to whoever sent it: dlock
 * goes on renewing. */
static void command_stopped(const struct cli *cli, const struct cli_command_opts *o,
                            struct supervision *s, int sig)
{
    if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU)
        return;
    stop_self();
    if (!s->lost && !dlock_lock_held(s->lock)) {
        lock_lost(cli, o, s, LOST_WHILE_STOPPED);
    } else if (!s->lost && own_terminal && tcgetpgrp(STDIN_FILENO) == getpgrp()) {
        take_terminal(s->pid);
    }
    kill(-s->pid, SIGCONT); /* a group being stopped for good must run its traps */
}

/* Reaps what changed in the command's group: members orphaned to dlock,
 * and the command itself. True when the command exited or stopped, with
 * its `status`. */
static bool reap_group(pid_t pgid, int *status)
{
    pid_t pid;
    while ((pid = waitpid(-pgid, status, WNOHANG | WUNTRACED)) > 0)
        if (pid == pgid)
            return true;
    return false;
}

/* Runs until the command exited: forwards signals, reacts to loss and to
 * the command's stops. */
static void supervise(const struct cli *cli, const struct cli_command_opts *o, struct supervision *s)
{
    for (;;) {
        struct pollfd p = {.fd = wake_pipe[0], .events = POLLIN};
        unsigned char buf[64];
        int timeout = -1, status;
        ssize_t got;
        if (s->kill_at_ms) {
            /* A --kill-after past poll()'s range (24.8 days) waits in
             * turns of it. */
            int64_t left = s->kill_at_ms - cli_now_ms();
            timeout = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
        }
        if (poll(&p, 1, timeout) < 0 && errno != EINTR)
            break;
        while ((got = read(wake_pipe[0], buf, sizeof(buf))) > 0) {
            for (ssize_t i = 0; i < got; i++) {
                if (buf[i] == LOST_MARK)
                    lock_lost(cli, o, s, atomic_load(&lost_reason));
                else if (buf[i] != SIGCHLD)
                    kill(-s->pid, buf[i]); /* forward to the whole group */
            }
        }
        if (s->kill_at_ms && cli_now_ms() >= s->kill_at_ms) {
            kill(-s->pid, SIGKILL);
            s->kill_at_ms = 0;
            message_guard(true);
            cli_debug(cli, "sent SIGKILL to process group %ld", (long)s->pid);
            message_guard(false);
        }
        if (!reap_group(s->pid, &status))
            continue;
        if (!WIFSTOPPED(status)) {
            s->status = status;
            break;
        }
        command_stopped(cli, o, s, WSTOPSIG(status));
    }
}

static int exit_status_of(int status)
{
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

/* Releases after the command ended; the command's status, or 70. */
static int finish(const struct cli *cli, const struct cli_command_opts *o, dlock_client *client,
                  struct supervision *s)
{
    int code = exit_status_of(s->status), rc;
    if (s->lost)
        return EXIT_LOST;
    rc = dlock_lock_release(s->lock);
    message_guard(true);
    if (rc == DLOCK_ELOST || rc == DLOCK_ENOTOWNER) {
        cli_error("lock %s was lost before the command finished", o->name);
        code = EXIT_LOST;
    } else if (rc < 0) {
        cli_error("could not release %s (it expires by itself): %s", o->name,
                  dlock_client_errmsg(client));
    } else {
        cli_debug(cli, "released %s; the command exited with %d", o->name, code);
    }
    message_guard(false);
    return code;
}

/* Runs the command under the guard, waits for it, and releases. */
static int run_guarded(const struct cli *cli, const struct cli_command_opts *o,
                       dlock_client *client, struct supervision *s, char **env)
{
    int exec_errno = 0, guard_fd = -1;
    pid_t guard_pid = start_guard(o, &guard_fd);
    if (guard_pid < 0) {
        exec_errno = errno;
        s->pid = -1;
    } else {
        s->pid = spawn(o, env, guard_fd, &exec_errno);
    }
    if (s->pid < 0) {
        const char *what = o->command ? o->command[0] : "/bin/sh";
        cli_error("cannot run '%s': %s", what, strerror(exec_errno));
        if (guard_pid > 0)
            stop_guard(guard_pid, guard_fd);
        dlock_lock_release(s->lock);
        return exec_errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
    }
    catch_terminal_stop();
    /* The command may own the terminal already: -v must not stop dlock. */
    message_guard(true);
    cli_debug(cli, "started pid %ld", (long)s->pid);
    message_guard(false);
    supervise(cli, o, s);
    /* A lost lock's command goes whole: what its leader left behind (or
     * started after the SIGTERM) gets SIGKILL by the same deadline. */
    if (s->lost && s->kill_at_ms)
        kill_group_unless_gone(s->pid, s->kill_at_ms - cli_now_ms());
    stop_guard(guard_pid, guard_fd);
    /* Take the terminal back from the command, not from a shell that has
     * it after `bg`. */
    if (own_terminal && tcgetpgrp(STDIN_FILENO) == s->pid)
        take_terminal(getpgrp());
    return finish(cli, o, client, s);
}

static int run_locked(const struct cli *cli, const struct cli_command_opts *o, dlock_client *client,
                      dlock_lock *lock)
{
    struct supervision s = {.lock = lock};
    char *vars[4] = {NULL, NULL, NULL, NULL};
    char **env = child_environment(lock, vars);
    int code;

    if (!env) {
        cli_error("out of memory");
        dlock_lock_release(lock);
        return EXIT_UNAVAILABLE;
    }
    code = run_guarded(cli, o, client, &s, env);
    free(env);
    for (int i = 0; i < 4; i++)
        free(vars[i]);
    return code;
}

/* Which signal, if any, is waiting in the pipe (it canceled the wait). */
static int pending_signal(void)
{
    unsigned char buf[64];
    ssize_t got = read(wake_pipe[0], buf, sizeof(buf));
    for (ssize_t i = 0; i < got; i++)
        if (buf[i] != SIGCHLD && buf[i] != LOST_MARK)
            return buf[i];
    return 0;
}

int cmd_run(struct cli *cli, int argc, char **argv)
{
    struct cli_command_opts o;
    dlock_client *client;
    dlock_lock *lock = NULL;
    int rc = cli_parse_command(&cli_commands[CLI_CMD_RUN], argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? EXIT_DONE : rc;
    if (setup_signals() < 0) {
        cli_error("cannot set up signal handling: %s", strerror(errno));
        return EXIT_UNAVAILABLE;
    }
    if ((rc = cli_open_client_for(cli, &o, &client)))
        return rc;
    o.wait.auto_renew = true;
    o.wait.on_lost = on_lost;
    own_terminal = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    /* The command's orphans come to us: we know when its group is gone. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    acquiring_client = client;
    rc = cli_acquire(cli, client, o.name, &o.wait, &lock);
    acquiring_client = NULL;
    if (rc == DLOCK_EBUSY) {
        rc = cli_busy(cli, client, o.name, o.busy_code);
    } else if (rc == DLOCK_ECANCELED) {
        int sig = pending_signal();
        rc = sig ? 128 + sig : EXIT_UNAVAILABLE;
    } else if (rc < 0) {
        rc = cli_exit_code(rc); /* cli_acquire() said why */
    } else {
        /* Held and renewed now: a stuck stderr must not keep it idle. */
        message_guard(true);
        cli_debug(cli, "acquired %s, fence %" PRIu64, o.name, dlock_lock_fence(lock));
        message_guard(false);
        rc = run_locked(cli, &o, client, lock);
    }
    dlock_lock_free(lock);
    if (o.stats_json)
        cli_write_stats(client, o.stats_json);
    if (o.metrics_file)
        cli_write_metrics(client, o.metrics_file);
    dlock_client_close(client);
    return rc;
}
