/* A shared lock: readers hold NAME together, a writer alone.
 *
 *   shared URL NAME read|write WORK_MS
 *   e.g. shared redis://127.0.0.1:6379 report read 3000 &
 *        shared redis://127.0.0.1:6379 report read 3000 &
 *        shared redis://127.0.0.1:6379 report write 1000
 *
 * A reader takes a shared hold: any number of readers at once, never with
 * the writer. The writer takes the name exclusively, like a mutex; while it
 * waits, new readers wait behind it, so a stream of readers cannot starve
 * it. Each copy waits up to a minute, works for WORK_MS while the client's
 * renewal thread keeps its hold, and releases it. Exit status: 0, 75 when
 * the name stayed busy for the whole minute, 70 when the hold was lost, 1
 * on other errors. */

#include "example.h"

#include <dlock.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define TTL_MS 2000
#define WAIT_MS 60000

static int hold(dlock_client *client, const char *name, int reader, long work_ms)
{
    dlock_acquire_options how = DLOCK_ACQUIRE_OPTIONS_INIT;
    struct timespec work = {work_ms / 1000, (work_ms % 1000) * 1000000L};
    const char *role = reader ? "reader" : "writer";
    dlock_lock *lock;
    int rc;

    how.shared = reader;
    how.wait_ms = WAIT_MS;
    how.auto_renew = 1;
    rc = dlock_lock_acquire(&lock, client, name, TTL_MS, &how);
    if (rc < 0) {
        fprintf(stderr, "shared: %s: %s\n", dlock_strerror(rc), dlock_client_errmsg(client));
        return rc == DLOCK_EBUSY ? 75 : 1;
    }
    /* Every reader between two writers sees the last writer's fence: what
     * it reads is that writer's data. */
    printf("%s holds %s, fence %" PRIu64 "\n", role, name, dlock_lock_fence(lock));
    fflush(stdout);
    nanosleep(&work, NULL);
    if (!dlock_lock_held(lock)) {
        fprintf(stderr, "shared: the %s lost %s\n", role, name);
        dlock_lock_free(lock);
        return 70;
    }
    rc = dlock_lock_release(lock);
    dlock_lock_free(lock);
    if (rc < 0) {
        fprintf(stderr, "shared: release: %s\n", dlock_strerror(rc));
        return 1;
    }
    printf("%s released %s\n", role, name);
    return 0;
}

int main(int argc, char **argv)
{
    long work_ms = argc == 5 ? example_number(argv[4]) : -1;
    dlock_client *client;
    int rc;

    if (work_ms < 0 || (strcmp(argv[3], "read") != 0 && strcmp(argv[3], "write") != 0)) {
        fprintf(stderr, "usage: shared URL NAME read|write WORK_MS\n");
        return 64;
    }
    client = example_client("shared", argv[1]);
    if (!client)
        return 1;
    rc = hold(client, argv[2], strcmp(argv[3], "read") == 0, work_ms);
    dlock_client_close(client);
    return rc;
}
