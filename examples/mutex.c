/* A mutex: copies of this program, on one host or on many, take turns on
 * one lock.
 *
 *   mutex URL NAME WORK_MS
 *   e.g. mutex redis://127.0.0.1:6379 report 5000 & mutex redis://127.0.0.1:6379 report 5000
 *
 * Each copy waits for NAME (up to a minute) without polling: a busy lock
 * makes it sleep until the holder's release wakes it. It then works for
 * WORK_MS, longer than the lock's 2 s TTL if you like: the client's renewal
 * thread extends the lock every TTL/3 meanwhile, and on_lost says so if the
 * lock is lost anyway. Then it releases the lock, which wakes the next
 * copy. Exit status: 0, 75 when the lock stayed busy for the whole minute,
 * 70 when it was lost, 1 on other errors. */

#include <dlock.h>

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TTL_MS 2000
#define WAIT_MS 60000

static atomic_int lost_reason; /* 0 while held: set once, on the renewal thread */

/* Runs on the client's renewal thread: keep it short, only note the loss. */
static void on_lost(dlock_lock *lock, int reason, void *arg)
{
    (void)lock;
    (void)arg;
    atomic_store(&lost_reason, reason);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Stands for the real work: a second at a time, for as long as the lock is
 * certainly held (a local check, no round trip). Returns 0, or -1 if the
 * lock was lost before the work was done. */
static int work(const dlock_lock *lock, long work_ms)
{
    for (long done = 0; done < work_ms; done += 1000) {
        if (!dlock_lock_held(lock))
            return -1;
        printf("  working, the lock is still certainly held for %" PRId64 " ms\n",
               dlock_lock_validity_ms(lock));
        fflush(stdout);
        sleep_ms(work_ms - done < 1000 ? work_ms - done : 1000);
    }
    return dlock_lock_held(lock) ? 0 : -1;
}

static int hold(dlock_client *client, const char *name, long work_ms)
{
    dlock_acquire_options how = DLOCK_ACQUIRE_OPTIONS_INIT;
    dlock_lock *lock;
    int rc;

    how.wait_ms = WAIT_MS;
    how.auto_renew = 1;
    how.on_lost = on_lost;
    rc = dlock_lock_acquire(&lock, client, name, TTL_MS, &how);
    if (rc == DLOCK_EBUSY) {
        fprintf(stderr, "mutex: %s stayed busy for %d s\n", name, WAIT_MS / 1000);
        return 75;
    }
    if (rc < 0) {
        fprintf(stderr, "mutex: %s: %s\n", dlock_strerror(rc), dlock_client_errmsg(client));
        return 1;
    }
    /* The fencing token is the server's clock in microseconds (or one more
     * than the last token, if that is larger): pass it to whatever the work
     * writes, so that the resource can refuse a holder that was paused past
     * its TTL. */
    printf("got %s after %u attempt(s), fence %" PRIu64 "\n", name, dlock_lock_attempts(lock),
           dlock_lock_fence(lock));
    fflush(stdout);
    if (work(lock, work_ms) < 0) {
        fprintf(stderr, "mutex: lost %s: %s\n", name, dlock_strerror(atomic_load(&lost_reason)));
        dlock_lock_free(lock);
        return 70;
    }
    rc = dlock_lock_release(lock);
    dlock_lock_free(lock);
    if (rc < 0) {
        fprintf(stderr, "mutex: release: %s: %s\n", dlock_strerror(rc), dlock_client_errmsg(client));
        return 1;
    }
    printf("released %s\n", name);
    return 0;
}

int main(int argc, char **argv)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *client;
    char why[256], *end = NULL;
    long work_ms = argc == 4 ? strtol(argv[3], &end, 10) : -1;
    int rc;

    if (work_ms < 0 || end == argv[3] || *end) {
        fprintf(stderr, "usage: mutex URL NAME WORK_MS\n");
        return 64;
    }
    opts.urls = (const char *const *)&argv[1];
    opts.n_urls = 1;
    if (dlock_client_open(&client, &opts, why, sizeof(why)) < 0) {
        fprintf(stderr, "mutex: %s\n", why);
        return 1;
    }
    rc = hold(client, argv[2], work_ms);
    dlock_client_close(client);
    return rc;
}
