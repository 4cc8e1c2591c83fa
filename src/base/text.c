/* snprintf-style text and Prometheus label values. See text.h. */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void dlock__text_init(dlock__text *t, char *buf, size_t len)
{
    t->buf = buf;
    t->len = len;
    t->needed = 0;
    if (len)
        buf[0] = '\0';
}

/* Appends n bytes of s, as much of them as fits. */
static void append(dlock__text *t, const char *s, size_t n)
{
    if (t->needed + 1 < t->len) {
        size_t room = t->len - 1 - t->needed, k = n < room ? n : room;
        memcpy(t->buf + t->needed, s, k);
        t->buf[t->needed + k] = '\0';
    }
    t->needed += n;
}

void dlock__text_printf(dlock__text *t, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(small)) {
        append(t, small, (size_t)n);
        return;
    }
    /* Longer than a line of ours ever is: written in place, counted all the same. */
    va_start(ap, fmt);
    if (t->needed + 1 < t->len)
        vsnprintf(t->buf + t->needed, t->len - t->needed, fmt, ap);
    va_end(ap);
    t->needed += (size_t)n;
}

void dlock__text_label_value(dlock__text *t, const char *s)
{
    for (; *s; s++) {
        size_t plain = strcspn(s, "\\\"\n");
        append(t, s, plain);
        s += plain;
        if (!*s)
            break;
        append(t, *s == '\n' ? "\\n" : *s == '"' ? "\\\"" : "\\\\", 2);
    }
}

/* The length of the valid UTF-8 sequence at s, or 0. */
static size_t sequence_length(const unsigned char *s)
{
    /* the second byte's range is narrower after E0, ED, F0 and F4 */
    unsigned char lo = s[0] == 0xe0 ? 0xa0 : s[0] == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = s[0] == 0xed ? 0x9f : s[0] == 0xf4 ? 0x8f : 0xbf;
    size_t len = s[0] < 0x80 ? 1 : s[0] < 0xc2 ? 0 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3
                 : s[0] < 0xf5 ? 4 : 0;
    if (len > 1 && (s[1] < lo || s[1] > hi))
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

bool dlock__utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t len = sequence_length(p);
        if (len == 0)
            return false;
        p += len;
    }
    return true;
}
