/*
 * dlock: distributed locks on Redis.
 *
 * This header is the whole public API of libdlock.
 *
 * Threads: a dlock_client, and every dlock_lock taken through it, may be used
 * by one thread at a time (like a hiredis context). Use one client per thread,
 * or serialise access yourself. Functions that are safe from any thread say
 * so. A client that holds auto-renewed locks runs one renewal thread of its
 * own, with its own connections and all signals blocked; lock-loss callbacks
 * run there. A wait's on_retry runs on the waiting thread, inside the
 * acquire. The library never prints, never exits, never installs signal
 * handlers and never raises SIGPIPE.
 *
 * Errors: functions return 0 on success or a negative DLOCK_E... code.
 * dlock_strerror() describes a code; dlock_client_errmsg() gives the detail of
 * the client's last failure (which server, what it replied, errno).
 *
 * Time: every duration is in milliseconds (suffix _ms).
 *
 * Ownership: pointers passed in are borrowed for the duration of the call
 * unless a comment says otherwise. What comes back through an `out`
 * parameter belongs to the caller and has a matching free function, which
 * accepts NULL. `*out` is written only on success.
 */
#ifndef DLOCK_H
#define DLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DLOCK_VERSION_MAJOR 0
#define DLOCK_VERSION_MINOR 3
#define DLOCK_VERSION_PATCH 0
#define DLOCK_VERSION_STRING "0.3.0"

#if defined(DLOCK_BUILDING_LIBRARY) && defined(__GNUC__)
#define DLOCK_EXTERN __attribute__((visibility("default")))
#else
#define DLOCK_EXTERN
#endif

/* The library's version string at run time, e.g. "0.1.0". Thread-safe. */
DLOCK_EXTERN const char *dlock_version(void);

/*
 * Error codes. One table: the enum, dlock_strerror() and dlock_err_name()
 * are all generated from it.
 */
#define DLOCK_ERROR_MAP(XX)                                                    \
    XX(EINVAL, -1, "invalid argument")                                         \
    XX(ENOMEM, -2, "out of memory")                                            \
    XX(EBUSY, -3, "lock is held by another owner")                             \
    XX(ETIMEDOUT, -4, "server did not answer in time")                         \
    XX(ENOTOWNER, -5, "not the owner of the lock, or the lock is gone")        \
    XX(ELOST, -6, "lock was lost")                                             \
    XX(ENOQUORUM, -7, "no majority of servers answered")                       \
    XX(ECONN, -8, "cannot connect to server, or connection broken")            \
    XX(EPROTO, -9, "protocol error: the server's reply made no sense")         \
    XX(ESERVER, -10, "server replied with an error")                           \
    XX(EAUTH, -11, "authentication or permission failure")                     \
    XX(ETLS, -12, "TLS failure")                                               \
    XX(ECANCELED, -13, "operation canceled")                                   \
    XX(EWRONGTYPE, -14, "lock key holds a value of another type")              \
    XX(ESYSTEM, -15, "system call failed")                                     \
    XX(ELIMIT, -16, "the semaphore's permits in force are another number")     \
    XX(ENOREPLICAS, -17, "too few replicas acknowledged the write")            \
    XX(EPAUSED, -18, "validity ran out while the process was not running")

typedef enum dlock_error {
    DLOCK_OK = 0,
#define DLOCK_XX_ENUM(name, value, text) DLOCK_##name = (value),
    DLOCK_ERROR_MAP(DLOCK_XX_ENUM)
#undef DLOCK_XX_ENUM
} dlock_error;

/* A static description of `code` ("unknown error" for codes not in the
 * table). Never NULL. Thread-safe. */
DLOCK_EXTERN const char *dlock_strerror(int code);

/* The code's name, e.g. "DLOCK_EBUSY" ("DLOCK_UNKNOWN" for codes not in the
 * table). Never NULL. Thread-safe. */
DLOCK_EXTERN const char *dlock_err_name(int code);

/* Limits. */
#define DLOCK_NAME_MAX 1024            /* bytes in a lock name */
/* A lock's TTL. Below the minimum nothing of the validity would be left:
 * it is ttl - elapsed - (ttl x drift + 2 ms). */
#define DLOCK_TTL_MIN_MS 10LL
#define DLOCK_TTL_MAX_MS 2147483647LL  /* about 24.8 days */
/* Every other duration (timeouts, waits, max-hold): a century at most. */
#define DLOCK_DURATION_MAX_MS 3153600000000LL
#define DLOCK_TOKEN_LEN 32             /* hex characters in an owner token */
#define DLOCK_NODES_MAX 15             /* servers of one client (Redlock) */
#define DLOCK_PERMITS_MAX 1024         /* permits of a semaphore */
#define DLOCK_LEASE_DEFAULT_MS 2000    /* a fair waiter's presence lease */
#define DLOCK_LEASE_MIN_MS 30
#define DLOCK_LEASE_MAX_MS 3600000

/* ------------------------------------------------------------------ */
/* Client                                                              */
/* ------------------------------------------------------------------ */

typedef struct dlock_client dlock_client;

#define DLOCK_CLIENT_OPTIONS_VERSION 1

/*
 * Options of a client. Initialise with DLOCK_CLIENT_OPTIONS_INIT or
 * dlock_client_options_init(), then set what you need. A zero in a numeric
 * field means "the default"; durations are at most DLOCK_DURATION_MAX_MS.
 */
typedef struct dlock_client_options {
    unsigned version; /* DLOCK_CLIENT_OPTIONS_VERSION */

    /* Server URLs, borrowed during dlock_client_open() only:
     *   redis://[[user]:password@]host[:port][/db]     (IPv6: [::1])
     *   rediss://...                                   (TLS)
     *   unix:///path/to/socket[?db=N]
     *   redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]#name
     *                    (rediss-sentinel:// with TLS; sentinels on 26379
     *                    by default; user, password and db are the primary's)
     * A redis:// URL of any node of a Redis Cluster routes each name to the
     * master of its hash slot (docs/topologies.md).
     * Percent-escapes (%40 for '@') are decoded in user and password.
     * Each URL is one endpoint. One URL: a lock on one endpoint. Three or
     * more (up to DLOCK_NODES_MAX) independent endpoints: Redlock, a lock
     * held on a majority of them.
     * Two, or the same server twice, are refused (unless `inspect` is set).
     * 0: redis://127.0.0.1:6379. */
    const char *const *urls;
    size_t n_urls;

    /* Credentials that override the URL's, or NULL. Copied at open; the
     * client wipes its copy from memory when it closes. */
    const char *user;
    const char *password;

    int64_t connect_timeout_ms; /* TCP connect + AUTH/SELECT; default 2000 */
    int64_t command_timeout_ms; /* one command; default 1000 */

    /* Deadline of one node's reply within any call about a lock (including
     * a reconnect to it); default max(5, ttl/20) with several servers,
     * max(5, ttl/4) with one, capped by command_timeout_ms. A node that
     * misses it is no vote. Once a majority answered, no call waits for
     * the others at all. */
    int64_t node_timeout_ms;

    /* Lifetime of a lock name's fencing counter, refreshed on every
     * acquisition; default one day; at most DLOCK_TTL_MAX_MS. */
    int64_t fence_ttl_ms;

    /* Clock drift allowance as a fraction of the TTL; default 0.01. The
     * validity of a lock is ttl - elapsed - (ttl * drift_factor + 2 ms). */
    double drift_factor;

    /* TLS, for rediss:// URLs, or for every URL when `tls` is nonzero (as
     * redis-cli --tls). The certificate and the host name (or IP address) of
     * every server are verified unless tls_insecure is nonzero. Paths are
     * read during dlock_client_open() only. */
    int tls;
    const char *tls_ca_file;   /* CA certificates (PEM); NULL: the system's */
    const char *tls_ca_dir;    /* a directory of hashed CA certificates */
    const char *tls_cert_file; /* client certificate (PEM), for mutual TLS */
    const char *tls_key_file;  /* its private key (PEM) */
    const char *tls_sni;       /* name to send and verify; NULL: the URL's host */
    int tls_insecure;          /* nonzero: accept any certificate (testing only) */

    /* Nonzero: a client to look at servers with (dlock_doctor()), which
     * opens whatever servers it is given: two, or one server given twice,
     * which a lock client refuses at open. A lock on such a set is refused
     * instead (DLOCK_EINVAL from dlock_lock_acquire() and dlock_lock_adopt()),
     * and dlock_doctor() reports why (SAME_NODE, TWO_SERVERS). */
    int inspect;

    /* Replica acknowledgement (see docs/durability.md): every grant and
     * extend is followed by WAIT replicas on the same connection, its
     * timeout the rest of the node's deadline. A grant that fewer replicas
     * acknowledged is no vote and is taken back; an extend they did not
     * acknowledge does not extend the validity (DLOCK_ENOREPLICAS with one
     * node). 0: no WAIT. At most DLOCK_REPLICAS_MAX. */
    int replicas;

    /* The restart rule, enforced: a node that lost its data (a restart
     * without persistence, FLUSHALL, a replica promoted) less than this
     * long ago grants nothing and is no Redlock vote: it answers as if the
     * lock were held for the rest of the delay. Set it to the longest TTL
     * in use. 0: off. */
    int64_t restart_delay_ms;

    /* How many lock names dlock_client_metrics() counts apart: the first
     * ones dlock_lock_acquire() is called with; every later name (and one that is not valid UTF-8)
     * is counted under DLOCK_METRICS_OTHER, so a client of many names
     * stays small. 0: DLOCK_METRICS_NAMES_DEFAULT; at most
     * DLOCK_METRICS_NAMES_MAX. */
    unsigned metrics_names_max;

    /* Nonzero: the audit (docs/operations.md). Every grant, extend,
     * release and loss of this client appends an entry to the name's
     * stream {T}:dlock:audit:NAME on each server, in the script call that
     * grants or ends the hold (a loss: in the renewal thread's cleanup
     * call, best effort); dlock_audit_read() judges the streams. Off, the
     * scripts get exactly the words they get without it. */
    int audit;
    /* The stream's cap (XADD MAXLEN ~): 0: DLOCK_AUDIT_MAXLEN_DEFAULT; at
     * most DLOCK_AUDIT_MAXLEN_MAX. */
    unsigned audit_maxlen;
} dlock_client_options;

#define DLOCK_REPLICAS_MAX 1000
#define DLOCK_METRICS_NAMES_DEFAULT 100
#define DLOCK_METRICS_NAMES_MAX 100000
#define DLOCK_AUDIT_MAXLEN_DEFAULT 1000
#define DLOCK_AUDIT_MAXLEN_MAX 10000000

#define DLOCK_CLIENT_OPTIONS_INIT                                                                  \
    { DLOCK_CLIENT_OPTIONS_VERSION, NULL, 0, NULL, NULL, 0, 0, 0, 0, 0.0, 0, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, 0 }

/* Fills *opts with defaults. Returns DLOCK_EINVAL for an unknown version. */
DLOCK_EXTERN int dlock_client_options_init(dlock_client_options *opts, unsigned version);

/*
 * Opens a client. `opts` NULL means defaults (redis://127.0.0.1:6379).
 * Checks the options and resolves host names; connections are made on first
 * use. On success *out is the caller's: close it with dlock_client_close().
 * On failure, if `why` is not NULL, a reason (never containing a password)
 * is written there, truncated to `why_len` bytes.
 * Returns 0, DLOCK_EINVAL (bad option or URL), DLOCK_ECONN (a host name
 * does not resolve), DLOCK_ETLS (a CA, certificate or key file cannot be
 * loaded, or the key does not match the certificate), DLOCK_ESYSTEM,
 * DLOCK_ENOMEM.
 */
DLOCK_EXTERN int dlock_client_open(dlock_client **out, const dlock_client_options *opts,
                                   char *why, size_t why_len);

/* Closes connections, frees the client and wipes its credentials. Locks
 * still held are not released (they expire after their TTL) and their
 * handles must be freed before the client is closed. NULL is ignored. */
DLOCK_EXTERN void dlock_client_close(dlock_client *client);

/*
 * Detail of the last failed call made with this client, e.g.
 * "127.0.0.1:6379: WRONGPASS invalid username-password pair". Empty after a
 * call that succeeded. Owned by the client, valid until the next call that
 * uses the client. Never contains a password. Never NULL.
 */
DLOCK_EXTERN const char *dlock_client_errmsg(const dlock_client *client);

/* ------------------------------------------------------------------ */
/* Locks                                                               */
/* ------------------------------------------------------------------ */

typedef struct dlock_lock dlock_lock;

/*
 * Lock names are byte strings of 1..DLOCK_NAME_MAX bytes (any byte but NUL).
 * The lock key is the name itself, so other clients that SET the same key
 * exclude us and we exclude them. Auxiliary keys (the fencing counter, the
 * owner record) and the release channel are {T}:dlock:fence:NAME,
 * {T}:dlock:owner:NAME and {T}:dlock:released:NAME, where T is the name's
 * hash tag if it has a valid one (Redis' rule: between the first '{' and
 * the first '}' after it, at least one byte), else the whole name: they
 * sit in the lock key's Redis Cluster slot, and no two names share one. A name with a brace but
 * no valid hash tag is refused, and so is a name that starts like an
 * auxiliary key ("{...}:dlock:").
 */

#define DLOCK_WAIT_FOREVER (-1)

/*
 * Called once, on the client's renewal thread, when an auto-renewed lock is
 * lost. `reason`: DLOCK_ENOTOWNER (another owner holds it, or the key is
 * gone), DLOCK_ELOST (max_hold_ms was reached), DLOCK_EPAUSED (the process
 * was not running when the validity ran out: stopped by SIGSTOP or a
 * debugger, a paused VM, a suspended machine), or the error that kept every
 * renewal from succeeding before the validity ran out (DLOCK_ETIMEDOUT,
 * DLOCK_ECONN, ...). Keep it short; it may call the thread-safe getters of
 * `lock` (dlock_lock_held, _name, _token, _fence, _validity_ms) and nothing
 * else of dlock.
 */
typedef void (*dlock_lost_fn)(dlock_lock *lock, int reason, void *arg);

/* A waiting acquire's sleep before its next try: see on_retry below. */
typedef void (*dlock_retry_fn)(int code, const char *detail, int64_t retry_in_ms, void *arg);

#define DLOCK_ACQUIRE_OPTIONS_VERSION 1

/* Options of one acquisition. Initialise with DLOCK_ACQUIRE_OPTIONS_INIT or
 * dlock_acquire_options_init(). NULL options: try once, no renewal. */
typedef struct dlock_acquire_options {
    unsigned version; /* DLOCK_ACQUIRE_OPTIONS_VERSION */

    /* 0: try once. > 0: wait up to this long for a busy lock (at most
     * DLOCK_DURATION_MAX_MS). DLOCK_WAIT_FOREVER: wait until it is ours or
     * the wait is canceled. A waiter tries at once; only a busy lock makes
     * it listen on the lock's channel, and it sleeps until the holder's
     * release is published there, the holder's TTL runs out, or a jittered
     * backoff passes. */
    int64_t wait_ms;

    /* Longest sleep between two attempts; default 1000; at most
     * DLOCK_DURATION_MAX_MS. */
    int64_t backoff_max_ms;

    /* 0: a wait retries through failures that pass (a server unreachable
     * or restarting, a timeout, a failover: DLOCK_ECONN, DLOCK_ETIMEDOUT,
     * DLOCK_ENOQUORUM, DLOCK_ESERVER, DLOCK_ENOREPLICAS) with a jittered
     * backoff of at most backoff_max_ms, until its deadline, then reports
     * the last one; a fair waiter retries at least every third of its
     * lease, so that it keeps its place when the server is back a third of
     * the lease (and a second) before the lease ends. DLOCK_EAUTH,
     * DLOCK_ETLS, DLOCK_EPROTO, DLOCK_EWRONGTYPE and DLOCK_ELIMIT end a
     * wait at once; every other error reply of a server (DLOCK_ESERVER:
     * LOADING, READONLY..., a garbled fence key too) is retried. Nonzero: a wait ends at the first failure; it
     * waits only for a lock that is busy. */
    int no_io_retry;

    /* Nonzero: the client's renewal thread extends the lock at ttl/3 (a
     * third of the validity, when that is shorter) until it is released,
     * freed or lost. */
    int auto_renew;

    /* With auto_renew: the lock is held at most this long from the
     * acquisition (renewals never extend it past that); 0: no limit; at
     * most DLOCK_DURATION_MAX_MS, and not shorter than the TTL. */
    int64_t max_hold_ms;

    /* With auto_renew: called once if the lock is lost; may be NULL. */
    dlock_lost_fn on_lost;
    void *on_lost_arg;

    /* 0 or 1: a mutex, one holder (as before this field existed). 2 up to
     * DLOCK_PERMITS_MAX: a counting semaphore, one of at most `permits`
     * concurrent holders of the name, each in a slot 0..permits-1
     * (dlock_lock_slot()) with its own fencing token sequence. Every holder
     * must ask with the same number while any permit is live
     * (DLOCK_ELIMIT otherwise). One server only: with several, a majority
     * cannot bound the holders (docs/redlock.md), so it is DLOCK_EINVAL.
     * The handle is released, extended, renewed and lost as a mutex's. */
    unsigned permits;

    /* Nonzero: a fair lock (a mutex whose waiters queue in arrival order;
     * docs/fair.md). A waiter keeps its place with a presence lease that it
     * renews while it waits; one that dies or gives up leaves the queue
     * within the lease. A release hands the lock to the head of the queue
     * (only the head's process wakes up): handed over, the lock is held for
     * at most min(TTL, lease) from the head's last try, until it is claimed
     * for the whole TTL, by the renewal thread with auto_renew, else by an
     * extend before the acquire returns. A plain acquire does not pass a
     * queue either: it finds the name busy while waiters are queued. One
     * server only (queue orders can differ from server to server), and not
     * with permits > 1: DLOCK_EINVAL. */
    int fair;

    /* With fair, or permits > 1 and a wait (a semaphore's waiters queue
     * too: docs/semaphores.md): the presence lease, DLOCK_LEASE_MIN_MS to
     * DLOCK_LEASE_MAX_MS; 0: DLOCK_LEASE_DEFAULT_MS. Renewed with every
     * try while waiting, at least every third of it. Nonzero with neither:
     * DLOCK_EINVAL. */
    int64_t lease_ms;

    /* Nonzero: a shared hold (docs/shared.md): any number of shared
     * holders together, never with an exclusive one (every other lock of
     * the name). An exclusive acquirer that waits keeps new shared holders
     * out. Renewal, loss and the fence as for a mutex; the fence is the
     * name's last exclusive holder's, the same for every shared holder
     * between two exclusive ones. Works with several servers. Not with
     * permits > 1 or fair: DLOCK_EINVAL. */
    int shared;

    /* Called each time a wait is about to sleep before its next try: after
     * a busy try (code DLOCK_EBUSY) or after a failure that it retries (see
     * no_io_retry). Gets the code, the client's detail of it (as
     * dlock_client_errmsg(): "the lock is held by another owner (its key
     * expires in 4.2 s)", or what a server did; valid during the call,
     * never containing a password) and the sleep before the next try, from
     * which the callback's own time is taken. A wait sleeps at most
     * backoff_max_ms at a time, so while it lasts it calls this at least
     * that often (plus a try's time); releases that wake it make it more
     * often. The acquire is still one call in the client's counters. It
     * runs on the waiting thread, inside the acquire: keep it short; it
     * must not call dlock on this client, except dlock_client_cancel()
     * (the wait then ends with DLOCK_ECANCELED); it may use another client
     * (a status query, to show who holds the lock). NULL: none. */
    dlock_retry_fn on_retry;
    void *on_retry_arg;
} dlock_acquire_options;

#define DLOCK_ACQUIRE_OPTIONS_INIT                                                                 \
    { DLOCK_ACQUIRE_OPTIONS_VERSION, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, 0, 0, NULL, NULL }

/* Fills *opts with defaults. Returns DLOCK_EINVAL for an unknown version. */
DLOCK_EXTERN int dlock_acquire_options_init(dlock_acquire_options *opts, unsigned version);

/*
 * Takes the lock `name` for `ttl_ms` (DLOCK_TTL_MIN_MS..DLOCK_TTL_MAX_MS), trying once or
 * waiting as `opts` says (NULL: try once). On success *out is a handle owned
 * by the caller (free it with dlock_lock_free() before closing the client);
 * the lock is held for at most dlock_lock_validity_ms().
 * A wait returns at most one command timeout after its deadline.
 * Returns 0; DLOCK_EBUSY (held by another owner, and the wait, if any, ran
 * out while it stayed held); DLOCK_ECANCELED (dlock_client_cancel());
 * DLOCK_EWRONGTYPE (the key holds a list, hash..., or the name is a lock of
 * another kind: a semaphore's for a mutex, a mutex's for a semaphore;
 * nothing was written); DLOCK_ELIMIT (a semaphore whose live permits were
 * taken with another `permits`: the message names the number in force);
 * DLOCK_EINVAL (bad name, TTL or options); DLOCK_ENOQUORUM (several
 * servers: no majority answered; each one's failure is in the client's
 * message); DLOCK_ETIMEDOUT, DLOCK_ECONN, DLOCK_ETLS,
 * DLOCK_EAUTH, DLOCK_ESERVER, DLOCK_EPROTO (the last cause, when a wait ran
 * out while the server failed), DLOCK_ENOMEM, DLOCK_ESYSTEM (no random
 * bytes, or no renewal thread); with the client's `replicas` option,
 * DLOCK_ENOREPLICAS (too few replicas acknowledged the grant in time: it
 * was taken back). With `restart_delay_ms`, a server in its restart delay
 * answers as if the lock were held for the rest of it (DLOCK_EBUSY).
 */
DLOCK_EXTERN int dlock_lock_acquire(dlock_lock **out, dlock_client *client, const char *name,
                                    int64_t ttl_ms, const dlock_acquire_options *opts);

/*
 * Cancels the waiting acquire in progress on this client, which returns
 * DLOCK_ECANCELED; if none is waiting, the next waiting acquire (or
 * dlock_status_watch() with a `prev`) returns DLOCK_ECANCELED at once.
 * Safe from any thread and from a signal handler.
 */
DLOCK_EXTERN void dlock_client_cancel(dlock_client *client);

/*
 * A handle for a lock taken earlier, maybe by another process, from its name
 * and owner token (DLOCK_TOKEN_LEN lower-case hex characters). Nothing is sent
 * to the server: the handle's validity is 0 until an extend succeeds, and
 * its fence and slot stay 0. Use it to release or extend, whatever kind of
 * lock the name is (a mutex or a semaphore's permit). Returns 0, DLOCK_EINVAL, DLOCK_ENOMEM.
 */
DLOCK_EXTERN int dlock_lock_adopt(dlock_lock **out, dlock_client *client,
                                  const char *name, const char *token);

/*
 * Releases the lock if this handle's token still owns it: an atomic
 * compare-and-delete, never a bare DEL, which wakes waiters on the release
 * channel. An auto-renewed lock first leaves the renewal set (waiting for a
 * renewal in flight), so no renewal follows the release. The handle stays
 * valid until freed, and is no longer held once the release reached a
 * server, whatever the call returns (it may have run there).
 * Returns 0; DLOCK_ENOTOWNER (someone else holds it, or it is gone);
 * DLOCK_ELOST (auto-renewed, and lost: the renewal thread found it lost and
 * cleaned up, or its validity ran out before a renewal, e.g. the process was
 * paused: then the compare-and-delete is still sent, for what may remain);
 * DLOCK_ENOQUORUM (several servers: no majority answered); DLOCK_ETIMEDOUT,
 * DLOCK_ECONN, DLOCK_ETLS, DLOCK_EAUTH, DLOCK_ESERVER, DLOCK_EPROTO,
 * DLOCK_EWRONGTYPE, DLOCK_ENOMEM; DLOCK_EINVAL for a NULL lock.
 */
DLOCK_EXTERN int dlock_lock_release(dlock_lock *lock);

/*
 * Sets the lock's TTL to `ttl_ms` (DLOCK_TTL_MIN_MS..DLOCK_TTL_MAX_MS) from now, if this
 * handle's token still owns it (atomic compare-and-expire). The validity is
 * measured again from the start of this call; after a failure it is never
 * longer than what this extend would have left, if it may have run.
 * Returns 0; DLOCK_ENOTOWNER (someone else holds it, or it expired: the lock
 * is lost and is never silently re-taken); DLOCK_EINVAL (bad TTL, or the
 * lock is renewed automatically) and the I/O codes of dlock_lock_release();
 * with the client's `replicas` option, DLOCK_ENOREPLICAS (too few replicas
 * acknowledged the extend in time: the validity is not extended).
 */
DLOCK_EXTERN int dlock_lock_extend(dlock_lock *lock, int64_t ttl_ms);

/*
 * Milliseconds the lock is still certainly held: ttl - elapsed - drift,
 * measured on CLOCK_BOOTTIME from the start of the acquire or extend that
 * set it (so it keeps running while the machine is suspended). 0 once it ran
 * out, after a release or a loss, and for an adopted handle until an extend
 * succeeds. No round trip.
 * Safe from any thread while the handle exists.
 */
DLOCK_EXTERN int64_t dlock_lock_validity_ms(const dlock_lock *lock);

/*
 * 1 while the lock is certainly held: not lost, not released, and the
 * validity has not run out (so it turns 0 by itself when the process was
 * paused past it). No round trip. Safe from any thread while the handle
 * exists.
 */
DLOCK_EXTERN int dlock_lock_held(const dlock_lock *lock);

/* How many attempts the acquisition took (1 when the lock was free; a
 * lock handed over by a release counts as one more attempt). Set
 * by dlock_lock_acquire() and never changed after it: safe from any thread
 * once the handle exists. */
DLOCK_EXTERN unsigned dlock_lock_attempts(const dlock_lock *lock);

/* The owner token: DLOCK_TOKEN_LEN lower-case hex characters, owned by the
 * handle, valid until dlock_lock_free(). Safe from any thread. */
DLOCK_EXTERN const char *dlock_lock_token(const dlock_lock *lock);

/* The name, owned by the handle, valid until dlock_lock_free(). Safe from
 * any thread. */
DLOCK_EXTERN const char *dlock_lock_name(const dlock_lock *lock);

/*
 * The fencing token of this acquisition: a number that grows with every
 * acquisition of the same name, max(previous + 1, server time in
 * microseconds). Pass it to the protected resource and let it refuse
 * anything older than the largest it has seen. 0 for an adopted handle.
 * Safe from any thread.
 */
DLOCK_EXTERN uint64_t dlock_lock_fence(const dlock_lock *lock);

/* A semaphore's permit: its slot, 0 .. permits - 1, which no other live
 * permit holds; its fence grows per slot, so a resource keeps the largest
 * fence seen per slot (docs/fencing.md). 0 for a mutex and an adopted
 * handle. Safe from any thread. */
DLOCK_EXTERN unsigned dlock_lock_slot(const dlock_lock *lock);

/*
 * What the servers say about a lock name, without a handle: an opaque
 * result, read with the getters below and freed with dlock_status_free().
 * The holder's token is deliberately not part of it.
 */
typedef struct dlock_status dlock_status;

/* A holder that left its owner record (every dlock client does): owned by
 * the status it came from, valid until that is freed. New fields are only
 * ever added at the end. */
typedef struct dlock_holder {
    const char *host; /* the holder's host name */
    long pid;         /* its process id */
    int64_t since_ms; /* when it took the lock, in ms since the Unix epoch */
    int64_t ttl_ms;   /* its key's (a semaphore: its permit's) time to live; -1: none */
    unsigned slot;    /* a semaphore's permit: its slot; 0 for a mutex */
    uint64_t fence;   /* the last fencing token of the holder's slot (a mutex: the name's) */
} dlock_holder;

/*
 * Asks the servers about `name` without changing anything. With several
 * servers this is the majority's view, decided as soon as a majority
 * answered: held if a majority holds the key, the shortest TTL among them
 * and the largest fence reported. On success *out is the caller's (free it
 * with dlock_status_free()); on failure *out is not written. Returns 0;
 * DLOCK_EWRONGTYPE (the key holds a list, hash...); DLOCK_ENOQUORUM (fewer
 * than a majority answered); DLOCK_EINVAL, DLOCK_ENOMEM and the I/O codes
 * of dlock_lock_release().
 */
DLOCK_EXTERN int dlock_status_query(dlock_status **out, dlock_client *client, const char *name);

/* The same, for server number `node` (0 .. dlock_client_nodes() - 1) alone. */
DLOCK_EXTERN int dlock_status_query_node(dlock_status **out, dlock_client *client,
                                         const char *name, size_t node);

/* 1 if the lock key exists (held by anyone, dlock or not), else 0. */
DLOCK_EXTERN int dlock_status_held(const dlock_status *st);

/* The lock key's time to live: -1 for a key without TTL, 0 when free. */
DLOCK_EXTERN int64_t dlock_status_ttl_ms(const dlock_status *st);

/* The last fencing token issued for the name; 0: none. */
DLOCK_EXTERN uint64_t dlock_status_fence(const dlock_status *st);

/* How many holders left a record that is theirs: 0 or 1 for a mutex (0 for
 * a key that another client SET); a semaphore's live permits, by slot. */
DLOCK_EXTERN size_t dlock_status_holders(const dlock_status *st);

/* Holder number `i` (0 .. dlock_status_holders() - 1), or NULL. */
DLOCK_EXTERN const dlock_holder *dlock_status_holder(const dlock_status *st, size_t i);

/* How many holders the name allows at once: the permits of a semaphore
 * with live permits, else 1. */
DLOCK_EXTERN unsigned dlock_status_limit(const dlock_status *st);

/* Nonzero when the name is held shared (docs/shared.md): the holders are
 * then the shared holders, listed from the first server that holds it,
 * each with the name's fence. */
DLOCK_EXTERN int dlock_status_shared(const dlock_status *st);

/* Who holds the name, in the words of dlock's own messages, into `out`
 * (cut at `len` bytes): "held by HOST pid PID since 2025-01-02T03:04:05Z,
 * expires in 4.2 s" (or "held by another client (no owner record)"),
 * "2 of its 3 permits held, the first to expire in 1.0 s", "held shared by
 * 2 holders (one: HOST pid PID), the last to expire in 3.0 s"; "not held".
 * Returns 0, or DLOCK_EINVAL for a NULL `st` or `out` or a `len` of 0. */
DLOCK_EXTERN int dlock_status_describe(const dlock_status *st, char *out, size_t len);

/* Servers that answered, and on how many of them the key exists. */
DLOCK_EXTERN unsigned dlock_status_nodes_answered(const dlock_status *st);
DLOCK_EXTERN unsigned dlock_status_nodes_held(const dlock_status *st);

/* One server's own answer within a status: owned by the status, valid
 * until it is freed. New fields are only ever added at the end. */
typedef struct dlock_node_status {
    int code;          /* 0: it answered; else why not (DLOCK_ETIMEDOUT: not in time) */
    const char *error; /* the detail of that failure ("" when it answered) */
    int held;          /* the key exists there */
    int64_t ttl_ms;    /* its TTL there: -1 for none, 0 when free */
    uint64_t fence;    /* the last fencing token there */
} dlock_node_status;

/* Server number `node` (0 .. dlock_client_nodes() - 1; 0 for a status of
 * one server) as it answered, or NULL out of range. A query does not wait
 * for the servers it does not need: once the majority's view is known, the
 * others get as long again as that took, so a paused server shows
 * DLOCK_ETIMEDOUT instead of costing its whole deadline. */
DLOCK_EXTERN const dlock_node_status *dlock_status_node(const dlock_status *st, size_t node);

/* NULL is ignored. */
DLOCK_EXTERN void dlock_status_free(dlock_status *st);

/*
 * The fence at the resource (docs/fencing.md).
 *
 * Is `fence` still the newest fencing token issued for `name`, and the name
 * held? Yes when the lock is held and the last token issued for it is
 * `fence` (a semaphore: the last token of one of its held permits' slots).
 * With several servers, a majority of all of them must say so: they hold
 * the key, and their last token is `fence` or older (one of them exactly):
 * a holder's token is written back to a majority, a newer holder's too
 * (the servers a status did not wait for are asked too when the first
 * answers do not settle it: a server that granted late keeps a newer
 * number of its own). So servers that cannot be reached turn the answer
 * to 0 before they could turn a stale token into 1. For a resource that can call out before
 * it acts, like Chubby's CheckSequencer. A check followed by a write is not
 * atomic: the lock can be lost between the two, so a check makes a stale
 * holder fail early but does not guard the write; a guard at the resource
 * does (the SQL and Redis guards). Returns 1 (current), 0 (not current:
 * the name is free, or was taken again since, or `fence` was never its
 * token), or a negative code of dlock_status_query().
 */
DLOCK_EXTERN int dlock_fence_check(dlock_client *client, const char *name, uint64_t fence);

/*
 * Loads the Redis guard, the Functions library dlock_fence (FCALL
 * dlock_fenced_set, dlock_fenced_hset, dlock_fenced_incrby), into every
 * server of the client, replacing the one loaded before (FUNCTION LOAD
 * REPLACE); on a Redis Cluster into each of its masters. Needs Redis 7.
 * Returns 0, or the first failure with dlock_client_errmsg() naming the
 * server: DLOCK_ESERVER (a server before 7 does not know FUNCTION),
 * DLOCK_EAUTH (the ACL user may not run it), the I/O codes of
 * dlock_lock_release(). Servers before the failing one keep what they got.
 */
DLOCK_EXTERN int dlock_guard_load_redis(dlock_client *client);

/* How many servers the client has; 0 for NULL. Safe from any thread. */
DLOCK_EXTERN size_t dlock_client_nodes(const dlock_client *client);

/* Server number `node` as "host:port" or a socket path (never with a
 * password); "" when out of range. Owned by the client. Safe from any
 * thread. */
DLOCK_EXTERN const char *dlock_client_node_label(const dlock_client *client, size_t node);

/*
 * The restart rule on server `node` (0 .. dlock_client_nodes() - 1): in
 * *out, how much of the client's restart_delay_ms is left before it may
 * grant again (0: it may; always 0 when the rule is off). Reads only: a
 * server whose marker is missing or names another server shows the whole
 * delay, which starts when an acquire first finds it so. Returns 0,
 * DLOCK_EINVAL, or the server's failure (DLOCK_EAUTH without TIME or GET on
 * the marker key). On a cluster endpoint: the master its last call went to
 * (after dlock_status_query(), the one that serves the name).
 */
DLOCK_EXTERN int dlock_restart_remaining(int64_t *out, dlock_client *client, size_t node);

/* Frees the handle, taking it out of the renewal set first. Does not
 * release the lock: a lock that is not released expires after its TTL.
 * NULL is ignored. */
DLOCK_EXTERN void dlock_lock_free(dlock_lock *lock);

/* ------------------------------------------------------------------ */
/* Operations: list, watch, doctor, counters                           */
/* ------------------------------------------------------------------ */

/* A list of lock names: read with the getters below, free with
 * dlock_names_free(). */
typedef struct dlock_names dlock_names;

/*
 * The names that have an owner record on the servers (every dlock client
 * leaves one while it holds a lock), sorted, each once, that match the glob
 * `pattern` (the rules of fnmatch(3), like Redis' MATCH; NULL: all). Found
 * with SCAN, never KEYS, so a large data set is walked in small steps that
 * do not block the server. With several servers, every name found on the
 * servers that answered, which must be a majority: a lock that a majority
 * holds is in it (a name one server alone holds may be too). A name may be
 * free again by the time it is read: ask dlock_status_query().
 * Returns 0; DLOCK_ENOQUORUM (fewer than a majority answered); DLOCK_EINVAL,
 * DLOCK_ENOMEM and the I/O codes of dlock_lock_release().
 */
DLOCK_EXTERN int dlock_list_names(dlock_names **out, dlock_client *client, const char *pattern);

/* How many names; 0 for NULL. */
DLOCK_EXTERN size_t dlock_names_count(const dlock_names *names);

/* Name number `i`, owned by the list, or NULL out of range. */
DLOCK_EXTERN const char *dlock_names_at(const dlock_names *names, size_t i);

/* NULL is ignored. */
DLOCK_EXTERN void dlock_names_free(dlock_names *names);

/* How often dlock_status_watch() looks when nothing was published: an
 * acquisition publishes nothing (that would cost every acquire), and an
 * expiry cannot. */
#define DLOCK_WATCH_PERIOD_MS 250

/*
 * Waits until the status of `name` differs from `prev` (held or free, a new
 * fencing token, that is a new acquisition, another holder) and returns the
 * new one in *out; `prev` NULL: the current status at once. It listens on
 * the name's release channel, so a release is seen as soon as it is
 * published, and looks every `period_ms` (0: DLOCK_WATCH_PERIOD_MS; at most
 * DLOCK_DURATION_MAX_MS) for acquisitions and expiries. What came and went
 * between two looks is not seen. Returns 0, DLOCK_ECANCELED
 * (dlock_client_cancel()) and the codes of dlock_status_query().
 */
DLOCK_EXTERN int dlock_status_watch(dlock_status **out, dlock_client *client, const char *name,
                                    const dlock_status *prev, int64_t period_ms);

/* How bad a finding of dlock_doctor() is. */
typedef enum dlock_severity {
    DLOCK_SEVERITY_INFO = 0,    /* worth knowing */
    DLOCK_SEVERITY_WARNING = 1, /* a lock can be lost or doubled in some failure */
    DLOCK_SEVERITY_ERROR = 2    /* locks do not work, or are not safe, as things are */
} dlock_severity;

/* One finding: owned by its report, valid until that is freed. New fields
 * are only ever added at the end. */
typedef struct dlock_finding {
    const char *id;       /* stable: "EVICTABLE", "NO_PERSISTENCE", ... */
    dlock_severity severity;
    const char *server;   /* "host:port" (or a socket path); "" for the whole set */
    const char *evidence; /* what was seen */
    const char *fix;      /* what to do about it */
    int64_t offset_ms;    /* CLOCK_SKEW: the server's clock minus ours; SLOW: the round trip */
} dlock_finding;

typedef struct dlock_report dlock_report;

/*
 * Can these servers keep a lock? Checks every server of the client and
 * returns its findings (none: nothing to say), with the IDs EVICTABLE,
 * NO_PERSISTENCE, FSYNC_EVERYSEC, ASYNC_REPLICAS, REPLICA, ACL_MISSING,
 * ACL_KINDS, ACL_OPTIONAL, AUTH_FAILED, SAME_NODE, TWO_SERVERS (a client
 * opened with `inspect`), CLOCK_SKEW, SLOW, VERSION, LOCK_FAILED,
 * UNREACHABLE and NOT_CHECKED (the server did not let us look, e.g.
 * CONFIG GET refused). `ttl_ms` is the TTL the locks will use (0: 30 s),
 * for SLOW. The commands and scripts dlock needs are tried on a scratch
 * lock, `name` followed by "-dlock-doctor-" and random hex (`name` NULL:
 * "dlock-doctor-..."), so that a user allowed only some keys is checked on
 * those; nothing else is written, and the scratch keys are removed.
 * Returns 0 (whatever was found), DLOCK_EINVAL (bad name, or `ttl_ms` not 0
 * and out of DLOCK_TTL_MIN_MS..DLOCK_TTL_MAX_MS), DLOCK_ENOMEM.
 */
DLOCK_EXTERN int dlock_doctor(dlock_report **out, dlock_client *client, const char *name,
                              int64_t ttl_ms);

/* How many findings; 0 for NULL. */
DLOCK_EXTERN size_t dlock_report_count(const dlock_report *report);

/* Finding number `i`, or NULL out of range. */
DLOCK_EXTERN const dlock_finding *dlock_report_finding(const dlock_report *report, size_t i);

/* The worst severity found, or -1 when nothing was. */
DLOCK_EXTERN int dlock_report_worst(const dlock_report *report);

/* NULL is ignored. */
DLOCK_EXTERN void dlock_report_free(dlock_report *report);

#define DLOCK_STATS_VERSION 1

/* Errors of one server, as the client's calls about locks saw them. */
typedef struct dlock_node_stats {
    uint64_t errors;   /* replies that were errors, broken connections */
    uint64_t timeouts; /* no reply by the deadline */
} dlock_node_stats;

/* A client's counters since it was opened. Set `version` to
 * DLOCK_STATS_VERSION before the call: later versions only add fields at
 * the end, filled only for callers that ask for them. */
typedef struct dlock_stats {
    unsigned version;
    uint64_t acquisitions;         /* acquire calls that got the lock */
    uint64_t busy;                 /* acquire calls that returned DLOCK_EBUSY */
    uint64_t waits;                /* acquire calls that found the lock busy and waited */
    int64_t wait_ms;               /* the time those calls spent, in total */
    uint64_t renewals;             /* automatic renewals that succeeded */
    int64_t min_renewal_margin_ms; /* least validity left when one succeeded; -1: none yet */
    uint64_t losses;               /* auto-renewed locks lost */
    size_t nodes;                  /* entries of node[] in use: dlock_client_nodes() */
    dlock_node_stats node[DLOCK_NODES_MAX];
} dlock_stats;

/* Fills *out with the client's counters. Returns 0, or DLOCK_EINVAL (NULL,
 * or an unknown version). Safe from any thread while the client exists. */
DLOCK_EXTERN int dlock_client_stats(const dlock_client *client, dlock_stats *out);

/* The label value under which the names beyond the client's
 * metrics_names_max are counted together. */
#define DLOCK_METRICS_OTHER "__other__"

/*
 * The client's counters in the Prometheus text exposition format (version
 * 0.0.4; docs/operations.md lists the metrics): per lock name (label
 * `name`) the acquisitions, busy and waiting calls, losses, renewals and
 * failed renewals, fair hand-overs received, the smallest renewal margin,
 * the wait and hold times as histograms; per server (label `server`, as
 * dlock_client_node_label(): never a password) errors and timeouts.
 * Written into buf (len bytes; buf may be NULL when len is 0), cut short
 * and always NUL-terminated when it does not fit, as snprintf(3) does.
 * Returns the length of the whole text without the NUL (a value >= len:
 * it was cut; call again with a larger buffer, the text may have grown
 * meanwhile), or DLOCK_EINVAL (client NULL, or buf NULL with len > 0).
 * The library writes nothing anywhere else. Safe from any thread while the
 * client exists.
 */
DLOCK_EXTERN int64_t dlock_client_metrics(const dlock_client *client, char *buf, size_t len);

/* The same text in a string of its own: on success *out is the caller's,
 * to free with dlock_metrics_free(). Returns 0, DLOCK_EINVAL or
 * DLOCK_ENOMEM. Safe from any thread while the client exists. */
DLOCK_EXTERN int dlock_client_metrics_text(char **out, const dlock_client *client);

/* Frees a text of dlock_client_metrics_text(). NULL is ignored. */
DLOCK_EXTERN void dlock_metrics_free(char *text);

/* ------------------------------------------------------------------ */
/* The audit: who held a name, when, and what went wrong               */
/* ------------------------------------------------------------------ */

/* How an audited hold ended, as its entries say. */
typedef enum dlock_audit_end {
    DLOCK_AUDIT_OPEN = 0,     /* no end recorded: still held, or its key expired unseen */
    DLOCK_AUDIT_RELEASED = 1, /* released by its holder while its key was there */
    DLOCK_AUDIT_EXPIRED = 2,  /* released by its holder after its key had gone */
    DLOCK_AUDIT_LOST = 3      /* the holder's renewal found it lost */
} dlock_audit_end;

/* One token's hold of the name, merged from every server's stream. Times
 * are server time, microseconds since the epoch. */
typedef struct dlock_audit_hold {
    char token[DLOCK_TOKEN_LEN + 1];
    uint64_t fence;       /* its client's (an extend or end says), else its largest grant's */
    char host[256];       /* of the holder; "" if no entry named it */
    long pid;             /* of the holder; 0 if no entry named it */
    int exclusive;        /* 0: a semaphore's permit or a shared holder */
    int64_t start_us;     /* the grant; with no grant read, its first extends; with
                           * neither on a majority, what its release or loss says (its
                           * client's held time, from its attempt), else its earliest
                           * grant left: a guess no overlap is judged by */
    int64_t valid_us;     /* the end of its validity: the last grant or extend + TTL on
                           * a majority (or what a release said was left); 0: unknown */
    int64_t end_us;       /* the release or loss; 0 for an open hold */
    dlock_audit_end end;
    unsigned servers;     /* servers that recorded its grant (or a repair); with no
                           * grant read (older than since_ms), its extend */
    int ttl_ms;           /* the TTL of its last grant or extend; 0: unknown */
} dlock_audit_hold;

/* What dlock_audit_read() finds. */
typedef enum dlock_audit_kind {
    /* Holds a and b (exclusive, a granted first) overlap: b's grant came
     * amount_us before a's end (release, loss or validity, whichever is
     * first), beyond the drift allowance of a's TTL x 1 % + 2 ms. */
    DLOCK_AUDIT_OVERLAP = 1,
    /* Hold b, granted after hold a, has a smaller fence by amount_us. */
    DLOCK_AUDIT_FENCE_BACK = 2,
    /* Hold a was released (or lost) amount_us after its validity ended:
     * its holder worked past it. A release that found the key gone is one
     * unless it came before the validity's end (the key went early: who
     * took the name then is an overlap), but for a permit or a shared
     * holder, among which no overlap is judged, it is one then too (a
     * permit gone early lets more holders in than the limit); before the
     * validity's end, or with no validity known (valid_us 0: its grant is
     * older than the entries read), amount_us is 0. */
    DLOCK_AUDIT_PAST_VALIDITY = 3,
    /* Several servers: hold a was used (extended, released or lost) but
     * fewer than a majority recorded its grant. */
    DLOCK_AUDIT_NO_MAJORITY = 4
} dlock_audit_kind;

typedef struct dlock_audit_finding {
    dlock_audit_kind kind;
    size_t a, b;       /* indexes of the holds (b == a for a finding about one) */
    int64_t at_us;     /* server time it happened */
    int64_t amount_us; /* by how much (see the kind) */
} dlock_audit_finding;

/* What dlock_audit_read() found: read with the getters, free with
 * dlock_audit_free(). */
typedef struct dlock_audit dlock_audit;

/* Entries read from one server's stream at most: the newest. */
#define DLOCK_AUDIT_READ_MAX 100000

/*
 * Reads the audit stream of `name` ({T}:dlock:audit:NAME, written by
 * clients with the `audit` option) on every server, with XREVRANGE in
 * pages, the entries of the last `since_ms` (0: all the stream keeps; the
 * newest DLOCK_AUDIT_READ_MAX per server), and judges them: the holds, one per
 * token, and the findings, each a reason to look (docs/operations.md).
 * A hold whose grant is older than `since_ms` but whose end is not is
 * judged from its end alone. On success *out is the caller's, to free with
 * dlock_audit_free(). Returns 0; DLOCK_EINVAL (bad name, since_ms
 * negative), DLOCK_EWRONGTYPE (the key is no stream), DLOCK_ENOMEM, or the
 * I/O code of a server that did not answer (every server must).
 */
DLOCK_EXTERN int dlock_audit_read(dlock_audit **out, dlock_client *client, const char *name,
                                  int64_t since_ms);

/* The holds, ordered by start, in *out (owned by the audit, valid until it
 * is freed); returns how many. */
DLOCK_EXTERN size_t dlock_audit_holds(const dlock_audit *audit, const dlock_audit_hold **out);

/* The findings, ordered by time, in *out (owned by the audit); returns
 * how many. */
DLOCK_EXTERN size_t dlock_audit_findings(const dlock_audit *audit,
                                         const dlock_audit_finding **out);

/* How many entries were read, from every server together. */
DLOCK_EXTERN size_t dlock_audit_entries(const dlock_audit *audit);

/* NULL is ignored. */
DLOCK_EXTERN void dlock_audit_free(dlock_audit *audit);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_H */
