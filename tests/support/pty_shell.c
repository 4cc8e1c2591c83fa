/* A job-control shell on a pseudo-terminal. See pty_shell.h. */
#include "pty_shell.h"

#include "redis_server.h"

#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int pty_shell_start(pty_shell *sh, const char *redis_url)
{
    memset(sh, 0, sizeof(*sh));
    sh->pid = forkpty(&sh->fd, NULL, NULL, NULL);
    if (sh->pid < 0)
        return -1;
    if (sh->pid == 0) {
        setenv("DLOCK_REDIS", redis_url, 1);
        setenv("PS1", "pty$ ", 1);
        setenv("TERM", "dumb", 1);
        execlp("bash", "bash", "--norc", "--noprofile", "-i", (char *)NULL);
        _exit(127);
    }
    return 0;
}

void pty_shell_type(pty_shell *sh, const char *text)
{
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = write(sh->fd, text + done, len - done);
        if (n < 0 && errno != EINTR)
            return;
        if (n > 0)
            done += (size_t)n;
    }
}

/* Reads what the terminal has for us, waiting at most `wait_ms`. */
static void collect(pty_shell *sh, int wait_ms)
{
    struct pollfd p = {.fd = sh->fd, .events = POLLIN};
    ssize_t n;
    if (sh->used + 1 >= sizeof(sh->out) || poll(&p, 1, wait_ms) <= 0)
        return;
    n = read(sh->fd, sh->out + sh->used, sizeof(sh->out) - 1 - sh->used);
    if (n > 0) {
        sh->used += (size_t)n;
        sh->out[sh->used] = '\0';
    }
}

int pty_shell_expect(pty_shell *sh, const char *want, int timeout_ms)
{
    long long until = test_now_ms() + (long long)timeout_ms * test_slowdown();
    for (;;) {
        const char *at = strstr(sh->out + sh->seen, want);
        if (at) {
            sh->seen = (size_t)(at - sh->out) + strlen(want);
            return 1;
        }
        if (test_now_ms() >= until)
            return 0;
        collect(sh, 20);
    }
}

void pty_shell_stop(pty_shell *sh)
{
    long long until = test_now_ms() + 5000LL * test_slowdown();
    close(sh->fd); /* a hangup: the shell and its jobs get SIGHUP */
    while (waitpid(sh->pid, NULL, WNOHANG) == 0) {
        if (test_now_ms() >= until) {
            kill(sh->pid, SIGKILL);
            waitpid(sh->pid, NULL, 0);
            break;
        }
        usleep(10000);
    }
}
