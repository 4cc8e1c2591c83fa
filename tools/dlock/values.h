/* The values options take, read from their text. */
#ifndef DLOCK_CLI_VALUES_H
#define DLOCK_CLI_VALUES_H

#include <stdint.h>

/* Durations: a bare number is seconds (fractions allowed, like flock), or a
 * number with ms, s, m or h. Returns 0 and the milliseconds, or -1. */
int cli_parse_duration_ms(const char *s, int64_t *ms);

/* An exit code 0..255 for -E. Returns 0 or -1. */
int cli_parse_exit_code(const char *s, int *code);

/* --permits: a decimal integer (a sign allowed, for the range's message).
 * Returns 0, or -1 if it is not one; the caller checks the range. */
int cli_parse_permits(const char *s, long long *n);

/* --replicas: 0 to DLOCK_REPLICAS_MAX, digits only. Returns 0 or -1. */
int cli_parse_replicas(const char *s, int *k);

#endif
