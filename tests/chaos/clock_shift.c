/* LD_PRELOAD shim for redis-server: shifts the wall clock (CLOCK_REALTIME,
 * gettimeofday, time) by the number of milliseconds written in the file
 * named by DLOCK_CLOCK_SHIFT_FILE, re-read at most every 10 ms, so a test
 * can make one node's clock jump. Monotonic clocks are left alone.
 * (libfaketime hangs Debian's jemalloc-linked redis-server: this does not
 * allocate.) */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static _Atomic long long offset_ms;
static _Atomic long long read_at_ns; /* CLOCK_MONOTONIC of the last read */

static long long monotonic_ns(void)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long current_offset_ms(void)
{
    long long now = monotonic_ns();
    if (now - atomic_load(&read_at_ns) > 10000000LL) {
        const char *path = getenv("DLOCK_CLOCK_SHIFT_FILE");
        int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
        if (fd >= 0) {
            char buf[32] = {0};
            if (read(fd, buf, sizeof(buf) - 1) > 0)
                atomic_store(&offset_ms, strtoll(buf, NULL, 10));
            close(fd);
        }
        atomic_store(&read_at_ns, now);
    }
    return atomic_load(&offset_ms);
}

static void shift(struct timespec *ts)
{
    long long ns = (long long)ts->tv_nsec + current_offset_ms() * 1000000LL;
    ts->tv_sec += (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
    if (ts->tv_nsec < 0) {
        ts->tv_nsec += 1000000000L;
        ts->tv_sec--;
    }
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    int rc = (int)syscall(SYS_clock_gettime, id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
        shift(ts);
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    struct timespec ts;
    (void)tz;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    tv->tv_sec = ts.tv_sec; /* glibc declares tv non-null */
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
