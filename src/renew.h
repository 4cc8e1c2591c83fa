/* The renewal thread: one per client, started with the first auto-renewed
 * lock, extending each at ttl/3 on connections of its own. */
#ifndef DLOCK_RENEW_H
#define DLOCK_RENEW_H

#include "lock.h"

/* Adds a freshly acquired lock to the renewal set, starting the thread if
 * needed. Returns 0, DLOCK_ENOMEM or DLOCK_ESYSTEM. */
int dlock__renew_add(dlock_lock *lock);

/* Takes the lock out of the renewal set and waits for an extend of it that
 * is in flight. No-op for a lock that is not renewed. */
void dlock__renew_remove(dlock_lock *lock);

/* Stops and joins the thread (at client close). */
void dlock__renew_stop(dlock_client *c);

#endif
