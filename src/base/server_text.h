/* A server's error text as a message may quote it: without what Redis adds
 * about the script that failed (its SHA1, its Lua line), which says nothing
 * to a user and differs from one build of dlock to the next. */
#ifndef DLOCK_SERVER_TEXT_H
#define DLOCK_SERVER_TEXT_H

#include <stddef.h>

/* Removes, in place, a script's internals from the NUL-terminated error
 * text `s` (Redis 7: " script: SHA1, on @user_script:N.", "user_script:N: ";
 * Redis 6: "Error running script (call to f_SHA1): @user_script:N: ").
 * Returns the new length. */
size_t dlock__server_text_clean(char *s);

#endif
