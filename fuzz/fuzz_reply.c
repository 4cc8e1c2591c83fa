/* The reply reader fed arbitrary bytes in arbitrary chunks: no crash, no
 * leak, and no allocation beyond the limits of resp.h, whatever a length
 * prefix asks for (libFuzzer's -malloc_limit_mb stops the run otherwise).
 * The first byte picks the chunk sizes. */
#include "resp.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

/* Recursion bounded by the reader's nesting limit, asserted below. */
static void check(const dlock__reply *r, int depth) // NOLINT(misc-no-recursion)
{
    assert(depth < 64);
    if (r->type == DLOCK__REPLY_ARRAY) {
        assert(r->elements <= DLOCK__REPLY_ARRAY_MAX);
        for (size_t i = 0; i < r->elements; i++)
            check(r->element[i], depth + 1);
    } else if (r->type != DLOCK__REPLY_INTEGER && r->type != DLOCK__REPLY_NIL) {
        assert(r->str && r->str[r->len] == '\0');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dlock__reader *reader;
    size_t chunk, at = 1;
    int rc = 0;
    if (size < 1)
        return 0;
    chunk = (size_t)data[0] % 17 + 1;
    reader = dlock__reader_new();
    if (!reader)
        return 0;
    while (at < size && rc >= 0) {
        size_t n = size - at < chunk ? size - at : chunk;
        dlock__reply *reply = NULL;
        if (dlock__reader_feed(reader, (const char *)data + at, n) < 0)
            break;
        at += n;
        while ((rc = dlock__reader_next(reader, &reply)) == 1) {
            check(reply, 0);
            dlock__reply_free(reply);
        }
    }
    dlock__reader_free(reader);
    return 0;
}
