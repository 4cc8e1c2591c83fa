/* A semaphore: at most PERMITS copies of this program hold NAME at once.
 *
 *   semaphore URL NAME PERMITS WORK_MS
 *   e.g. for i in 1 2 3 4 5; do semaphore redis://127.0.0.1:6379 partner-api 3 2000 & done
 *
 * Each copy takes one of PERMITS permits (waiting up to a minute for one to
 * be free), works for WORK_MS while the client's renewal thread keeps the
 * permit, and releases it, which wakes a waiting copy. Every permit has a
 * slot, 0 to PERMITS-1, that no other live permit holds, and a fencing token
 * that grows per slot. Every copy must give the same PERMITS while permits
 * are held. Exit status: 0, 75 when no permit came free within the minute,
 * 70 when the permit was lost, 1 on other errors. */

#include "example.h"

#include <dlock.h>

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#define TTL_MS 2000
#define WAIT_MS 60000

static int hold(dlock_client *client, const char *name, unsigned permits, long work_ms)
{
    dlock_acquire_options how = DLOCK_ACQUIRE_OPTIONS_INIT;
    struct timespec work = {work_ms / 1000, (work_ms % 1000) * 1000000L};
    dlock_lock *lock;
    int rc;

    how.permits = permits;
    how.wait_ms = WAIT_MS;
    how.auto_renew = 1;
    rc = dlock_lock_acquire(&lock, client, name, TTL_MS, &how);
    if (rc < 0) {
        fprintf(stderr, "semaphore: %s: %s\n", dlock_strerror(rc), dlock_client_errmsg(client));
        return rc == DLOCK_EBUSY ? 75 : 1;
    }
    /* A resource that checks fences keeps the largest one per slot. */
    printf("got slot %u of %s, fence %" PRIu64 "\n", dlock_lock_slot(lock), name,
           dlock_lock_fence(lock));
    fflush(stdout);
    nanosleep(&work, NULL);
    if (!dlock_lock_held(lock)) {
        fprintf(stderr, "semaphore: lost slot %u of %s\n", dlock_lock_slot(lock), name);
        dlock_lock_free(lock);
        return 70;
    }
    rc = dlock_lock_release(lock);
    dlock_lock_free(lock);
    if (rc < 0) {
        fprintf(stderr, "semaphore: release: %s\n", dlock_strerror(rc));
        return 1;
    }
    printf("released a permit of %s\n", name);
    return 0;
}

int main(int argc, char **argv)
{
    long permits = argc == 5 ? example_number(argv[3]) : -1;
    long work_ms = argc == 5 ? example_number(argv[4]) : -1;
    dlock_client *client;
    int rc;

    if (permits < 2 || permits > DLOCK_PERMITS_MAX || work_ms < 0) {
        fprintf(stderr, "usage: semaphore URL NAME PERMITS(2..%d) WORK_MS\n", DLOCK_PERMITS_MAX);
        return 64;
    }
    client = example_client("semaphore", argv[1]);
    if (!client)
        return 1;
    rc = hold(client, argv[2], (unsigned)permits, work_ms);
    dlock_client_close(client);
    return rc;
}
