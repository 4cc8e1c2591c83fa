/* Runs promtext.py on a text. See promtext.h. */
#include "promtext.h"
#include "python_run.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

char *promtext_parse_file(const char *path)
{
    char *out;
    if (python_run(PROMTEXT_SCRIPT, (const char *const[]){path, NULL}, &out) != 0)
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
