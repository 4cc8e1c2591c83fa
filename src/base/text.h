/* Text written into a caller's buffer the way snprintf does: whatever does
 * not fit is counted but not written, so one pass says how long the whole
 * text is. And what the Prometheus text format asks of a label value. */
#ifndef DLOCK_TEXT_H
#define DLOCK_TEXT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct dlock__text {
    char *buf;     /* may be NULL when len is 0 */
    size_t len;    /* bytes of buf, its terminating NUL included */
    size_t needed; /* bytes of the whole text so far, without the NUL */
} dlock__text;

/* An empty text into buf[0..len); buf is NUL-terminated if len > 0. */
void dlock__text_init(dlock__text *t, char *buf, size_t len);

void dlock__text_printf(dlock__text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* `s` as a Prometheus label value, quotes excluded: a backslash, a double
 * quote and a newline escaped as \\, \" and \n, every other byte as it is. */
void dlock__text_label_value(dlock__text *t, const char *s);

/* True if `s` is valid UTF-8 (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF), as a label value must be. */
bool dlock__utf8_valid(const char *s);

#endif
