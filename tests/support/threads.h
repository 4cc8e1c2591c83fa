/* The threads of a test. start_thread() runs fn on a kept copy of the
 * `size` bytes at `arg` (not the test's stack, which a failed assertion
 * leaves behind while the thread may still run) and returns that copy:
 * the thread records what it saw there, and the test reads it after
 * join_thread(). A thread the test did not join (an assertion failed
 * first) is joined at teardown, after every kept client was cancelled, so
 * a waiting acquire returns; a thread that waits for the test checks
 * cleanup_stopping(). A thread does not assert: cmocka's failures belong
 * to the test's own thread. */
#ifndef TEST_THREADS_H
#define TEST_THREADS_H

#include <stddef.h>

/* Starts fn(copy) and returns the copy; fails the test if it cannot. */
void *start_thread(void *(*fn)(void *), const void *arg, size_t size);

/* Waits for the thread of `copy`, which stays readable until teardown. */
void join_thread(void *copy);

#endif
