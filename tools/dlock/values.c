/* Option values: durations, exit codes, permits, replicas. */
#include "values.h"

#include <ctype.h>
#include <dlock.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DURATION_MAX_MS (100LL * 365 * 24 * 3600 * 1000) /* a century is "forever" enough */

int cli_parse_duration_ms(const char *s, int64_t *ms)
{
    static const struct {
        const char *suffix;
        double ms;
    } units[] = {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    const char *p = s;
    char *end;
    double value;

    if (!s || !*s)
        return -1;
    for (; *p && (strchr("0123456789", *p) || *p == '.'); p++)
        ;
    if (p == s || s[0] == '.')
        return -1;
    errno = 0;
    value = strtod(s, &end);
    if (errno || end != p)
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(p, units[i].suffix) == 0) {
            double total = value * units[i].ms;
            if (total > (double)DURATION_MAX_MS)
                return -1;
            *ms = (int64_t)(total + 0.5);
            return 0;
        }
    }
    return -1;
}

int cli_parse_exit_code(const char *s, int *code)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > 255)
        return -1;
    *code = (int)v;
    return 0;
}

int cli_parse_permits(const char *s, long long *n)
{
    char *end;
    errno = 0;
    *n = strtoll(s, &end, 10);
    return *s && !isspace((unsigned char)*s) && *end == '\0' && errno == 0 ? 0 : -1;
}

int cli_parse_replicas(const char *s, int *k)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!isdigit((unsigned char)*s) || *end || v > DLOCK_REPLICAS_MAX)
        return -1;
    *k = (int)v;
    return 0;
}
