/* Endpoint URLs: redis://, rediss:// (TLS), unix://. */
#ifndef DLOCK_URL_H
#define DLOCK_URL_H

#include <stdbool.h>
#include <stddef.h>

enum dlock__transport { DLOCK__TCP, DLOCK__UNIX };

typedef struct dlock__endpoint {
    enum dlock__transport transport;
    int tls;        /* rediss://, or TLS asked for every URL */
    char *host;     /* TCP: host name or address, without IPv6 brackets */
    char port[6];   /* TCP: decimal port, "6379" by default */
    char *path;     /* Unix: socket path */
    int db;         /* SELECT index, 0 by default */
    char *user;     /* NULL: the default user */
    char *password; /* NULL: no AUTH */
    char *label;    /* "host:port" or the path, for messages: no secrets */
} dlock__endpoint;

/* Parses `url` into *ep (fields allocated). On failure returns DLOCK_EINVAL
 * or DLOCK_ENOMEM and writes a reason (never containing the password) to
 * `why`. */
int dlock__url_parse(dlock__endpoint *ep, const char *url, char *why, size_t why_len);

/* Frees the fields of *ep, wiping the password first. */
void dlock__endpoint_clear(dlock__endpoint *ep);

#endif
