/* The command's clock, and the times it prints (UTC). */
#include "times.h"

#include <time.h>

int64_t cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void cli_format_time(int64_t ms, char *out, size_t len)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
