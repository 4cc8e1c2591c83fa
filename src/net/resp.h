/* The RESP2 codec: hiredis' formatter and reader behind our own types, with
 * limits so that a broken or hostile server cannot make us allocate much. */
#ifndef DLOCK_RESP_H
#define DLOCK_RESP_H

#include <stddef.h>

#define DLOCK__REPLY_ARRAY_MAX 64          /* elements in one array */
#define DLOCK__REPLY_BYTES_MAX (1u << 20)  /* unparsed bytes buffered */

enum dlock__reply_type {
    DLOCK__REPLY_STRING,  /* bulk string */
    DLOCK__REPLY_STATUS,  /* +OK */
    DLOCK__REPLY_ERROR,   /* -ERR ... */
    DLOCK__REPLY_INTEGER,
    DLOCK__REPLY_NIL,
    DLOCK__REPLY_ARRAY,
};

typedef struct dlock__reply {
    enum dlock__reply_type type;
    long long integer;
    char *str; /* STRING, STATUS, ERROR: NUL-terminated, `len` bytes */
    size_t len;
    struct dlock__reply **element; /* ARRAY */
    size_t elements;
} dlock__reply;

typedef struct dlock__reader dlock__reader;

dlock__reader *dlock__reader_new(void);
void dlock__reader_free(dlock__reader *r);

/* Feeds received bytes. Returns 0 or DLOCK_EPROTO (too much unparsed data). */
int dlock__reader_feed(dlock__reader *r, const char *buf, size_t len);

/* Returns 1 and a reply in *out (caller frees with dlock__reply_free), 0 when
 * more bytes are needed, DLOCK_EPROTO on malformed input (the reader is then
 * unusable). */
int dlock__reader_next(dlock__reader *r, dlock__reply **out);

/* What the reader found wrong, e.g. 'Protocol error, got "H" as reply type
 * byte' (the byte shown escaped); "" when nothing is, or the reply was
 * refused for its size. */
const char *dlock__reader_error(const dlock__reader *r);

void dlock__reply_free(dlock__reply *reply);

/* Encodes a command as RESP. Returns its length and the buffer in *out
 * (free with dlock__command_free), DLOCK_EINVAL or DLOCK_ENOMEM. */
long long dlock__command_format(char **out, int argc, const char **argv, const size_t *argvlen);
void dlock__command_free(char *cmd);

#endif
