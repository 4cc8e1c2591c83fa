/* The values options take, read from their text. */
#ifndef DLOCK_CLI_VALUES_H
#define DLOCK_CLI_VALUES_H

#include <stdint.h>

/* Durations: a bare number is seconds (fractions allowed, like flock), or a
 * number with ms, s, m or h. Returns 0 and the milliseconds, or -1. */
int cli_parse_duration_ms(const char *s, int64_t *ms);

/* An exit code 0..255 for -E. Returns 0 or -1. */
int cli_parse_exit_code(const char *s, int *code);

#endif
