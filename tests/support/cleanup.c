/* What a test takes, given back at its teardown. See cleanup.h. */
#include "cleanup.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <cmocka.h>

struct kept {
    void *thing;
    void (*free_fn)(void *);
    void (*stop_fn)(void *);
};

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static struct kept *kept;
static size_t n_kept, cap_kept;
static atomic_bool stopping;

void *cleanup_keep_stoppable(void *thing, void (*free_fn)(void *), void (*stop_fn)(void *))
{
    struct kept *grown;
    if (!thing)
        return NULL;
    pthread_mutex_lock(&mutex);
    if (n_kept == cap_kept) {
        size_t cap = cap_kept ? 2 * cap_kept : 64;
        grown = realloc(kept, cap * sizeof(*kept));
        if (!grown) {
            pthread_mutex_unlock(&mutex);
            free_fn(thing);
            fail_msg("out of memory keeping a test's resource");
            return NULL; /* cmocka fails return, as far as the analyser knows */
        }
        kept = grown;
        cap_kept = cap;
    }
    kept[n_kept++] = (struct kept){thing, free_fn, stop_fn};
    pthread_mutex_unlock(&mutex);
    return thing;
}

void *cleanup_keep(void *thing, void (*free_fn)(void *))
{
    return cleanup_keep_stoppable(thing, free_fn, NULL);
}

void cleanup_now(void *thing)
{
    struct kept found = {0};
    if (!thing)
        return;
    pthread_mutex_lock(&mutex);
    for (size_t i = n_kept; i-- > 0;) {
        if (kept[i].thing != thing)
            continue;
        found = kept[i];
        for (; i + 1 < n_kept; i++)
            kept[i] = kept[i + 1];
        n_kept--;
        break;
    }
    pthread_mutex_unlock(&mutex);
    if (!found.thing) {
        fail_msg("%p was not kept for the teardown", thing);
        return; /* cmocka fails return, as far as the analyser knows */
    }
    found.free_fn(found.thing);
}

void *cleanup_alloc(size_t size)
{
    void *p = calloc(1, size);
    if (!p)
        fail_msg("out of memory");
    return cleanup_keep(p, free);
}

bool cleanup_stopping(void)
{
    return atomic_load(&stopping);
}

/* The last kept thing, taken off the list; 0 if there is none. */
static int pop(struct kept *out)
{
    int popped;
    pthread_mutex_lock(&mutex);
    popped = n_kept > 0;
    if (popped)
        *out = kept[--n_kept];
    pthread_mutex_unlock(&mutex);
    return popped;
}

void cleanup_run(void)
{
    struct kept k;
    atomic_store(&stopping, true);
    pthread_mutex_lock(&mutex);
    for (size_t i = n_kept; i-- > 0;)
        if (kept[i].stop_fn)
            kept[i].stop_fn(kept[i].thing); /* cancels only: nothing is kept meanwhile */
    pthread_mutex_unlock(&mutex);
    while (pop(&k))
        k.free_fn(k.thing);
    atomic_store(&stopping, false);
}

int cleanup_teardown(void **state)
{
    (void)state;
    cleanup_run();
    return 0;
}
