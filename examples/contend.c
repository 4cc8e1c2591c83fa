/* Two or more copies of this program take turns on one lock.
 *
 *   contend URL NAME WHO ROUNDS HOLD_MS
 *
 * Each round tries to take NAME (TTL 10 s), retrying every 20 ms while
 * another process holds it, keeps it for HOLD_MS, then releases it. */

#include <dlock.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int take(dlock_client *client, const char *name, dlock_lock **lock)
{
    int rc;
    while ((rc = dlock_lock_acquire(lock, client, name, 10000, NULL)) == DLOCK_EBUSY)
        sleep_ms(20);
    return rc;
}

int main(int argc, char **argv)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *client;
    char why[256];
    int rc;

    if (argc != 6) {
        fprintf(stderr, "usage: contend URL NAME WHO ROUNDS HOLD_MS\n");
        return 64;
    }
    opts.urls = (const char *const *)&argv[1];
    opts.n_urls = 1;
    rc = dlock_client_open(&client, &opts, why, sizeof(why));
    if (rc < 0) {
        fprintf(stderr, "contend: %s\n", why);
        return 1;
    }
    for (int round = 1; round <= atoi(argv[4]); round++) {
        dlock_lock *lock;
        rc = take(client, argv[2], &lock);
        if (rc < 0)
            break;
        printf("%s: got %s (fence %" PRIu64 ", valid for %" PRId64 " ms)\n", argv[3], argv[2],
               dlock_lock_fence(lock), dlock_lock_validity_ms(lock));
        fflush(stdout);
        sleep_ms(atol(argv[5]));
        printf("%s: releasing\n", argv[3]);
        fflush(stdout);
        rc = dlock_lock_release(lock);
        dlock_lock_free(lock);
        if (rc < 0)
            break;
        sleep_ms(5); /* let the other process in */
    }
    if (rc < 0)
        fprintf(stderr, "contend: %s: %s\n", dlock_strerror(rc), dlock_client_errmsg(client));
    dlock_client_close(client);
    return rc < 0 ? 1 : 0;
}
