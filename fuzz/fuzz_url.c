/* The URL parser: whatever it accepts, written out again (percent-encoding
 * the user and password) parses to the same endpoint, and the printable
 * label is made of the host and port, the path, or a sentinel URL's
 * primary name and sentinels alone: never the password. */
#include "url.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t encode(char *out, size_t cap, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t j = 0;
    for (; *s && j + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            out[j++] = (char)c;
        } else {
            out[j++] = '%';
            out[j++] = hex[c >> 4];
            out[j++] = hex[c & 15];
        }
    }
    out[j] = '\0';
    return j;
}

/* The URL of an endpoint, as the parser's own grammar writes it. */
static void serialize(const dlock__endpoint *ep, char *out, size_t cap)
{
    /* A URL is at most 4096 bytes: each part at most three times that. */
    static char user[3 * 4096 + 1], password[3 * 4096 + 1], auth[6 * 4096 + 3];
    user[0] = password[0] = auth[0] = '\0';
    if (ep->user)
        encode(user, sizeof(user), ep->user);
    if (ep->password)
        encode(password, sizeof(password), ep->password);
    if (ep->user || ep->password)
        snprintf(auth, sizeof(auth), "%s%s%s@", user, ep->password ? ":" : "", password);
    if (ep->transport == DLOCK__UNIX)
        snprintf(out, cap, "unix://%s?db=%d", ep->path, ep->db);
    else if (ep->service)
        snprintf(out, cap, "%s-sentinel://%s%s/%d#%s", ep->tls ? "rediss" : "redis", auth,
                 ep->sentinels, ep->db, ep->service);
    else
        snprintf(out, cap, "%s://%s%s%s%s:%s/%d", ep->tls ? "rediss" : "redis", auth,
                 strchr(ep->host, ':') ? "[" : "", ep->host, strchr(ep->host, ':') ? "]" : "",
                 ep->port, ep->db);
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char again[8 * 4096];
    char *url = malloc(size + 1), why[256];
    dlock__endpoint ep = {0}, ep2 = {0};
    if (!url)
        return 0;
    memcpy(url, data, size);
    url[size] = '\0';
    /* Refusals are fixed texts that quote nothing of the URL (test_url). */
    if (dlock__url_parse(&ep, url, why, sizeof(why)) != 0) {
        free(url);
        return 0;
    }
    /* The label is made of the host and port (or the path, or the
     * primary's name and its sentinels) alone. */
    if (ep.transport == DLOCK__UNIX) {
        assert(strcmp(ep.label, ep.path) == 0);
    } else if (ep.service) {
        char label[4200];
        snprintf(label, sizeof(label), "%s@%s", ep.service, ep.sentinels);
        assert(strcmp(ep.label, label) == 0);
    } else {
        char label[4200];
        snprintf(label, sizeof(label), strchr(ep.host, ':') ? "[%s]:%s" : "%s:%s", ep.host,
                 ep.port);
        assert(strcmp(ep.label, label) == 0);
    }
    /* Written out again (escapes make it longer), it parses the same, if
     * it is still short enough to be taken. */
    serialize(&ep, again, sizeof(again));
    if (strlen(again) <= DLOCK__URL_MAX) {
        int rc = dlock__url_parse(&ep2, again, why, sizeof(why));
        assert(rc == 0);
        assert(ep.transport == ep2.transport && ep.tls == ep2.tls && ep.db == ep2.db);
        assert(same(ep.host, ep2.host) && same(ep.path, ep2.path) && same(ep.port, ep2.port));
        assert(same(ep.user, ep2.user) && same(ep.password, ep2.password));
        assert(same(ep.service, ep2.service) && same(ep.sentinels, ep2.sentinels));
        dlock__endpoint_clear(&ep2);
    }
    dlock__endpoint_clear(&ep);
    free(url);
    return 0;
}
