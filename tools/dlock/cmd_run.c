/* run: hold the lock while a command runs.
 *
 * The command runs in its own process group with DLOCK_NAME, DLOCK_TOKEN and
 * DLOCK_FENCE set, dies if dlock dies, and has SIGINT, SIGTERM and SIGHUP
 * forwarded to its group. The client's renewal thread keeps the lock alive;
 * if it is lost anyway, the group gets SIGTERM, then SIGKILL after
 * --kill-after, and dlock exits 70. Signal handlers and the loss callback
 * only write a byte to a pipe; the main loop does the rest. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOST_MARK 0 /* the byte on the wake pipe that means "lock lost" */

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

static int setup_signals(void)
{
    static const int handled[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
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
    return 0;
}

static bool keep_variable(const char *entry)
{
    static const char *const ours[] = {"DLOCK_NAME=", "DLOCK_TOKEN=", "DLOCK_FENCE=",
                                       "DLOCK_PASSWORD="};
    for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
        if (strncmp(entry, ours[i], strlen(ours[i])) == 0)
            return false;
    /* A server list with credentials in it stays with us. */
    return !(strncmp(entry, "DLOCK_REDIS=", 12) == 0 && strchr(entry, '@'));
}

/* The child's environment, built before fork: after fork only
 * async-signal-safe calls are allowed, and the renewal thread exists. */
static char **child_environment(dlock_lock *lock, char *vars[3])
{
    size_t n = 0, k = 0;
    char **env;
    while (environ[n])
        n++;
    env = calloc(n + 4, sizeof(*env));
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (keep_variable(environ[i]))
            env[k++] = environ[i];
    if (asprintf(&vars[0], "DLOCK_NAME=%s", dlock_lock_name(lock)) < 0 ||
        asprintf(&vars[1], "DLOCK_TOKEN=%s", dlock_lock_token(lock)) < 0 ||
        asprintf(&vars[2], "DLOCK_FENCE=%" PRIu64, dlock_lock_fence(lock)) < 0) {
        free(env);
        return NULL;
    }
    env[k++] = vars[0];
    env[k++] = vars[1];
    env[k++] = vars[2];
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

/* Starts the command. Returns its pid, or -1 with *exec_errno set. */
static pid_t spawn(const struct cli_command_opts *o, char **env, int *exec_errno)
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
        if (own_terminal)
            take_terminal(getpid());
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
    pid_t pid;
    int status;
    bool lost;
    int64_t kill_at_ms; /* 0: no SIGKILL pending */
};

static void lock_lost(const struct cli *cli, const struct cli_command_opts *o, struct supervision *s)
{
    int reason = atomic_load(&lost_reason);
    if (s->lost)
        return;
    s->lost = true;
    if (reason == DLOCK_ELOST)
        cli_error("lock %s: held for the --max-hold limit; stopping the command", o->name);
    else
        cli_error("lock %s was lost (%s); stopping the command", o->name, dlock_strerror(reason));
    kill(-s->pid, SIGTERM);
    s->kill_at_ms = cli_now_ms() + o->kill_after_ms;
    cli_debug(cli, "sent SIGTERM to process group %ld", (long)s->pid);
}

/* Runs until the command exited: forwards signals, reacts to loss. */
static void supervise(const struct cli *cli, const struct cli_command_opts *o, struct supervision *s)
{
    bool exited = false;
    while (!exited) {
        struct pollfd p = {.fd = wake_pipe[0], .events = POLLIN};
        unsigned char buf[64];
        int timeout = -1;
        ssize_t got;
        if (s->kill_at_ms) {
            int64_t left = s->kill_at_ms - cli_now_ms();
            timeout = left > 0 ? (int)left : 0;
        }
        if (poll(&p, 1, timeout) < 0 && errno != EINTR)
            break;
        while ((got = read(wake_pipe[0], buf, sizeof(buf))) > 0) {
            for (ssize_t i = 0; i < got; i++) {
                if (buf[i] == LOST_MARK)
                    lock_lost(cli, o, s);
                else if (buf[i] != SIGCHLD)
                    kill(-s->pid, buf[i]); /* forward to the whole group */
            }
        }
        if (s->kill_at_ms && cli_now_ms() >= s->kill_at_ms) {
            kill(-s->pid, SIGKILL);
            s->kill_at_ms = 0;
            cli_debug(cli, "sent SIGKILL to process group %ld", (long)s->pid);
        }
        exited = waitpid(s->pid, &s->status, WNOHANG) == s->pid;
    }
}

static int exit_status_of(int status)
{
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

/* Releases after the command ended; the command's status, or 70. */
static int finish(const struct cli *cli, const struct cli_command_opts *o, dlock_client *client,
                  dlock_lock *lock, struct supervision *s)
{
    int code = exit_status_of(s->status), rc;
    if (s->lost)
        return EXIT_LOST;
    rc = dlock_lock_release(lock);
    if (rc == DLOCK_ELOST || rc == DLOCK_ENOTOWNER) {
        cli_error("lock %s was lost before the command finished", o->name);
        return EXIT_LOST;
    }
    if (rc < 0)
        cli_error("could not release %s (it expires by itself): %s", o->name,
                  dlock_client_errmsg(client));
    else
        cli_debug(cli, "released %s; the command exited with %d", o->name, code);
    return code;
}

static int run_locked(const struct cli *cli, const struct cli_command_opts *o, dlock_client *client,
                      dlock_lock *lock)
{
    struct supervision s = {0};
    char *vars[3] = {NULL, NULL, NULL};
    char **env = child_environment(lock, vars);
    int exec_errno = 0, code;

    if (!env) {
        cli_error("out of memory");
        dlock_lock_release(lock);
        return EXIT_UNAVAILABLE;
    }
    s.pid = spawn(o, env, &exec_errno);
    if (s.pid < 0) {
        const char *what = o->command ? o->command[0] : "/bin/sh";
        cli_error("cannot run '%s': %s", what, strerror(exec_errno));
        dlock_lock_release(lock);
        code = exec_errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
    } else {
        cli_debug(cli, "started pid %ld", (long)s.pid);
        supervise(cli, o, &s);
        if (own_terminal)
            take_terminal(getpgrp());
        code = finish(cli, o, client, lock, &s);
    }
    free(env);
    for (int i = 0; i < 3; i++)
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
    int rc = cli_parse_command(&cli_command_run, argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? EXIT_DONE : rc;
    if (setup_signals() < 0) {
        cli_error("cannot set up signal handling: %s", strerror(errno));
        return EXIT_UNAVAILABLE;
    }
    if ((rc = cli_open_client(cli, &client)))
        return rc;
    o.wait.auto_renew = true;
    o.wait.on_lost = on_lost;
    own_terminal = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    acquiring_client = client;
    rc = cli_acquire(cli, client, o.name, &o.wait, &lock);
    acquiring_client = NULL;
    if (rc == DLOCK_EBUSY) {
        cli_info(cli, "%s is busy: %s", o.name, dlock_client_errmsg(client));
        rc = o.busy_code;
    } else if (rc == DLOCK_ECANCELED) {
        int sig = pending_signal();
        rc = sig ? 128 + sig : EXIT_UNAVAILABLE;
    } else if (rc < 0) {
        rc = cli_fail(client, rc, o.name);
    } else {
        cli_debug(cli, "acquired %s, fence %" PRIu64, o.name, dlock_lock_fence(lock));
        rc = run_locked(cli, &o, client, lock);
    }
    dlock_lock_free(lock);
    dlock_client_close(client);
    return rc;
}
