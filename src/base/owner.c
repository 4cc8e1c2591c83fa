/* See owner.h. */
#include "owner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* JSON string contents: quote, backslash and control characters escaped;
 * other bytes (UTF-8) as they are. */
static void json_escape(char *out, size_t out_len, const char *s)
{
    size_t j = 0;
    for (; *s && j + 7 < out_len; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            j += (size_t)snprintf(out + j, out_len - j, "\\%c", ch);
        else if (ch < 0x20)
            j += (size_t)snprintf(out + j, out_len - j, "\\u%04x", ch);
        else
            out[j++] = (char)ch;
    }
    out[j] = '\0';
}

void dlock__owner_format(char *out, size_t out_len, const char *host, long pid,
                         const char *token)
{
    char escaped[DLOCK__HOST_MAX * 6];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    json_escape(escaped, sizeof(escaped), host);
    snprintf(out, out_len, "{\"host\":\"%s\",\"pid\":%ld,\"since\":%lld,\"token\":\"%s\"}",
             escaped, pid, (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000, token);
}

/* The text after "field": in the record, or NULL. */
static const char *field(const char *record, const char *name)
{
    char key[32];
    const char *at;
    snprintf(key, sizeof(key), "\"%s\":", name);
    at = strstr(record, key);
    return at ? at + strlen(key) : NULL;
}

/* A JSON string's contents, unescaped: \" \\ and \u00XX (what
 * json_escape() writes). Returns the end of the string, or NULL. */
static const char *unescape(const char *s, char *out, size_t out_len)
{
    size_t j = 0;
    for (; *s && *s != '"'; s++) {
        char ch = *s;
        if (ch == '\\' && s[1] == 'u' && strlen(s) >= 6) {
            char hex[5] = {s[2], s[3], s[4], s[5], '\0'};
            ch = (char)strtol(hex, NULL, 16);
            s += 5;
        } else if (ch == '\\' && s[1]) {
            ch = *++s;
        }
        if (j + 1 < out_len)
            out[j++] = ch;
    }
    out[j] = '\0';
    return *s == '"' ? s : NULL;
}

int dlock__owner_parse(dlock__owner *out, const char *record)
{
    const char *host = field(record, "host"), *pid = field(record, "pid");
    const char *since = field(record, "since");
    dlock__owner o;
    char *end;
    if (!host || *host != '"' || !pid || !since || !unescape(host + 1, o.host, sizeof(o.host)))
        return -1;
    o.pid = strtol(pid, &end, 10);
    if (end == pid)
        return -1;
    o.since_ms = strtoll(since, &end, 10);
    if (end == since)
        return -1;
    *out = o;
    return 0;
}
