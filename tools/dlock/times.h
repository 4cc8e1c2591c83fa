/* Time: the monotonic clock, and a wall-clock time as text. */
#ifndef DLOCK_CLI_TIMES_H
#define DLOCK_CLI_TIMES_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t cli_now_ms(void);

/* A time in ms since the Unix epoch as "2026-11-29T12:34:56Z". */
void cli_format_time(int64_t ms, char *out, size_t len);

#endif
