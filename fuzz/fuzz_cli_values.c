/* The command's value parsers (durations for -t/-w/--kill-after/--max-hold,
 * exit codes for -E): no crash on any text; an accepted duration is within
 * bounds and reads back the same when written in milliseconds; an accepted
 * exit code is 0..255 and written back unchanged. */
#include "cli.h"

#include <assert.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1), again[32];
    int64_t ms, ms2;
    int code;
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    if (cli_parse_duration_ms(s, &ms) == 0) {
        assert(ms >= 0);
        snprintf(again, sizeof(again), "%" PRId64 "ms", ms);
        assert(cli_parse_duration_ms(again, &ms2) == 0 && ms2 == ms);
    }
    if (cli_parse_exit_code(s, &code) == 0) {
        assert(code >= 0 && code <= 255);
        snprintf(again, sizeof(again), "%d", code);
        assert(strtol(s, NULL, 10) == code);
    }
    free(s);
    return 0;
}
