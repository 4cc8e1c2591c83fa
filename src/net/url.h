/* Endpoint URLs: redis://, rediss:// (TLS), unix://, and
 * redis-sentinel:// / rediss-sentinel:// (a primary named by sentinels). */
#ifndef DLOCK_URL_H
#define DLOCK_URL_H

/* The longest URL dlock__url_parse() takes, in bytes. */
#define DLOCK__URL_MAX 4096

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
    char *service;   /* redis-sentinel://: the primary's name (the #fragment); else NULL */
    char *sentinels; /* redis-sentinel://: "host:port[,host:port...]" as written; host and
                        port above are the first of them */
} dlock__endpoint;

/* Parses `url` into *ep (fields allocated). On failure returns DLOCK_EINVAL
 * or DLOCK_ENOMEM and writes a reason (never containing the password) to
 * `why`. */
int dlock__url_parse(dlock__endpoint *ep, const char *url, char *why, size_t why_len);

/* A TCP endpoint for host:port that inherits `from`'s TLS, database and,
 * with `credentials`, its user and password: a cluster node or a primary
 * learnt from the servers. Returns 0 or DLOCK_ENOMEM. */
int dlock__endpoint_derive(dlock__endpoint *out, const dlock__endpoint *from, const char *host,
                           const char *port, bool credentials);

/* Frees the fields of *ep, wiping the password first. */
void dlock__endpoint_clear(dlock__endpoint *ep);

#endif
