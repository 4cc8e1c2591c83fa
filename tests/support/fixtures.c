/* What the tests start around the library. See fixtures.h. */
#include "fixtures.h"

#include "cleanup.h"
#include "files.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- Servers and connections ---- */

struct servers {
    size_t n;
    test_redis r[];
};

static void stop_servers(void *first)
{
    struct servers *s = (struct servers *)((char *)first - offsetof(struct servers, r));
    test_redis_stop_all(s->r, s->n);
    free(s);
}

/* Room for n servers, kept by the first one's address. */
static test_redis *kept_servers(size_t n)
{
    struct servers *s = calloc(1, sizeof(*s) + n * sizeof(s->r[0]));
    assert_non_null(s);
    s->n = n;
    return cleanup_keep(s->r, stop_servers);
}

/* n servers, each with `extra`. */
static test_redis *start_with(size_t n, const char *const *extra)
{
    test_redis *r = kept_servers(n);
    for (size_t i = 0; i < n; i++)
        if (test_redis_start(&r[i], extra) != 0)
            fail_msg("cannot start redis-server %zu of %zu", i + 1, n);
    return r;
}

test_redis *start_servers(size_t n)
{
    return start_with(n, NULL);
}

test_redis *start_server(const char *const *extra)
{
    return start_with(1, extra);
}

static void remove_file(void *path)
{
    unlink(path);
    free(path);
}

test_redis *start_shifted_server(const char *shim, char *shift_file, size_t len, long shift_ms)
{
    test_redis *r = kept_servers(1);
    int fd, rc;
    snprintf(shift_file, len, "/tmp/dlock-test-shift-XXXXXX");
    fd = mkstemp(shift_file);
    assert_true(fd >= 0);
    close(fd);
    cleanup_keep(strdup(shift_file), remove_file);
    write_number_file(shift_file, shift_ms);
    /* Only this server is preloaded: the environment is put back before
     * anything can fail. */
    setenv("LD_PRELOAD", shim, 1);
    setenv("DLOCK_CLOCK_SHIFT_FILE", shift_file, 1);
    rc = test_redis_start(r, NULL);
    unsetenv("LD_PRELOAD");
    unsetenv("DLOCK_CLOCK_SHIFT_FILE");
    if (rc != 0)
        fail_msg("cannot start redis-server with the clock shim %s", shim);
    return r;
}

static void free_connection(void *c)
{
    redisFree(c);
}

redisContext *connect_to(const test_redis *server)
{
    redisContext *c = test_redis_connect(server, NULL);
    if (!c)
        fail_msg("cannot connect to %s", server->url);
    return cleanup_keep(c, free_connection);
}

static void stop_proxy(void *proxy)
{
    fault_proxy_stop(proxy);
}

fault_proxy *start_proxy(int port, char *url, size_t url_len)
{
    fault_proxy *proxy = fault_proxy_start(port);
    if (!proxy)
        fail_msg("cannot start a fault proxy for port %d", port);
    snprintf(url, url_len, "redis://127.0.0.1:%d", fault_proxy_port(proxy));
    return cleanup_keep(proxy, stop_proxy);
}

/* ---- Processes ---- */

/* A command cli_wait() did not collect is killed, not drained: what it
 * left running may hold its pipes open for long. */
static void stop_cli(void *arg)
{
    cli_proc *p = arg;
    if (p->out_fd >= 0 || p->err_fd >= 0) {
        kill(p->pid, SIGKILL);
        if (p->out_fd >= 0)
            close(p->out_fd);
        if (p->err_fd >= 0)
            close(p->err_fd);
        while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    free(p);
}

cli_proc *start_cli(const char *url, const char *const *args, const char *const *env)
{
    cli_proc *p = malloc(sizeof(*p));
    assert_non_null(p);
    if (cli_start(p, url, args, env) != 0) {
        free(p);
        fail_msg("cannot start dlock %s", args[0]);
        return NULL; /* cmocka fails return, as far as the analyser knows */
    }
    return cleanup_keep(p, stop_cli);
}

struct child {
    pid_t pid;
    int reaped;
    struct child *next;
};

static struct child *children; /* forked by the test's thread only */

static void stop_child(void *arg)
{
    struct child *c = arg, **at = &children;
    if (!c->reaped) {
        kill(c->pid, SIGKILL);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    while (*at != c)
        at = &(*at)->next;
    *at = c->next;
    free(c);
}

pid_t fork_child(void)
{
    struct child *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->pid = fork();
    if (c->pid <= 0) {
        pid_t pid = c->pid;
        free(c);
        assert_true(pid == 0);
        return 0;
    }
    c->next = children;
    children = c;
    cleanup_keep(c, stop_child);
    return c->pid;
}

static struct child *child_of(pid_t pid)
{
    struct child *c = children;
    while (c && c->pid != pid)
        c = c->next;
    assert_non_null(c);
    return c;
}

int wait_child(pid_t pid)
{
    struct child *c = child_of(pid);
    int status = -1;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    c->reaped = 1;
    return status;
}

int wait_child_within(pid_t pid, int within_ms)
{
    struct child *c = child_of(pid);
    long long until = test_now_ms() + (long long)within_ms * test_slowdown();
    int status, code = -1;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (test_now_ms() >= until) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            c->reaped = 1;
            return -1;
        }
        usleep(10000);
    }
    c->reaped = 1;
    code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    return code;
}

/* ---- Scripted servers ---- */

static void stop_fake(void *fake)
{
    fake_server_stop(fake);
    free(fake);
}

fake_server *start_fake_server(const char *reply, size_t len, bool close_after_reply)
{
    fake_server *fake = malloc(sizeof(*fake));
    assert_non_null(fake);
    if (fake_server_start(fake, reply, len, close_after_reply) != 0) {
        free(fake);
        fail_msg("cannot start a fake server");
        return NULL; /* cmocka fails return, as far as the analyser knows */
    }
    return cleanup_keep(fake, stop_fake);
}

static void stop_script(void *script)
{
    script_server_stop(script);
    free(script);
}

script_server *start_script_server(script_step *steps, size_t n_steps)
{
    script_server *s = malloc(sizeof(*s));
    assert_non_null(s);
    if (script_server_start(s, steps, n_steps) != 0) {
        free(s);
        fail_msg("cannot start a scripted server");
        return NULL; /* cmocka fails return, as far as the analyser knows */
    }
    return cleanup_keep(s, stop_script);
}

/* ---- What the test got otherwise ---- */

char *kept_string(char *s)
{
    return cleanup_keep(s, free);
}

static void free_reply(void *r)
{
    freeReplyObject(r);
}

redisReply *kept_reply(redisReply *r)
{
    return cleanup_keep(r, free_reply);
}

static void close_fd(void *fd)
{
    close(*(int *)fd);
    free(fd);
}

int kept_fd(int fd)
{
    int *kept;
    if (fd < 0)
        return fd;
    kept = malloc(sizeof(*kept));
    if (!kept) {
        close(fd);
        fail_msg("out of memory");
        return -1; /* cmocka fails return, as far as the analyser knows */
    }
    *kept = fd;
    cleanup_keep(kept, close_fd);
    return fd;
}

/* ---- cmocka fixtures ---- */

test_redis group_server;

int group_setup_server(void **state)
{
    (void)state;
    return test_redis_start(&group_server, NULL);
}

int group_teardown_server(void **state)
{
    (void)state;
    cleanup_run(); /* what a failed setup kept */
    test_redis_stop(&group_server);
    return 0;
}

int setup_group_redis(void **state)
{
    *state = connect_to(&group_server);
    return 0;
}

int setup_server(void **state)
{
    *state = start_server(NULL);
    return 0;
}
