/* Runs the built dlock command. See cli_runner.h. */
#include "cli_runner.h"

#include "redis_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int cli_start(cli_proc *p, const char *redis_url, const char *const *args,
              const char *const *env)
{
    int out[2], err[2];
    const char *argv[64];
    int n = 0;
    memset(p, 0, sizeof(*p));
    argv[n++] = DLOCK_CLI_PATH;
    for (int i = 0; args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
        return -1;
    p->started_ms = test_now_ms();
    p->pid = fork();
    if (p->pid < 0)
        return -1;
    if (p->pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        if (redis_url)
            setenv("DLOCK_REDIS", redis_url, 1);
        else
            unsetenv("DLOCK_REDIS");
        unsetenv("DLOCK_PASSWORD");
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    p->out_fd = out[0];
    p->err_fd = err[0];
    return 0;
}

static void drain(int *fd, char *buf, size_t cap)
{
    size_t used = strlen(buf);
    ssize_t n = read(*fd, buf + used, cap - used - 1);
    if (n > 0) {
        buf[used + (size_t)n] = '\0';
        return;
    }
    if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(*fd);
        *fd = -1;
    }
}

int cli_wait(cli_proc *p, int timeout_ms)
{
    long long deadline = test_now_ms() + (long long)timeout_ms * test_slowdown();
    int status = 0;
    while (p->out_fd >= 0 || p->err_fd >= 0) {
        struct pollfd fds[2] = {{p->out_fd, POLLIN, 0}, {p->err_fd, POLLIN, 0}};
        long long left = deadline - test_now_ms();
        if (left <= 0) {
            kill(p->pid, SIGKILL);
            deadline = test_now_ms() + 5000;
            continue;
        }
        if (poll(fds, 2, (int)left) <= 0)
            continue;
        if (fds[0].revents)
            drain(&p->out_fd, p->out, sizeof(p->out));
        if (fds[1].revents)
            drain(&p->err_fd, p->err, sizeof(p->err));
    }
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
        ;
    p->took_ms = test_now_ms() - p->started_ms;
    p->status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    return p->status;
}

int cli_run(cli_proc *p, const char *redis_url, const char *const *args, int timeout_ms)
{
    if (cli_start(p, redis_url, args, NULL) < 0)
        return -1;
    return cli_wait(p, timeout_ms);
}
