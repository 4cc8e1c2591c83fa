/* The C library's uncontended cycle in a tiny loop, for bench/python.py: it
 * loads this beside the binding and alternates batches of each in one
 * process, so that the machine's drift hits both alike. */
#include <dlock.h>

/* `n` acquire (try once) + release cycles of `name`; 0, or the first error. */
int bench_c_cycles(dlock_client *c, const char *name, int n)
{
    for (int i = 0; i < n; i++) {
        dlock_lock *lock = NULL;
        int rc = dlock_lock_acquire(&lock, c, name, 30000, NULL);
        if (rc == 0)
            rc = dlock_lock_release(lock);
        dlock_lock_free(lock);
        if (rc < 0)
            return rc;
    }
    return 0;
}
