/* TLS through OpenSSL for one connection, driven by the same poll loop as
 * plain sockets. The only file that includes OpenSSL's ssl.h. */
#ifndef DLOCK_TLS_H
#define DLOCK_TLS_H

#include "dlock.h"

#include <stddef.h>
#include <sys/types.h>

struct dlock__conn;
struct ssl_ctx_st;

/* The client-wide context: CAs, client certificate, verification. Returns
 * 0, DLOCK_ETLS (a file could not be read: reason in `why`) or
 * DLOCK_ENOMEM. */
int dlock__tls_context_new(struct ssl_ctx_st **out, const dlock_client_options *o, char *why,
                           size_t why_len);
void dlock__tls_context_free(struct ssl_ctx_st *ctx);

/* Starts TLS on the connected socket c->fd. Returns 0 or DLOCK_ETLS. */
int dlock__tls_open(struct dlock__conn *c);

/* One step of the handshake: 1 done, 0 in progress (c->tls_wants says for
 * which poll() event), DLOCK_ETLS (c->err says why). */
int dlock__tls_handshake(struct dlock__conn *c);

/* Like send() and recv() on a non-blocking socket: bytes moved, 0 for end
 * of stream (recv), -1 with errno EAGAIN when it would block (c->tls_wants
 * set), -1 with errno EPROTO for a TLS failure (c->err says which), -1 with
 * another errno on failure. */
ssize_t dlock__tls_send(struct dlock__conn *c, const char *buf, size_t len);
ssize_t dlock__tls_recv(struct dlock__conn *c, char *buf, size_t len);

/* For an idle connection whose socket is readable: 1 if that was only TLS
 * housekeeping (a session ticket), 0 if the server closed it or sent data. */
int dlock__tls_idle_ok(struct dlock__conn *c);

void dlock__tls_close(struct dlock__conn *c);

#endif
