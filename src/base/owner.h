/* The owner record: who holds a lock, as JSON in the name's owner key
 * ({"host":...,"pid":...,"since":...,"token":...}). Written and read here
 * only; `status` and `list` show it, the token ties it to the holder. */
#ifndef DLOCK_OWNER_H
#define DLOCK_OWNER_H

#include <stddef.h>
#include <stdint.h>

#define DLOCK__HOST_MAX 256
#define DLOCK__OWNER_RECORD_MAX (DLOCK__HOST_MAX * 6 + 160)

typedef struct dlock__owner {
    char host[DLOCK__HOST_MAX];
    long pid;
    int64_t since_ms; /* ms since the Unix epoch */
} dlock__owner;

/* Writes the record of `token`, taken now by `host`/`pid`, into `out`
 * (DLOCK__OWNER_RECORD_MAX bytes are always enough). */
void dlock__owner_format(char *out, size_t out_len, const char *host, long pid,
                         const char *token);

/* Reads a record written by dlock__owner_format(). Returns 0, or -1 when
 * it is not one (then *out is untouched). */
int dlock__owner_parse(dlock__owner *out, const char *record);

#endif
