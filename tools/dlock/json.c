/* JSON strings: UTF-8 checked byte by byte (RFC 3629). */
#include "json.h"

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0: no overlong
 * forms, no surrogates, nothing above U+10FFFF (RFC 3629). */
size_t cli_utf8_length(const unsigned char *s)
{
    /* the second byte's range, narrower after E0, ED, F0 and F4 */
    unsigned char lo = s[0] == 0xe0 ? 0xa0 : s[0] == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = s[0] == 0xed ? 0x9f : s[0] == 0xf4 ? 0x8f : 0xbf;
    size_t len;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4;
    else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

void cli_write_json_string(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    putc('"', f);
    while (*p) {
        size_t len = cli_utf8_length(p);
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else if (len == 0)
            fputs("\\ufffd", f); /* not UTF-8: the replacement character */
        else
            fwrite(p, 1, len, f);
        p += len ? len : 1;
    }
    putc('"', f);
}

void cli_print_json_string(const char *s)
{
    cli_write_json_string(stdout, s);
}
