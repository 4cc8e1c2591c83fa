/* Endpoint URLs: redis://[[user]:password@]host[:port][/db], rediss://...
 * (TLS), unix:///path[?db=N] and
 * redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]#name
 * (rediss-sentinel:// with TLS; sentinels listen on 26379 by default). Strict: anything we do not understand is refused,
 * because a silently ignored part of a URL is a lock on the wrong server. */
#include "url.h"

#include "wipe.h"

#include "dlock.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#define DB_DIGITS_MAX 9
#define PORT_DIGITS_MAX 5

static int fail(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return DLOCK_EINVAL;
}

static char *dup_range(const char *s, size_t len)
{
    char *d = len < SIZE_MAX ? malloc(len + 1) : NULL; /* len + 1 must not wrap */
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes the %XX escapes of s[0..len) into *out. Returns DLOCK_EINVAL on a
 * malformed escape or an escaped NUL. */
static int percent_decode(char **out, const char *s, size_t len)
{
    char *d;
    size_t j = 0;
    if (len > DLOCK__URL_MAX)
        return DLOCK_EINVAL;
    d = malloc(len + 1);
    if (!d)
        return DLOCK_ENOMEM;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '%') {
            d[j++] = s[i];
            continue;
        }
        int hi = i + 2 < len ? hex_value(s[i + 1]) : -1;
        int lo = i + 2 < len ? hex_value(s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi | lo) == 0) {
            dlock__wipe(d, len + 1);
            free(d);
            return DLOCK_EINVAL;
        }
        d[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    d[j] = '\0';
    *out = d;
    return 0;
}

/* Parses 1..max_digits decimal digits s[0..len) into *value. */
static int parse_digits(const char *s, size_t len, size_t max_digits, long *value)
{
    long v = 0;
    if (len == 0 || len > max_digits)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *value = v;
    return 0;
}

static int parse_db(dlock__endpoint *ep, const char *s, size_t len, char *why, size_t why_len)
{
    long db;
    if (parse_digits(s, len, DB_DIGITS_MAX, &db) < 0)
        return fail(why, why_len, "database must be a number from 0 to 999999999");
    ep->db = (int)db;
    return 0;
}

/* userinfo is "user:password" or ":password"; both parts percent-decoded. */
static int parse_userinfo(dlock__endpoint *ep, const char *s, size_t len, char *why,
                          size_t why_len)
{
    const char *colon = memchr(s, ':', len);
    size_t user_len;
    int rc;
    if (!colon)
        return fail(why, why_len, "credentials must be user:password or :password");
    user_len = (size_t)(colon - s);
    if (colon + 1 == s + len)
        return fail(why, why_len, "empty password in URL");
    if (user_len > 0) {
        rc = percent_decode(&ep->user, s, user_len);
        if (rc < 0)
            return rc == DLOCK_ENOMEM ? rc : fail(why, why_len, "bad %%-escape in user name");
    }
    rc = percent_decode(&ep->password, colon + 1, len - user_len - 1);
    if (rc < 0)
        return rc == DLOCK_ENOMEM ? rc : fail(why, why_len, "bad %%-escape in password");
    return 0;
}

static int valid_host_name(const char *s, size_t len)
{
    if (len == 0 || len > 253)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-._", s[i]))
            return 0;
    return 1;
}

/* host[:port] or [v6][:port] */
static int parse_hostport(dlock__endpoint *ep, const char *s, size_t len, char *why,
                          size_t why_len)
{
    const char *host = s, *port = NULL;
    size_t host_len = len, port_len = 0;
    long port_num;

    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        char v6[INET6_ADDRSTRLEN];
        unsigned char addr[sizeof(struct in6_addr)];
        if (!close)
            return fail(why, why_len, "IPv6 address without closing ']'");
        host = s + 1;
        host_len = (size_t)(close - host);
        if (host_len == 0 || host_len >= sizeof(v6))
            return fail(why, why_len, "bad IPv6 address");
        memcpy(v6, host, host_len);
        v6[host_len] = '\0';
        if (inet_pton(AF_INET6, v6, addr) != 1)
            return fail(why, why_len, "bad IPv6 address");
        if (close + 1 < s + len) {
            if (close[1] != ':')
                return fail(why, why_len, "unexpected text after IPv6 address");
            port = close + 2;
            port_len = (size_t)(s + len - port);
        }
    } else {
        const char *colon = memchr(s, ':', len);
        if (colon) {
            host_len = (size_t)(colon - s);
            port = colon + 1;
            port_len = len - host_len - 1;
        }
        if (!valid_host_name(host, host_len))
            return fail(why, why_len, "missing or bad host name");
    }
    if (port) {
        if (parse_digits(port, port_len, PORT_DIGITS_MAX, &port_num) < 0 || port_num < 1 ||
            port_num > 65535)
            return fail(why, why_len, "port must be a number from 1 to 65535");
        snprintf(ep->port, sizeof(ep->port), "%ld", port_num);
    }
    ep->host = dup_range(host, host_len);
    return ep->host ? 0 : DLOCK_ENOMEM;
}

static int parse_db_path(dlock__endpoint *ep, const char *after, char *why, size_t why_len)
{
    if (*after == '\0' || strcmp(after, "/") == 0)
        return 0;
    if (*after != '/')
        return fail(why, why_len, "query strings and fragments are not supported");
    return parse_db(ep, after + 1, strlen(after + 1), why, why_len);
}

static int parse_tcp(dlock__endpoint *ep, const char *rest, char *why, size_t why_len)
{
    size_t auth_len = strcspn(rest, "/?#");
    const char *after = rest + auth_len;
    const char *at = NULL;
    int rc;

    for (const char *p = rest; p < after; p++)
        if (*p == '@')
            at = p;
    if (at) {
        rc = parse_userinfo(ep, rest, (size_t)(at - rest), why, why_len);
        if (rc < 0)
            return rc;
        rest = at + 1;
        auth_len = (size_t)(after - rest);
    }
    rc = parse_hostport(ep, rest, auth_len, why, why_len);
    if (rc < 0)
        return rc;
    return parse_db_path(ep, after, why, why_len);
}

/* "host[:port],host[:port]...": each one checked, the first kept in *ep,
 * the list as written in ep->sentinels. */
static int parse_sentinel_hosts(dlock__endpoint *ep, const char *s, size_t len, char *why,
                                size_t why_len)
{
    for (size_t at = 0; at <= len;) {
        size_t item = strcspn(s + at, ",");
        dlock__endpoint check = {.port = "26379"};
        int rc;
        item = item < len - at ? item : len - at;
        rc = parse_hostport(at == 0 ? ep : &check, s + at, item, why, why_len);
        free(check.host);
        if (rc < 0)
            return rc;
        at += item + 1;
    }
    ep->sentinels = dup_range(s, len);
    return ep->sentinels ? 0 : DLOCK_ENOMEM;
}

static int parse_sentinel(dlock__endpoint *ep, const char *rest, char *why, size_t why_len)
{
    const char *hash = strchr(rest, '#');
    char *body;
    size_t auth_len;
    const char *at;
    int rc;

    if (!hash || !valid_host_name(hash + 1, strlen(hash + 1)))
        return fail(why, why_len, "a sentinel URL ends with #name, the primary's name "
                    "(letters, digits, '-', '.', '_')");
    ep->service = strdup(hash + 1);
    body = dup_range(rest, (size_t)(hash - rest));
    if (!ep->service || !body) {
        free(body);
        return DLOCK_ENOMEM;
    }
    memcpy(ep->port, "26379", 6);
    auth_len = strcspn(body, "/?");
    at = memchr(body, '@', auth_len);
    rc = at ? parse_userinfo(ep, body, (size_t)(at - body), why, why_len) : 0;
    if (at) {
        auth_len -= (size_t)(at + 1 - body);
        at++;
    } else {
        at = body;
    }
    if (rc == 0)
        rc = parse_sentinel_hosts(ep, at, auth_len, why, why_len);
    if (rc == 0)
        rc = parse_db_path(ep, at + auth_len, why, why_len);
    dlock__wipe(body, strlen(body));
    free(body);
    return rc;
}

static int parse_unix(dlock__endpoint *ep, const char *rest, char *why, size_t why_len)
{
    size_t path_len = strcspn(rest, "?#");
    const char *query = rest + path_len;

    if (rest[0] != '/')
        return fail(why, why_len, "unix socket URL must be unix:///absolute/path");
    if (path_len >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
        return fail(why, why_len, "unix socket path too long");
    if (*query == '#' || (*query == '?' && strncmp(query, "?db=", 4) != 0))
        return fail(why, why_len, "the only query a unix socket URL takes is ?db=N");
    if (*query == '?') {
        int rc = parse_db(ep, query + 4, strlen(query + 4), why, why_len);
        if (rc < 0)
            return rc;
    }
    ep->path = dup_range(rest, path_len);
    return ep->path ? 0 : DLOCK_ENOMEM;
}

static int make_label(dlock__endpoint *ep)
{
    size_t len;
    if (ep->transport == DLOCK__UNIX) {
        ep->label = strdup(ep->path);
        return ep->label ? 0 : DLOCK_ENOMEM;
    }
    if (ep->service) {
        len = strlen(ep->service) + strlen(ep->sentinels) + 2;
        ep->label = malloc(len);
        if (ep->label)
            snprintf(ep->label, len, "%s@%s", ep->service, ep->sentinels);
        return ep->label ? 0 : DLOCK_ENOMEM;
    }
    len = strlen(ep->host) + sizeof(ep->port) + 4;
    ep->label = malloc(len);
    if (!ep->label)
        return DLOCK_ENOMEM;
    snprintf(ep->label, len, strchr(ep->host, ':') ? "[%s]:%s" : "%s:%s", ep->host, ep->port);
    return 0;
}

static int has_only_printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
            return 0;
    return 1;
}

int dlock__url_parse(dlock__endpoint *ep, const char *url, char *why, size_t why_len)
{
    int rc;
    memset(ep, 0, sizeof(*ep));
    memcpy(ep->port, "6379", 5);
    if (!url || !*url)
        return fail(why, why_len, "empty URL");
    if (strlen(url) > DLOCK__URL_MAX)
        return fail(why, why_len, "URL longer than %d bytes", DLOCK__URL_MAX);
    if (!has_only_printable(url))
        return fail(why, why_len, "URL contains spaces or control characters");
    if (strncasecmp(url, "redis://", 8) == 0) {
        ep->transport = DLOCK__TCP;
        rc = parse_tcp(ep, url + 8, why, why_len);
    } else if (strncasecmp(url, "unix://", 7) == 0) {
        ep->transport = DLOCK__UNIX;
        rc = parse_unix(ep, url + 7, why, why_len);
    } else if (strncasecmp(url, "rediss://", 9) == 0) {
        ep->transport = DLOCK__TCP;
        ep->tls = 1;
        rc = parse_tcp(ep, url + 9, why, why_len);
    } else if (strncasecmp(url, "redis-sentinel://", 17) == 0) {
        ep->transport = DLOCK__TCP;
        rc = parse_sentinel(ep, url + 17, why, why_len);
    } else if (strncasecmp(url, "rediss-sentinel://", 18) == 0) {
        ep->transport = DLOCK__TCP;
        ep->tls = 1;
        rc = parse_sentinel(ep, url + 18, why, why_len);
    } else {
        rc = fail(why, why_len, "URL must start with redis://, rediss://, unix:// or "
                  "redis-sentinel://");
    }
    if (rc == 0)
        rc = make_label(ep);
    if (rc == DLOCK_ENOMEM)
        snprintf(why, why_len, "out of memory");
    if (rc < 0)
        dlock__endpoint_clear(ep);
    return rc;
}

static int copy_secret(char **out, const char *s)
{
    if (s && !(*out = strdup(s)))
        return DLOCK_ENOMEM;
    return 0;
}

int dlock__endpoint_derive(dlock__endpoint *out, const dlock__endpoint *from, const char *host,
                           const char *port, bool credentials)
{
    int rc = 0;
    memset(out, 0, sizeof(*out));
    out->transport = DLOCK__TCP;
    out->tls = from->tls;
    out->db = from->db;
    snprintf(out->port, sizeof(out->port), "%s", port);
    out->host = strdup(host);
    if (!out->host)
        rc = DLOCK_ENOMEM;
    if (rc == 0 && credentials)
        rc = copy_secret(&out->user, from->user);
    if (rc == 0 && credentials)
        rc = copy_secret(&out->password, from->password);
    if (rc == 0)
        rc = make_label(out);
    if (rc < 0)
        dlock__endpoint_clear(out);
    return rc;
}

static void free_secret(char *s)
{
    if (s) {
        dlock__wipe(s, strlen(s));
        free(s);
    }
}

void dlock__endpoint_clear(dlock__endpoint *ep)
{
    free(ep->host);
    free(ep->path);
    free(ep->label);
    free(ep->service);
    free(ep->sentinels);
    free_secret(ep->user);
    free_secret(ep->password);
    memset(ep, 0, sizeof(*ep));
}
