/* Scratch files of the tests. See files.h. */
#include "files.h"

#include "fixtures.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

void scratch_path(char *path, size_t len, const char *dir, const char *name)
{
    snprintf(path, len, "%s/%s", dir, name);
    unlink(path);
}

void scratch(char *path, size_t len, const char *name)
{
    scratch_path(path, len, group_server.dir, name);
}

void write_number_file(const char *path, long value)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%ld\n", value);
    assert_int_equal(fclose(f), 0);
}

long read_number_file(const char *path)
{
    char buf[32] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = '\0';
    fclose(f);
    return buf[0] ? strtol(buf, NULL, 10) : -1;
}

long wait_for_number(const char *path)
{
    long long until = test_now_ms() + 10000LL * test_slowdown();
    long v;
    while ((v = read_number_file(path)) < 0 && test_now_ms() < until)
        usleep(10000);
    return v;
}

void bump_number_file(const char *path)
{
    long value = read_number_file(path);
    FILE *f;
    usleep(1000); /* widen the race a missing lock would lose */
    f = fopen(path, "w");
    if (!f)
        return; /* the count comes out short: the caller's test fails */
    fprintf(f, "%ld\n", value + 1);
    fclose(f);
}
