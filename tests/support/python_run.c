/* Runs a Python script. See python_run.h. */
#include "python_run.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define ARGS_MAX 8

int python_run(const char *script, const char *const *args, char **out)
{
    size_t cap = 65536, len = 0;
    const char *argv[ARGS_MAX + 3] = {"python3", script};
    int pipefd[2], status = -1;
    pid_t pid;
    ssize_t n;
    for (size_t i = 0; args[i]; i++) {
        assert_true(i < ARGS_MAX);
        argv[i + 2] = args[i];
    }
    *out = malloc(cap);
    assert_non_null(*out);
    assert_int_equal(pipe(pipefd), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pipefd[1], STDOUT_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        execv("/usr/bin/python3", (char *const *)argv);
        _exit(127);
    }
    close(pipefd[1]);
    while ((n = read(pipefd[0], *out + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 4096) {
            *out = realloc(*out, cap *= 2);
            assert_non_null(*out);
        }
    }
    close(pipefd[0]);
    (*out)[len] = '\0';
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}
