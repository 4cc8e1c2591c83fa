/* A system suspend, simulated: this program defines clock_gettime(), which
 * the library's calls resolve to, and moves CLOCK_BOOTTIME forward while
 * CLOCK_MONOTONIC (which stops during a suspend) does not move. A lock whose
 * validity ran out "during the suspend" must be declared lost within a
 * fraction of a second, not at its next renewal (TTL/3 later), and lost
 * for that reason (DLOCK_EPAUSED). */
#include "helpers.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static atomic_llong boottime_offset_ns;

__attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec *ts)
{
    long long offset = id == CLOCK_BOOTTIME ? atomic_load(&boottime_offset_ns) : 0;
    long long ns;
    if (syscall(SYS_clock_gettime, id, ts) != 0)
        return -1;
    ns = (long long)ts->tv_nsec + offset % 1000000000LL;
    ts->tv_sec += (time_t)(offset / 1000000000LL + ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
    return 0;
}

static atomic_int lost_calls, lost_reason;
static atomic_llong lost_at_ms;

static void on_lost(dlock_lock *lock, int reason, void *arg)
{
    (void)lock;
    (void)arg;
    atomic_store(&lost_reason, reason);
    atomic_store(&lost_at_ms, test_now_ms());
    atomic_fetch_add(&lost_calls, 1);
}

static void test_suspend_loss_noticed_after_resume(void **state)
{
    test_redis *server = *state;
    dlock_client *c = client_on(server->url);
    dlock_acquire_options opts = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *lock;
    long long resumed;

    opts.auto_renew = 1;
    opts.on_lost = on_lost;
    /* The first renewal is due 20 s after the acquisition. */
    lock = take(c, "suspend:lost", 60000, &opts);
    usleep(100 * 1000);
    assert_true(dlock_lock_held(lock));

    /* Two minutes pass asleep. */
    atomic_store(&boottime_offset_ns, 120LL * 1000000000LL);
    resumed = test_now_ms();
    assert_false(dlock_lock_held(lock));
    while (atomic_load(&lost_calls) == 0 && test_now_ms() < resumed + 15000)
        usleep(5000);
    assert_int_equal(atomic_load(&lost_calls), 1);
    /* it ran out while the process was not running, not for want of an answer */
    assert_int_equal(atomic_load(&lost_reason), DLOCK_EPAUSED);
    if (atomic_load(&lost_at_ms) - resumed > 1000LL * test_slowdown())
        fail_msg("the loss was noticed %lld ms after the resume",
                 atomic_load(&lost_at_ms) - resumed);
    assert_int_equal(dlock_lock_release(lock), DLOCK_ELOST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_suspend_loss_noticed_after_resume, setup_server,
                                        cleanup_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
