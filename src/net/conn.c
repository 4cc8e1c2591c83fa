/* One connection to one Redis server. See conn.h. */
#include "conn.h"

#include "clock.h"
#include "dlock.h"
#include "tls.h"
#include "wipe.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define OUT_INITIAL_CAP 4096
#define READ_CHUNK 16384
#define STALE_MAX 16 /* past this many unanswered calls, start afresh */
/* After a failed connect, the next try waits this long, doubling up to the
 * cap: a dead server costs later calls nothing, not a connect each. */
#define RECONNECT_FIRST_MS 100
#define RECONNECT_MAX_MS 1000
/* A connection whose last call began less than this long ago is taken to be
 * up: a look for a close before each call (refresh_idle()) would cost a
 * system call per request, for a close that could come just after it as
 * well. */
#define FRESH_MS 5
/* dlock__conn_await() leaves the last of a deadline to poll(), which keeps
 * it to the ms: a receive timeout ends on a tick of the kernel's timer
 * wheel, up to an eighth of it late. */
#define AWAIT_MARGIN_MS 10


static int fail(dlock__conn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int flush_output(dlock__conn *c);

static void clear_output(dlock__conn *c)
{
    /* The output may hold an AUTH command: do not leave the password behind. */
    if (c->out)
        dlock__wipe(c->out, c->out_len);
    c->out_len = c->out_sent = c->call_start = 0;
}

void dlock__conn_close(dlock__conn *c)
{
    if (c->ssl)
        dlock__tls_close(c);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->state = DLOCK__CONN_CLOSED;
    c->trying = NULL;
    c->handshake_owed = c->identity_owed = c->preload_owed = c->stale_owed = 0;
    c->run_id[0] = '\0';
    c->identity_awaited = false;
    c->answered = false;
    clear_output(c);
    dlock__reader_free(c->reader);
    c->reader = NULL;
}

/* Closes after a failure whose detail is already in c->err (close keeps it). */
static int fail_as_is(dlock__conn *c, int code)
{
    dlock__conn_close(c);
    return code;
}

static int fail(dlock__conn *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof(c->err), fmt, ap);
    va_end(ap);
    dlock__conn_close(c);
    return code;
}

int dlock__resolve(const dlock__endpoint *ep, struct addrinfo **out, char *why, size_t why_len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc;
    *out = NULL;
    if (ep->transport == DLOCK__UNIX)
        return 0;
    rc = getaddrinfo(ep->host, ep->port, &hints, out);
    if (rc != 0) {
        snprintf(why, why_len, "cannot resolve %s: %s", ep->host, gai_strerror(rc));
        return rc == EAI_MEMORY ? DLOCK_ENOMEM : DLOCK_ECONN;
    }
    return 0;
}

int dlock__conn_init(dlock__conn *c, const dlock__endpoint *ep, const struct addrinfo *addrs,
                     int64_t connect_timeout_ms)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->ep = ep;
    c->addrs = addrs;
    c->connect_timeout_ms = connect_timeout_ms;
    c->out = malloc(OUT_INITIAL_CAP);
    if (!c->out)
        return DLOCK_ENOMEM;
    c->out_cap = OUT_INITIAL_CAP;
    return 0;
}

void dlock__conn_destroy(dlock__conn *c)
{
    if (!c->out)
        return; /* never initialised (a client that failed to open): fd 0 is not ours */
    dlock__conn_close(c);
    free(c->out);
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}

static int append(dlock__conn *c, const char *bytes, size_t len)
{
    if (c->out_len + len > c->out_cap) {
        size_t cap = c->out_cap;
        char *bigger;
        while (cap < c->out_len + len)
            cap *= 2;
        /* Not realloc: the old block may hold a password to wipe first. */
        bigger = malloc(cap);
        if (!bigger)
            return DLOCK_ENOMEM;
        memcpy(bigger, c->out, c->out_len);
        dlock__wipe(c->out, c->out_cap);
        free(c->out);
        c->out = bigger;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, bytes, len);
    c->out_len += len;
    return 0;
}

static int append_command(dlock__conn *c, int argc, const char **argv)
{
    size_t lens[3];
    char *cmd;
    long long len;
    int rc;

    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    len = dlock__command_format(&cmd, argc, argv, lens);
    if (len < 0)
        return (int)len;
    rc = append(c, cmd, (size_t)len);
    dlock__wipe(cmd, (size_t)len);
    dlock__command_free(cmd);
    return rc;
}

/* AUTH (or PING) and SELECT go out in front of the first command, in one
 * write. */
static int queue_handshake(dlock__conn *c)
{
    const dlock__endpoint *ep = c->ep;
    int rc = 0;

    if (ep->password) {
        const char *auth_user[] = {"AUTH", ep->user, ep->password};
        const char *auth[] = {"AUTH", ep->password};
        rc = ep->user ? append_command(c, 3, auth_user) : append_command(c, 2, auth);
        c->handshake_owed++;
    }
    if (rc == 0 && ep->db != 0) {
        char db[16];
        const char *select[] = {"SELECT", db};
        snprintf(db, sizeof(db), "%d", ep->db);
        rc = append_command(c, 2, select);
        c->handshake_owed++;
    }
    /* Which server this is: two endpoints of one Redlock client must not be
     * one server. A user without INFO gets an error reply: ignored. */
    if (rc == 0 && c->ask_identity) {
        const char *info[] = {"INFO", "server"};
        rc = append_command(c, 2, info);
        c->identity_owed++;
    }
    /* A fresh connection may be to a restarted server with an empty script
     * cache: load the scripts up front, so that EVALSHA works at once even
     * on the nodes whose answer a quorum does not wait for. Failures are
     * ignored: the EVAL fallback still covers them. */
    for (size_t i = 0; rc == 0 && c->preload && c->preload[i]; i++) {
        const char *load[] = {"SCRIPT", "LOAD", c->preload[i]};
        rc = append_command(c, 3, load);
        c->preload_owed++;
    }
    /* Without a password, a server that wants one must say NOAUTH to a
     * short command first: to a command of more than 10 words it answers
     * only a protocol error (Redis limits what an unauthenticated client
     * may send), and closes the connection. Redlock's preload does it.
     * Its reply is read as the preload's: NOAUTH fails the connection,
     * another refusal (an ACL user without PING) is ignored. */
    if (rc == 0 && !ep->password && !c->preload) {
        const char *ping[] = {"PING"};
        rc = append_command(c, 1, ping);
        c->preload_owed++;
    }
    return rc;
}

static int make_unix_address(dlock__conn *c, struct sockaddr_un *sun)
{
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    memcpy(sun->sun_path, c->ep->path, strlen(c->ep->path) + 1);
    return AF_UNIX;
}

/* Starts connecting to `ai` (or the Unix socket when ai is NULL). Returns 1
 * when connected or in progress, 0 when this address failed at once. */
static int connect_one(dlock__conn *c, const struct addrinfo *ai)
{
    struct sockaddr_un sun;
    const struct sockaddr *addr = ai ? ai->ai_addr : (const struct sockaddr *)&sun;
    socklen_t addr_len = ai ? ai->ai_addrlen : (socklen_t)sizeof(sun);
    int family = ai ? ai->ai_family : make_unix_address(c, &sun);
    int one = 1;

    c->fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        snprintf(c->err, sizeof(c->err), "%s: socket: %s", c->ep->label, strerror(errno));
        return 0;
    }
    if (family != AF_UNIX)
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c->fd, addr, addr_len) == 0) {
        c->state = DLOCK__CONN_READY;
        return 1;
    }
    if (errno == EINPROGRESS) {
        c->state = DLOCK__CONN_CONNECTING;
        return 1;
    }
    snprintf(c->err, sizeof(c->err), "%s: connect: %s", c->ep->label, strerror(errno));
    close(c->fd);
    c->fd = -1;
    return 0;
}

/* Tries the addresses from `ai` on until one connects or is in progress. */
static int connect_from(dlock__conn *c, const struct addrinfo *ai)
{
    if (c->ep->transport == DLOCK__UNIX)
        return connect_one(c, NULL) ? 0 : DLOCK_ECONN;
    for (; ai; ai = ai->ai_next) {
        c->trying = ai;
        if (connect_one(c, ai))
            return 0;
    }
    return DLOCK_ECONN;
}

/* TCP is up: start TLS if this server wants it. */
static int after_connect(dlock__conn *c)
{
    if (!c->tls_ctx) {
        /* Blocking from now on, so that dlock__conn_await() can wait in
         * recv(); every other send and recv says MSG_DONTWAIT. (OpenSSL
         * reads and writes the socket itself: a TLS one stays
         * non-blocking.) */
        c->state = DLOCK__CONN_READY;
        c->recv_timeout_ms = 0;
        if (fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) & ~O_NONBLOCK) < 0)
            return fail(c, DLOCK_ECONN, "%s: fcntl: %s", c->ep->label, strerror(errno));
        return 0;
    }
    if (dlock__tls_open(c) < 0)
        return DLOCK_ETLS;
    c->state = DLOCK__CONN_TLS_HANDSHAKE;
    c->tls_wants = POLLOUT;
    return 0;
}

/* A connect failed (refused, timed out, no address left): no new try
 * before the back-off passed. */
static void back_off(dlock__conn *c, int64_t now_ns)
{
    int64_t delay;
    if (!c->back_off_reconnects)
        return;
    delay = c->reconnect_delay_ms ? c->reconnect_delay_ms * 2 : RECONNECT_FIRST_MS;
    c->reconnect_delay_ms = delay < RECONNECT_MAX_MS ? delay : RECONNECT_MAX_MS;
    c->reconnect_at_ns = now_ns + c->reconnect_delay_ms * DLOCK__NS_PER_MS;
}

static int open_connection(dlock__conn *c, int64_t now_ns)
{
    int rc;
    c->reader = dlock__reader_new();
    if (!c->reader)
        return fail(c, DLOCK_ENOMEM, "out of memory");
    c->opened_ns = now_ns;
    c->connect_deadline_ns = now_ns + c->connect_timeout_ms * DLOCK__NS_PER_MS;
    rc = queue_handshake(c);
    if (rc < 0)
        return fail(c, rc, "cannot encode AUTH/SELECT");
    rc = connect_from(c, c->addrs);
    if (rc == DLOCK_ECONN)
        back_off(c, now_ns);
    if (rc == 0 && c->state == DLOCK__CONN_READY)
        rc = after_connect(c); /* connected at once (Unix sockets) */
    if (rc < 0)
        return fail_as_is(c, rc);
    return 0;
}

static int read_input(dlock__conn *c, dlock__reply **reply);

/* Before a connection is used again: if its socket is readable, either
 * replies we still owe a look at arrived (read and drop them), or the server
 * closed it (a restart, an idle timeout) or sent what nobody asked for:
 * then start afresh, rather than send a command into a dead connection. */
static void refresh_idle(dlock__conn *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    dlock__reply *unexpected = NULL;
    if (c->push_mode || c->out_sent < c->out_len)
        return;
    /* Owed replies and the end of the stream may come in separate reads. */
    while (c->state == DLOCK__CONN_READY && poll(&p, 1, 0) > 0) {
        if (!c->handshake_owed && !c->identity_owed && !c->preload_owed && !c->stale_owed) {
            if (!(c->ssl && dlock__tls_idle_ok(c)))
                dlock__conn_close(c);
            return;
        }
        if (read_input(c, &unexpected) == 1) {
            dlock__reply_free(unexpected);
            dlock__conn_close(c);
        }
    }
}

int dlock__conn_begin(dlock__conn *c, const char *cmd, size_t len, int64_t now_ns)
{
    if (c->state == DLOCK__CONN_CLOSED && now_ns < c->reconnect_at_ns)
        return DLOCK_ECONN; /* c->err still says why the last connect failed */
    c->err[0] = '\0';
    if (c->state == DLOCK__CONN_READY && now_ns - c->begun_ns >= FRESH_MS * DLOCK__NS_PER_MS)
        refresh_idle(c);
    c->begun_ns = now_ns;
    if (dlock__conn_setup_expired(c, now_ns))
        return DLOCK_ECONN;
    if (c->state == DLOCK__CONN_CLOSED) {
        int rc = open_connection(c, now_ns);
        if (rc < 0)
            return rc;
    }
    if (c->out_sent == c->out_len)
        c->out_sent = c->out_len = 0;
    c->call_start = c->out_len;
    c->call_sent = false;
    return dlock__conn_queue(c, cmd, len);
}

int dlock__conn_queue(dlock__conn *c, const char *cmd, size_t len)
{
    int rc = append(c, cmd, len);
    return rc < 0 ? fail(c, rc, "out of memory") : 0;
}

int dlock__conn_send(dlock__conn *c)
{
    return c->state == DLOCK__CONN_READY ? flush_output(c) : 0;
}

short dlock__conn_events(const dlock__conn *c)
{
    switch (c->state) {
    case DLOCK__CONN_CONNECTING:
        return POLLOUT;
    case DLOCK__CONN_TLS_HANDSHAKE:
        return c->tls_wants;
    case DLOCK__CONN_READY:
        return (short)(POLLIN | (c->out_sent < c->out_len ? POLLOUT : 0));
    default:
        return 0;
    }
}

static int finish_connect(dlock__conn *c)
{
    int err = 0, rc = DLOCK_ECONN;
    socklen_t len = sizeof(err);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err == 0) {
        rc = after_connect(c);
    } else {
        snprintf(c->err, sizeof(c->err), "%s: connect: %s", c->ep->label, strerror(err));
        close(c->fd);
        c->fd = -1;
        c->state = DLOCK__CONN_CLOSED;
        /* The next address, if any. */
        if (c->trying && c->trying->ai_next && connect_from(c, c->trying->ai_next) == 0)
            rc = c->state == DLOCK__CONN_READY ? after_connect(c) : 0;
        if (rc == DLOCK_ECONN)
            back_off(c, dlock__now_ns());
    }
    if (rc < 0)
        return fail_as_is(c, rc);
    return 0;
}

/* A TLS server that refuses us after the handshake (TLS 1.3 checks the
 * client certificate then) resets the connection before its first reply. */
static bool refused_after_handshake(const dlock__conn *c)
{
    return c->ssl && !c->answered;
}

static int io_failure(dlock__conn *c, const char *what)
{
    if (c->ssl && errno == EPROTO)
        return fail_as_is(c, DLOCK_ETLS);
    if (refused_after_handshake(c))
        return fail(c, DLOCK_ETLS,
                    "%s: TLS: the server closed the connection after the handshake (%s: %s; "
                    "does it want a client certificate?)",
                    c->ep->label, what, strerror(errno));
    return fail(c, DLOCK_ECONN, "%s: %s: %s", c->ep->label, what, strerror(errno));
}

static int flush_output(dlock__conn *c)
{
    while (c->out_sent < c->out_len) {
        ssize_t n = c->ssl ? dlock__tls_send(c, c->out + c->out_sent, c->out_len - c->out_sent)
                           : send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent,
                                  MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n < 0)
            return io_failure(c, "send");
        c->out_sent += (size_t)n;
        c->call_sent |= c->out_sent > c->call_start;
    }
    return 0;
}

static int classify_handshake_error(const dlock__reply *r)
{
    /* Any refusal of AUTH is an authentication failure; SELECT of a database
     * that does not exist is a server error. */
    return strncmp(r->str, "ERR DB index", 12) == 0 ? DLOCK_ESERVER : DLOCK_EAUTH;
}

/* A server's answer to the handshake may quote what it was sent (a server
 * without AUTH says "unknown command 'AUTH', with args beginning with:
 * '<password>'"): keep the text up to any quotation of arguments, and mask
 * the password wherever it still appears. */
static void scrub_handshake_error(const dlock__conn *c, const char *text, char *out, size_t len)
{
    const char *password = c->ep->password ? c->ep->password : "";
    const char *quoted = strstr(text, ", with args beginning with");
    size_t end = quoted ? (size_t)(quoted - text) : strlen(text), n = strlen(password), j = 0;
    for (size_t i = 0; i < end && j + 5 < len;) {
        if (n > 0 && n <= end - i && memcmp(text + i, password, n) == 0) {
            memcpy(out + j, "****", 4);
            j += 4;
            i += n;
        } else {
            out[j++] = text[i++];
        }
    }
    out[j] = '\0';
}

static void take_identity(dlock__conn *c, const dlock__reply *r)
{
    const char *at = r->type == DLOCK__REPLY_STRING ? strstr(r->str, "run_id:") : NULL;
    size_t len = at ? strspn(at + 7, "0123456789abcdef") : 0;
    if (len != sizeof(c->run_id) - 1)
        return;
    memcpy(c->run_id, at + 7, len);
    c->run_id[len] = '\0';
}

/* Sorts complete replies: handshake replies are checked, stale ones are
 * dropped, the first other one answers the current call. */
static int take_replies(dlock__conn *c, dlock__reply **reply)
{
    dlock__reply *r;
    int rc;
    while ((rc = dlock__reader_next(c->reader, &r)) == 1) {
        c->answered = true;
        c->reconnect_delay_ms = 0;
        if (c->handshake_owed) {
            c->handshake_owed--;
            if (r->type == DLOCK__REPLY_ERROR) {
                int code = classify_handshake_error(r);
                char text[256];
                scrub_handshake_error(c, r->str, text, sizeof(text));
                dlock__wipe(r->str, r->len);
                rc = fail(c, code, "%s: %s", c->ep->label, text);
                dlock__reply_free(r);
                return rc;
            }
            dlock__reply_free(r);
        } else if (c->identity_owed) {
            c->identity_owed--;
            take_identity(c, r);
            dlock__reply_free(r);
        } else if (c->preload_owed) {
            c->preload_owed--;
            /* A server that wants a password refuses the preload first. Say
             * so now: a command of more than 10 words after it would only
             * get a protocol error (Redis limits what an unauthenticated
             * client may send) and the connection closed. */
            if (r->type == DLOCK__REPLY_ERROR && strncmp(r->str, "NOAUTH", 6) == 0) {
                rc = fail(c, DLOCK_EAUTH, "%s: %.200s", c->ep->label, r->str);
                dlock__reply_free(r);
                return rc;
            }
            dlock__reply_free(r);
        } else if (c->stale_owed) {
            c->stale_owed--;
            dlock__reply_free(r);
        } else {
            *reply = r;
            return 1;
        }
    }
    if (rc < 0 && *dlock__reader_error(c->reader))
        return fail(c, DLOCK_EPROTO, "%s: not a Redis reply (%s): is this a Redis server?",
                    c->ep->label, dlock__reader_error(c->reader));
    if (rc < 0)
        return fail(c, DLOCK_EPROTO, "%s: reply too large", c->ep->label);
    return 0;
}

/* What one read of the socket returned, `n` bytes of `buf` (0: the end of
 * the stream; < 0: errno says why). Returns 0 or a negative code (closed). */
static int take_input(dlock__conn *c, const char *buf, ssize_t n)
{
    if (n < 0)
        return io_failure(c, "recv");
    if (n == 0 && refused_after_handshake(c))
        return fail(c, DLOCK_ETLS,
                    "%s: TLS: the server closed the connection after the handshake "
                    "(does it want a client certificate?)",
                    c->ep->label);
    if (n == 0)
        return fail(c, DLOCK_ECONN, "%s: connection closed by the server", c->ep->label);
    if (dlock__reader_feed(c->reader, buf, (size_t)n) < 0)
        return fail(c, DLOCK_EPROTO, "%s: reply too large", c->ep->label);
    return 0;
}

static int read_input(dlock__conn *c, dlock__reply **reply)
{
    char buf[READ_CHUNK];
    ssize_t n;

    do {
        int rc;
        do
            n = c->ssl ? dlock__tls_recv(c, buf, sizeof(buf))
                       : recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        rc = take_input(c, buf, n);
        if (rc < 0)
            return rc;
        /* TLS may hold decrypted bytes that poll() cannot see: drain it. */
    } while (c->ssl);
    return take_replies(c, reply);
}

/* The receive timeout of a plain socket (SO_RCVTIMEO), from three quarters
 * of `ms` to `ms`: set again only when the one it has is longer, or
 * shorter still, and then to three quarters, so that the deadlines of a
 * wait's end, which shrink call by call, set it a few times, not each. */
static int set_recv_timeout(dlock__conn *c, int64_t ms)
{
    int64_t set = ms - ms / 4;
    struct timeval tv = {.tv_sec = (time_t)(set / 1000), .tv_usec = (suseconds_t)(set % 1000) * 1000};
    if (c->recv_timeout_ms <= ms && c->recv_timeout_ms >= set)
        return 0;
    if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
        return -1;
    c->recv_timeout_ms = set;
    return 0;
}

int dlock__conn_await(dlock__conn *c, int64_t deadline_ns)
{
    char buf[READ_CHUNK];
    int64_t ms = (dlock__ms_until(deadline_ns, dlock__now_ns()) - AWAIT_MARGIN_MS) * 7 / 8;
    ssize_t n;
    int rc;
    if (c->ssl || c->state != DLOCK__CONN_READY || c->out_sent < c->out_len ||
        dlock__conn_setup_deadline(c) != INT64_MAX || ms < AWAIT_MARGIN_MS ||
        set_recv_timeout(c, ms) < 0)
        return 0;
    n = recv(c->fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    rc = take_input(c, buf, n);
    return rc < 0 ? rc : 1;
}

static int step_handshake(dlock__conn *c)
{
    int rc = dlock__tls_handshake(c);
    if (rc < 0)
        return fail_as_is(c, rc);
    if (rc == 1)
        c->state = DLOCK__CONN_READY;
    return 0;
}

int dlock__conn_progress(dlock__conn *c, short revents, dlock__reply **reply)
{
    int rc;
    if (c->state == DLOCK__CONN_CONNECTING) {
        if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
            return 0;
        rc = finish_connect(c);
        if (rc < 0 || c->state == DLOCK__CONN_CONNECTING)
            return rc;
        revents = POLLOUT;
    }
    if (c->state == DLOCK__CONN_TLS_HANDSHAKE) {
        if (!revents)
            return 0;
        rc = step_handshake(c);
        if (rc < 0 || c->state != DLOCK__CONN_READY)
            return rc;
        revents = POLLOUT;
    }
    if (c->state != DLOCK__CONN_READY)
        return 0;
    if (revents & POLLOUT) {
        rc = flush_output(c);
        if (rc < 0)
            return rc;
    }
    /* One read can bring several pushes: hand out what is parsed first. */
    rc = take_replies(c, reply);
    if (rc != 0)
        return rc;
    if (revents & (POLLIN | POLLHUP | POLLERR))
        return read_input(c, reply);
    return 0;
}

bool dlock__conn_delivered(const dlock__conn *c, int64_t since_ns)
{
    return c->state == DLOCK__CONN_CLOSED || c->opened_ns < since_ns ||
           (c->state == DLOCK__CONN_READY && c->out_sent == c->out_len && !c->handshake_owed &&
            !c->identity_owed && !c->preload_owed);
}

int64_t dlock__conn_setup_deadline(const dlock__conn *c)
{
    bool setting_up = c->state == DLOCK__CONN_CONNECTING ||
                      c->state == DLOCK__CONN_TLS_HANDSHAKE ||
                      (c->state == DLOCK__CONN_READY && c->handshake_owed > 0);
    return setting_up ? c->connect_deadline_ns : INT64_MAX;
}

bool dlock__conn_setup_expired(dlock__conn *c, int64_t now_ns)
{
    if (now_ns < dlock__conn_setup_deadline(c))
        return false;
    snprintf(c->err, sizeof(c->err), "%s: %s: no answer within %lld ms", c->ep->label,
             c->state == DLOCK__CONN_READY ? "AUTH/SELECT" : "connect",
             (long long)c->connect_timeout_ms);
    dlock__conn_close(c);
    back_off(c, now_ns);
    return true;
}

bool dlock__conn_identity_pending(const dlock__conn *c)
{
    return c->state != DLOCK__CONN_CLOSED && c->identity_owed > 0;
}

void dlock__conn_abandon(dlock__conn *c, unsigned owed)
{
    if (c->state == DLOCK__CONN_CLOSED)
        return;
    if (c->out_sent <= c->call_start) {
        /* Not a byte of the call went out: forget it, keep the connection
         * (a connect in progress goes on and serves the next call). */
        c->out_len = c->call_start;
        return;
    }
    c->stale_owed += owed;
    if (c->out_sent < c->out_len || c->stale_owed > STALE_MAX) {
        /* Part of the call still unsent, or too far behind. A server that
         * is only slow gets a new connection at once. One that never
         * answered this connection (paused) would fill the next as fast,
         * and each costs a connect, the preload and a wait for its run_id:
         * the next one waits out the reconnect back-off, as after a refused
         * connect. */
        bool silent = !c->answered;
        snprintf(c->err, sizeof(c->err), "%s: %u replies owed: connection dropped",
                 c->ep->label, c->stale_owed);
        dlock__conn_close(c);
        if (silent)
            back_off(c, dlock__now_ns());
    }
}
