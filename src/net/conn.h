/* One connection to one Redis server: a socket used without blocking (but
 * for dlock__conn_await()) with a small state machine, driven by the
 * fan-out's poll loop. It connects on demand
 * (trying every resolved address), pipelines AUTH and SELECT in front of the
 * first command, and discards replies owed to calls that were abandoned, so
 * a late reply is never read as the answer to a newer command. */
#ifndef DLOCK_CONN_H
#define DLOCK_CONN_H

#include "resp.h"
#include "url.h"

#include <stdbool.h>
#include <stdint.h>

struct addrinfo;

enum dlock__conn_state {
    DLOCK__CONN_CLOSED,
    DLOCK__CONN_CONNECTING,    /* TCP connect in progress */
    DLOCK__CONN_TLS_HANDSHAKE, /* TLS handshake in progress */
    DLOCK__CONN_READY,
};

struct ssl_st;
struct ssl_ctx_st;
struct dlock__router;
struct dlock__book;

typedef struct dlock__conn {
    const dlock__endpoint *ep; /* borrowed from the client */
    const struct addrinfo *addrs;  /* borrowed from the client; NULL for Unix sockets */
    const struct addrinfo *trying; /* the address being connected to */
    enum dlock__conn_state state;
    int fd;
    int64_t connect_deadline_ns;
    int64_t connect_timeout_ms;
    bool back_off_reconnects;   /* one of several servers: others can do without it */
    int64_t reconnect_at_ns;    /* after a failed connect: no new one before */
    int64_t reconnect_delay_ms; /* the last back-off; 0 once a server answered */
    dlock__reader *reader;
    char *out; /* pending output */
    size_t out_len, out_sent, out_cap;
    size_t call_start;        /* offset in `out` of the current call's bytes */
    unsigned handshake_owed;  /* AUTH/SELECT replies still to come */
    unsigned identity_owed;   /* the INFO server reply still to come */
    unsigned preload_owed;    /* SCRIPT LOAD replies still to come */
    bool ask_identity;        /* send INFO server on connect, for run_id */
    char run_id[41];          /* the server's run_id, "" until known */
    bool identity_awaited;    /* a caller waited for it once on this connection */
    const char *const *preload; /* scripts to load on connect (static), or NULL */
    unsigned stale_owed;      /* replies of abandoned calls, to discard */
    bool call_sent;           /* bytes of the current call reached the socket */
    bool push_mode;           /* a subscriber: replies are pushes, none is owed */
    char err[256];            /* detail of the last failure, no secrets */
    struct ssl_ctx_st *tls_ctx; /* borrowed from the client; NULL: plain TCP */
    const char *tls_name;       /* name to send and verify; NULL: the host */
    struct ssl_st *ssl;         /* the TLS session while connected */
    short tls_wants;            /* poll() event the handshake waits for */
    bool answered;              /* a reply arrived since the connection was made */
    int64_t opened_ns;          /* when the current connection was begun */
    int64_t begun_ns;           /* when the last call began (dlock__conn_begin()) */
    int64_t recv_timeout_ms;    /* the plain socket's SO_RCVTIMEO; 0: none */
    struct dlock__node_counters *counters; /* the client's, for its stats; may be NULL */
    struct dlock__router *router; /* route.h: a cluster's or a sentinel-named primary's */
    bool learnt;                  /* route.h: dlock__route_learn() asked what it talks to */
    struct dlock__book *book;     /* book.h: the client's, for this endpoint; may be NULL */
} dlock__conn;

/* Resolves a TCP endpoint's addresses into *out (free with freeaddrinfo);
 * NULL for a Unix socket. Returns 0, DLOCK_ECONN or DLOCK_ENOMEM, with the
 * reason in `why`. Host names are resolved once, when a client opens. */
int dlock__resolve(const dlock__endpoint *ep, struct addrinfo **out, char *why, size_t why_len);

/* Prepares a closed connection; `addrs` is borrowed. Returns 0 or
 * DLOCK_ENOMEM. */
int dlock__conn_init(dlock__conn *c, const dlock__endpoint *ep, const struct addrinfo *addrs,
                     int64_t connect_timeout_ms);
void dlock__conn_destroy(dlock__conn *c);
void dlock__conn_close(dlock__conn *c);

/* Starts a call: makes sure a connection exists or is being made, and
 * queues `cmd`. Returns 0 or a negative code (c->err says why). With
 * back_off_reconnects, a server that refused a connect (or did not answer
 * one in time) is not tried again for a back-off of 100 ms, doubling up to
 * 1 s: DLOCK_ECONN at once. */
int dlock__conn_begin(dlock__conn *c, const char *cmd, size_t len, int64_t now_ns);

/* Adds `cmd` to the call begun last (pipelining: its reply comes after
 * theirs). Returns 0 or a negative code. */
int dlock__conn_queue(dlock__conn *c, const char *cmd, size_t len);

/* Writes what the socket takes of the queued commands now, if connected
 * (most of the time all of it: one poll() saved); poll() for
 * dlock__conn_events() and dlock__conn_progress() send the rest. Returns 0
 * or a negative code. */
int dlock__conn_send(dlock__conn *c);

/* The poll() events the connection waits for. */
short dlock__conn_events(const dlock__conn *c);

/* Makes progress after poll() reported `revents` (0: only hand out replies
 * already received). Returns 1 with the call's reply in *reply (the caller
 * frees it), 0 when nothing is complete yet, or a negative code; on failure
 * the connection is closed. */
int dlock__conn_progress(dlock__conn *c, short revents, dlock__reply **reply);

/* Waits for the reply to a call in recv() itself, until shortly before
 * `deadline_ns`, where this one connection is all the caller waits for: a
 * poll() and then a recv() are two system calls per reply, this is one.
 * Only on a plain connection that is set up and has sent all it had.
 * Returns 1 when bytes came in (dlock__conn_progress() with no events hands
 * out the replies they complete), 0 when it did not wait so or nothing came
 * (poll() for the rest), or a negative code (the connection is closed). */
int dlock__conn_await(dlock__conn *c, int64_t deadline_ns);

/* For a connection begun at `since_ns` or later (by the current call):
 * true once everything queued is out on the socket and the server answered
 * the connection's setup (AUTH, INFO, SCRIPT LOAD), so it read what came
 * before the call. Until then a close may lose the call: a process that
 * exits with replies unread resets the connection, and the server drops
 * what it has not read yet. True for an older connection (what it did not
 * take yet, a paused server's full buffers, is not waited for) and a
 * closed one (nothing more will go). */
bool dlock__conn_delivered(const dlock__conn *c, int64_t since_ns);

/* 1 while the connection is up and the server's INFO reply (run_id) is
 * still to come. */
bool dlock__conn_identity_pending(const dlock__conn *c);

/* The end of the connection's setup (TCP connect, TLS, AUTH/SELECT: the
 * connect timeout from its opening) while it is not over, else INT64_MAX. */
int64_t dlock__conn_setup_deadline(const dlock__conn *c);

/* A setup not over by its deadline (at `now_ns`): closes the connection,
 * which says why, and returns true. */
bool dlock__conn_setup_expired(dlock__conn *c, int64_t now_ns);

/* The current call's deadline passed with `owed` of its replies still to
 * come: they are discarded when they arrive. A connection that owes too
 * many (or could not take the whole call) is closed; with
 * back_off_reconnects, one that never answered is not rebuilt before the
 * back-off passed. */
void dlock__conn_abandon(dlock__conn *c, unsigned owed);

#endif
