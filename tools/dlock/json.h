/* JSON strings that are always UTF-8, whatever bytes a name holds. */
#ifndef DLOCK_CLI_JSON_H
#define DLOCK_CLI_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Writes `s` as a JSON string (with quotes) to stdout: valid UTF-8 as it
 * is, control characters escaped, and each byte that is not part of valid
 * UTF-8 as \ufffd (the replacement character), so the output is UTF-8. */
void cli_print_json_string(const char *s);

/* The same, to `f`. */
void cli_write_json_string(FILE *f, const char *s);

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0. */
size_t cli_utf8_length(const unsigned char *s);

#endif
