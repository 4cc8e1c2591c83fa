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

char *promtext_parse(const char *text)
{
    char path[] = "/tmp/dlock-promtext-XXXXXX", command[512];
    size_t len = 0, cap = 65536;
    char *out = malloc(cap);
    FILE *f, *p;
    int fd = mkstemp(path), status;
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) < 0, 0);
    assert_int_equal(fclose(f), 0);
    snprintf(command, sizeof(command), "/usr/bin/python3 %s %s", PROMTEXT_SCRIPT, path);
    p = popen(command, "r");
    assert_non_null(p);
    assert_non_null(out);
    for (size_t n; (n = fread(out + len, 1, cap - len - 1, p)) > 0;) {
        len += n;
        if (cap - len < 4096) {
            out = realloc(out, cap *= 2);
            assert_non_null(out);
        }
    }
    out[len] = '\0';
    status = pclose(p);
    if (status != 0)
        fail_msg("the Prometheus parser refused the text (kept in %s)", path);
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
