/* Runs promtext.py on a text. See promtext.h. */
#include "promtext.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* Runs promtext.py on the file at `path`; its output in out[0..cap), and
 * its exit status. */
static int run_parser(const char *path, char **out, size_t *len)
{
    size_t cap = 65536;
    int pipefd[2], status = -1;
    pid_t pid;
    ssize_t n;
    *out = malloc(cap);
    *len = 0;
    assert_non_null(*out);
    assert_int_equal(pipe(pipefd), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pipefd[1], STDOUT_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        execl("/usr/bin/python3", "python3", PROMTEXT_SCRIPT, path, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    while ((n = read(pipefd[0], *out + *len, cap - *len - 1)) > 0) {
        *len += (size_t)n;
        if (cap - *len < 4096) {
            *out = realloc(*out, cap *= 2);
            assert_non_null(*out);
        }
    }
    close(pipefd[0]);
    (*out)[*len] = '\0';
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

char *promtext_parse_file(const char *path)
{
    char *out;
    size_t len;
    if (run_parser(path, &out, &len) != 0)
        fail_msg("the Prometheus parser refused the text in %s", path);
    return out;
}

char *promtext_parse(const char *text)
{
    char path[] = "/tmp/dlock-promtext-XXXXXX", *out;
    FILE *f;
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) < 0, 0);
    assert_int_equal(fclose(f), 0);
    out = promtext_parse_file(path); /* a text refused stays there, to look at */
    unlink(path);
    return out;
}

double promtext_value(const char *parsed, const char *sample)
{
    size_t n = strlen(sample);
    for (const char *line = parsed; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        if (strncmp(line, sample, n) == 0 && line[n] == ' ')
            return strtod(line + n + 1, NULL);
    return -1;
}

long long promtext_count(const char *parsed, const char *sample)
{
    double v = promtext_value(parsed, sample);
    assert_true(v == (double)(long long)v);
    return (long long)v;
}
