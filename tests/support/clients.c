/* The tests' clients and locks. See clients.h. */
#include "clients.h"

#include "cleanup.h"
#include "fixtures.h"
#include "redis_checks.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void close_client(void *c)
{
    dlock_client_close(c);
}

static void cancel_client(void *c)
{
    dlock_client_cancel(c);
}

static void free_lock(void *lock)
{
    dlock_lock_free(lock);
}

static void free_status(void *status)
{
    dlock_status_free(status);
}

static void free_report(void *report)
{
    dlock_report_free(report);
}

dlock_client_options client_options(const char *const *urls, size_t n)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    o.urls = urls;
    o.n_urls = n;
    return o;
}

dlock_client *client_with(const dlock_client_options *o)
{
    dlock_client *c = NULL;
    char why[256];
    int rc = dlock_client_open(&c, o, why, sizeof(why));
    if (rc != 0)
        fail_msg("dlock_client_open(%s%s): %s: %s", o->n_urls ? o->urls[0] : "",
                 o->n_urls > 1 ? ", ..." : "", dlock_err_name(rc), why);
    /* Cancelled first at teardown: a thread's waiting call on it returns. */
    return cleanup_keep_stoppable(c, close_client, cancel_client);
}

dlock_client *client_on(const char *url)
{
    dlock_client_options o = client_options(&url, 1);
    return client_with(&o);
}

dlock_client *client_with_timeouts(const char *url, int connect_timeout_ms,
                                   int command_timeout_ms)
{
    dlock_client_options o = client_options(&url, 1);
    o.connect_timeout_ms = connect_timeout_ms;
    o.command_timeout_ms = command_timeout_ms;
    return client_with(&o);
}

dlock_client *client_on_nodes(const char *const *urls, size_t n, int node_timeout_ms,
                              int command_timeout_ms)
{
    dlock_client_options o = client_options(urls, n);
    o.node_timeout_ms = node_timeout_ms;
    o.command_timeout_ms = command_timeout_ms;
    return client_with(&o);
}

dlock_client *client_on_servers(const test_redis *servers, size_t n, int node_timeout_ms,
                                int command_timeout_ms)
{
    return client_on_nodes(urls_of(servers, n), n, node_timeout_ms, command_timeout_ms);
}

dlock_client *durable_client(const char *url, int replicas, int64_t restart_delay_ms)
{
    dlock_client_options o = client_options(&url, 1);
    o.replicas = replicas;
    o.restart_delay_ms = restart_delay_ms;
    return client_with(&o);
}

const char **urls_of(const test_redis *servers, size_t n)
{
    const char **urls = cleanup_alloc(n * sizeof(*urls));
    for (size_t i = 0; i < n; i++)
        urls[i] = servers[i].url;
    return urls;
}

const char *url_list(const test_redis *servers, size_t n)
{
    size_t len = n * sizeof(servers->url), used = 0;
    char *list = cleanup_alloc(len);
    for (size_t i = 0; i < n; i++)
        used += (size_t)snprintf(list + used, len - used, "%s%s", i ? "," : "", servers[i].url);
    return list;
}

dlock_acquire_options wait_options(int64_t wait_ms)
{
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    o.wait_ms = wait_ms;
    return o;
}

dlock_acquire_options fair_options(int64_t lease_ms, int64_t wait_ms)
{
    dlock_acquire_options o = wait_options(wait_ms);
    o.fair = 1;
    o.lease_ms = lease_ms;
    return o;
}

dlock_acquire_options permits_options(unsigned permits)
{
    dlock_acquire_options o = DLOCK_ACQUIRE_OPTIONS_INIT;
    o.permits = permits;
    return o;
}

dlock_acquire_options shared_options(int64_t wait_ms)
{
    dlock_acquire_options o = wait_options(wait_ms);
    o.shared = 1;
    return o;
}

dlock_lock *expect_acquire(int want, dlock_client *c, const char *name, int64_t ttl_ms,
                           const dlock_acquire_options *opts)
{
    dlock_lock *lock = NULL;
    int rc = dlock_lock_acquire(&lock, c, name, ttl_ms, opts);
    kept_lock(lock);
    if (rc != want)
        fail_msg("acquire %s: %s, not %s: %s", name, rc ? dlock_err_name(rc) : "granted",
                 want ? dlock_err_name(want) : "granted", dlock_client_errmsg(c));
    if (want != 0)
        assert_null(lock);
    return lock;
}

dlock_lock *take(dlock_client *c, const char *name, int64_t ttl_ms,
                 const dlock_acquire_options *opts)
{
    return expect_acquire(0, c, name, ttl_ms, opts);
}

dlock_lock *fair_holder(const char *url, const char *name, int64_t lease_ms)
{
    dlock_acquire_options o = fair_options(lease_ms, 0);
    return take(client_on(url), name, 30000, &o);
}

uint64_t take_and_release(dlock_client *c, const char *name, int64_t ttl_ms,
                          const dlock_acquire_options *opts)
{
    dlock_lock *lock = take(c, name, ttl_ms, opts);
    uint64_t fence = dlock_lock_fence(lock);
    int rc = dlock_lock_release(lock);
    if (rc != 0)
        fail_msg("release %s: %s: %s", name, dlock_err_name(rc), dlock_client_errmsg(c));
    cleanup_now(lock);
    return fence;
}

dlock_lock *adopt(dlock_client *c, const char *name, const char *token)
{
    dlock_lock *lock = NULL;
    int rc = dlock_lock_adopt(&lock, c, name, token);
    if (rc != 0)
        fail_msg("adopt %s: %s: %s", name, dlock_err_name(rc), dlock_client_errmsg(c));
    return kept_lock(lock);
}

static void free_audit(void *audit)
{
    dlock_audit_free(audit);
}

static void free_names(void *names)
{
    dlock_names_free(names);
}

dlock_lock *kept_lock(dlock_lock *lock)
{
    return cleanup_keep(lock, free_lock);
}

dlock_status *kept_status(dlock_status *status)
{
    return cleanup_keep(status, free_status);
}

dlock_report *kept_report(dlock_report *report)
{
    return cleanup_keep(report, free_report);
}

dlock_audit *kept_audit(dlock_audit *audit)
{
    return cleanup_keep(audit, free_audit);
}

dlock_names *kept_names(dlock_names *names)
{
    return cleanup_keep(names, free_names);
}

void assert_refused_by_three(const dlock_acquire_options *opts, const char *name,
                             const char *says)
{
    test_redis *servers = start_servers(3);
    dlock_client *c = client_on_servers(servers, 3, 0, 0);
    expect_acquire(DLOCK_EINVAL, c, name, 30000, opts);
    if (!strstr(dlock_client_errmsg(c), says))
        fail_msg("\"%s\" does not say \"%s\"", dlock_client_errmsg(c), says);
    for (int i = 0; i < 3; i++)
        assert_empty(&servers[i]);
}

static void view_of(status_view *out, dlock_status *st)
{
    const dlock_holder *h = dlock_status_holder(st, 0);
    memset(out, 0, sizeof(*out));
    out->held = dlock_status_held(st);
    out->has_owner = h != NULL;
    out->pttl_ms = dlock_status_ttl_ms(st);
    out->fence = dlock_status_fence(st);
    if (h) {
        out->pid = h->pid;
        out->since_ms = h->since_ms;
        snprintf(out->host, sizeof(out->host), "%s", h->host);
    }
    out->nodes_answered = dlock_status_nodes_answered(st);
    out->nodes_held = dlock_status_nodes_held(st);
    dlock_status_free(st);
}

int status_of(status_view *out, dlock_client *c, const char *name)
{
    dlock_status *st = NULL;
    int rc = dlock_status_query(&st, c, name);
    if (rc == 0)
        view_of(out, st);
    return rc;
}

int status_of_node(status_view *out, dlock_client *c, const char *name, size_t node)
{
    dlock_status *st = NULL;
    int rc = dlock_status_query_node(&st, c, name, node);
    if (rc == 0)
        view_of(out, st);
    return rc;
}
