/* The threads of a test. See threads.h. */
#include "threads.h"

#include "cleanup.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The thread and the copy it works on, in one allocation. */
struct thread_block {
    pthread_t id;
    bool joined;
    alignas(max_align_t) unsigned char copy[];
};

static struct thread_block *block_of(void *copy)
{
    return (struct thread_block *)((unsigned char *)copy - offsetof(struct thread_block, copy));
}

static void join_and_free(void *copy)
{
    struct thread_block *b = block_of(copy);
    if (!b->joined)
        pthread_join(b->id, NULL);
    free(b);
}

void *start_thread(void *(*fn)(void *), const void *arg, size_t size)
{
    struct thread_block *b = calloc(1, sizeof(*b) + size);
    int rc;
    assert_non_null(b);
    memcpy(b->copy, arg, size);
    rc = pthread_create(&b->id, NULL, fn, b->copy);
    if (rc != 0) {
        free(b);
        fail_msg("pthread_create: error %d", rc);
    }
    return cleanup_keep(b->copy, join_and_free);
}

void join_thread(void *copy)
{
    struct thread_block *b = block_of(copy);
    if (!b->joined)
        assert_int_equal(pthread_join(b->id, NULL), 0);
    b->joined = true;
}
