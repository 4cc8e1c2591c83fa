/* What a test takes, given back at its teardown whether it passed or an
 * assertion failed: cmocka leaves a failing test by longjmp, past the frees
 * at its end, but still runs the test's teardown. Helpers keep what they
 * hand out (clients, locks, servers, processes, threads); a test frees
 * nothing by hand, and what is kept must not live on the test's stack
 * (gone once the test was left), so the helpers allocate it.
 *
 * cleanup_run() first stops what may still run (a kept client's waiting
 * call is cancelled, cleanup_stopping() turns true for the test's threads),
 * then gives everything back, the last kept first: a lock before its
 * client, a thread before the client it uses. Every test's teardown runs it:
 * cleanup_teardown, or a teardown of the test's own that calls it. */
#ifndef TEST_CLEANUP_H
#define TEST_CLEANUP_H

#include <stdbool.h>
#include <stddef.h>

/* Keeps `thing` until teardown, where free_fn(thing) gives it back; stop_fn,
 * if not NULL, runs on it before anything is given back. Returns thing;
 * NULL is not kept. Safe from any thread. */
void *cleanup_keep_stoppable(void *thing, void (*free_fn)(void *), void (*stop_fn)(void *));
void *cleanup_keep(void *thing, void (*free_fn)(void *));

/* Gives back the kept `thing` now, as teardown would (NULL is ignored; a
 * thing that is not kept fails the test). A client goes only once none of
 * its locks is kept. */
void cleanup_now(void *thing);

/* calloc(1, size), kept: for what the test and its threads share. */
void *cleanup_alloc(size_t size);

/* True while teardown stops the test: a thread that waits for the test to
 * tell it something gives up then. */
bool cleanup_stopping(void);

/* Stops and gives back everything kept, the last kept first. */
void cleanup_run(void);

/* The cmocka teardown that runs cleanup_run(). */
int cleanup_teardown(void **state);

#endif
