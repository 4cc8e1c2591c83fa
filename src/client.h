/* The client object, shared by the modules that implement the API. */
#ifndef DLOCK_CLIENT_H
#define DLOCK_CLIENT_H

#include "conn.h"
#include "dlock.h"
#include "quorum.h"
#include "url.h"

#include <stddef.h>

#define DLOCK__ERRMSG_MAX 1024
#define DLOCK__HOST_MAX 256

struct dlock_client {
    size_t n; /* nodes */
    dlock__endpoint endpoints[DLOCK__NODES_MAX];
    dlock__conn conns[DLOCK__NODES_MAX];
    int command_timeout_ms;
    int node_timeout_ms; /* 0: derived from each call's TTL */
    int64_t fence_ttl_ms;
    double drift_factor;
    char host[DLOCK__HOST_MAX]; /* for owner records */
    char errmsg[DLOCK__ERRMSG_MAX];
};

/* Majority of the client's nodes. */
size_t dlock__quorum(const dlock_client *c);

/* Deadline of one node's reply for a call about a lock with `ttl_ms` (0 when
 * unknown): max(5 ms, ttl/20) unless set, capped by the command timeout. */
int64_t dlock__node_deadline(const dlock_client *c, int64_t ttl_ms, int64_t now_ns);

void dlock__set_error(dlock_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends "; " and the details of every failed node to the message. */
void dlock__append_node_errors(dlock_client *c, const dlock__node_result *results);

#endif
