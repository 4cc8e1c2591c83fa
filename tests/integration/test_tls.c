/* TLS against redis-servers that speak only TLS, with certificates made by
 * the test: verification on by default (chain and host name), the insecure
 * switch, SNI, mutual TLS, mixed plain/TLS Redlock, and the command's flags. */
#include "helpers.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char certs[64];
static char ca[128], client_crt[128], client_key[128];
static test_redis plain_tls, mutual_tls, wrong_host, plain1;

/* Runs `program arg` and returns its exit status. */
static int run_program(const char *program, const char *arg)
{
    int status;
    pid_t pid = fork();
    if (pid == 0) {
        execl(program, program, arg, (char *)NULL);
        _exit(127);
    }
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A TLS-only server presenting NAME.crt; `clients`: "yes" for mutual TLS. */
static int start_tls(test_redis *r, const char *name, const char *clients)
{
    static char files[3][5][160]; /* outlive the servers: restarts reuse them */
    static int used;
    char (*f)[160] = files[used++];
    snprintf(f[0], sizeof(f[0]), "%s/%s.crt", certs, name);
    snprintf(f[1], sizeof(f[1]), "%s/%s.key", certs, name);
    snprintf(f[2], sizeof(f[2]), "%s", ca);
    {
        const char *args[] = {"--port", "0", "--tls-port", "{port}", "--tls-cert-file", f[0],
                              "--tls-key-file", f[1], "--tls-ca-cert-file", f[2],
                              "--tls-auth-clients", clients, NULL};
        return test_redis_start(r, args);
    }
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(certs, sizeof(certs), "/tmp/dlock-certs-XXXXXX");
    if (!mkdtemp(certs) || run_program(SOURCE_DIR "/tests/support/make_certs.sh", certs) != 0)
        return -1;
    snprintf(ca, sizeof(ca), "%s/ca.crt", certs);
    snprintf(client_crt, sizeof(client_crt), "%s/client.crt", certs);
    snprintf(client_key, sizeof(client_key), "%s/client.key", certs);
    if (start_tls(&plain_tls, "server", "no") || start_tls(&mutual_tls, "server", "yes") ||
        start_tls(&wrong_host, "other", "no") || test_redis_start(&plain1, NULL))
        return -1;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    cleanup_run(); /* what a failed setup kept */
    test_redis_stop(&plain_tls);
    test_redis_stop(&mutual_tls);
    test_redis_stop(&wrong_host);
    test_redis_stop(&plain1);
    {
        pid_t pid = fork();
        if (pid == 0) {
            execlp("rm", "rm", "-rf", certs, (char *)NULL);
            _exit(127);
        }
        waitpid(pid, NULL, 0);
    }
    return 0;
}

struct tls_case {
    const char *ca, *cert, *key, *sni;
    int insecure;
};

/* Opens a client on rediss://127.0.0.1:PORT and tries one lock. */
static int try_tls(const test_redis *server, const struct tls_case *k, char *msg, size_t len)
{
    char url[64];
    const char *u = url;
    dlock_client_options opts = client_options(&u, 1);
    dlock_client *c;
    dlock_lock *lock = NULL;
    int rc;
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d", server->port);
    opts.tls_ca_file = k->ca;
    opts.tls_cert_file = k->cert;
    opts.tls_key_file = k->key;
    opts.tls_sni = k->sni;
    opts.tls_insecure = k->insecure;
    c = client_with(&opts);
    rc = dlock_lock_acquire(&lock, c, "tls:lock", 30000, NULL);
    snprintf(msg, len, "%s", dlock_client_errmsg(c));
    if (rc == 0)
        assert_int_equal(dlock_lock_release(kept_lock(lock)), 0);
    return rc;
}

static void test_tls_verified_with_the_right_ca(void **state)
{
    char msg[512];
    (void)state;
    assert_int_equal(try_tls(&plain_tls, &(struct tls_case){.ca = ca}, msg, sizeof(msg)), 0);
}

static void test_tls_unknown_ca_refused(void **state)
{
    char msg[512];
    (void)state;
    assert_int_equal(try_tls(&plain_tls, &(struct tls_case){0}, msg, sizeof(msg)), DLOCK_ETLS);
    assert_non_null(strstr(msg, "certificate verification failed"));
}

static void test_tls_certificate_for_another_host_refused(void **state)
{
    char msg[512];
    (void)state;
    assert_int_equal(try_tls(&wrong_host, &(struct tls_case){.ca = ca}, msg, sizeof(msg)),
                     DLOCK_ETLS);
    assert_non_null(strstr(msg, "verification failed"));
    /* The name it is for, given as SNI/verify name, is accepted. */
    assert_int_equal(
        try_tls(&wrong_host, &(struct tls_case){.ca = ca, .sni = "other.example"}, msg, sizeof(msg)),
        0);
    /* And the insecure switch accepts anything. */
    assert_int_equal(try_tls(&wrong_host, &(struct tls_case){.insecure = 1}, msg, sizeof(msg)), 0);
}

static void test_tls_mutual(void **state)
{
    char msg[512];
    int rc;
    (void)state;
    assert_int_equal(try_tls(&mutual_tls,
                             &(struct tls_case){.ca = ca, .cert = client_crt, .key = client_key},
                             msg, sizeof(msg)),
                     0);
    rc = try_tls(&mutual_tls, &(struct tls_case){.ca = ca}, msg, sizeof(msg));
    if (rc != DLOCK_ETLS)
        fail_msg("without a client certificate: %s (%s)", dlock_err_name(rc), msg);
}

static void test_tls_bad_files_refused_at_open(void **state)
{
    const char *url = "rediss://127.0.0.1:1";
    dlock_client_options opts = client_options(&url, 1);
    dlock_client *c = NULL;
    char why[256];
    (void)state;
    opts.tls_ca_file = "/nonexistent/ca.crt";
    assert_int_equal(dlock_client_open(&c, &opts, why, sizeof(why)), DLOCK_ETLS);
    assert_null(c);
    assert_non_null(strstr(why, "CA"));
    opts.tls_ca_file = ca;
    opts.tls_cert_file = client_crt; /* with the wrong key */
    opts.tls_key_file = ca;
    assert_int_equal(dlock_client_open(&c, &opts, why, sizeof(why)), DLOCK_ETLS);
    assert_null(c);
}

static void test_tls_mixed_plain_and_tls_redlock(void **state)
{
    char tls_url[64], dead_url[64];
    /* With the third server down, the TLS one is needed for a majority. */
    const char *urls[3] = {tls_url, plain1.url, dead_url};
    dlock_client_options opts = client_options(urls, 3);
    dlock_client *c;
    dlock_lock *lock;
    status_view st;
    (void)state;
    snprintf(tls_url, sizeof(tls_url), "rediss://127.0.0.1:%d", plain_tls.port);
    snprintf(dead_url, sizeof(dead_url), "redis://127.0.0.1:%d", test_free_port());
    opts.tls_ca_file = ca;
    c = client_with(&opts);
    lock = take(c, "tls:mixed", 30000, NULL);
    assert_int_equal(status_of_node(&st, c, "tls:mixed", 0), 0); /* over TLS */
    assert_true(st.held);
    assert_int_equal(dlock_lock_release(lock), 0);
}

static void test_tls_command_flags(void **state)
{
    char url[64], wrong[64];
    cli_proc p;
    (void)state;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", plain_tls.port);
    snprintf(wrong, sizeof(wrong), "redis://127.0.0.1:%d", wrong_host.port);
    {
        const char *args[] = {"--tls", "--cacert", ca, "-r", url, "run", "tls:cli", "--", "true",
                              NULL};
        assert_int_equal(cli_run(&p, NULL, args, 10000), 0);
    }
    {
        const char *args[] = {"--tls", "-r", url, "status", "tls:cli", NULL};
        assert_int_equal(cli_run(&p, NULL, args, 10000), 77); /* system CAs do not know ours */
        assert_non_null(strstr(p.err, "verification failed"));
    }
    {
        const char *args[] = {"--tls", "--insecure", "-r", wrong, "status", "tls:cli", NULL};
        assert_int_equal(cli_run(&p, NULL, args, 10000), 1); /* free */
        assert_non_null(strstr(p.err, "insecure"));
    }
    {
        const char *args[] = {"--tls", "--cacert", ca, "--sni", "other.example", "-r", wrong,
                              "status", "tls:cli", NULL};
        assert_int_equal(cli_run(&p, NULL, args, 10000), 1);
    }
    {
        char mutual[64];
        const char *args[] = {"--cacert", ca, "--cert", client_crt, "--key", client_key, "-r",
                              mutual, "status", "tls:cli", NULL};
        snprintf(mutual, sizeof(mutual), "rediss://127.0.0.1:%d", mutual_tls.port);
        assert_int_equal(cli_run(&p, NULL, args, 10000), 1);
    }
}

int main(void)
{
#define T(name) cmocka_unit_test_teardown(name, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_tls_verified_with_the_right_ca),
        T(test_tls_unknown_ca_refused),
        T(test_tls_certificate_for_another_host_refused),
        T(test_tls_mutual),
        T(test_tls_bad_files_refused_at_open),
        T(test_tls_mixed_plain_and_tls_redlock),
        T(test_tls_command_flags),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
