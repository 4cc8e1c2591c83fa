/* Real redis-server processes for the tests. See redis_server.h. */
#include "redis_server.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_TRIES 5
#define READY_WAIT_MS 10000

long long test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

long long test_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int test_slowdown(void)
{
    const char *s = getenv("DLOCK_TEST_SLOWDOWN");
    long n = s ? strtol(s, NULL, 10) : 1;
    return n > 0 && n < 100 ? (int)n : 1;
}

int test_listen_loopback(int *port, char *url, size_t url_len)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    snprintf(url, url_len, "redis://127.0.0.1:%d", *port);
    return fd;
}

int test_free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int port = -1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static void exec_server(const test_redis *r)
{
    char port[16], sock[160], log[160];
    const char *argv[24 + TEST_REDIS_MAX_ARGS];
    int n = 0, devnull;
    snprintf(port, sizeof(port), "%d", r->port);
    snprintf(sock, sizeof(sock), "%s/redis.sock", r->dir);
    snprintf(log, sizeof(log), "%s/redis.log", r->dir);
    const char *fixed[] = {"redis-server", "--port", port, "--bind", "127.0.0.1 -::1",
                           "--save", "", "--appendonly", "no", "--dir", r->dir,
                           "--unixsocket", sock, "--unixsocketperm", "700",
                           "--daemonize", "no", "--logfile", log, "--protected-mode", "no"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        argv[n++] = fixed[i];
    for (int i = 0; i < TEST_REDIS_MAX_ARGS && r->extra[i]; i++)
        argv[n++] = strcmp(r->extra[i], "{port}") == 0 ? port : r->extra[i];
    argv[n] = NULL;
    /* A test that dies must not leave its server behind, nor let the server
     * hold the test's output pipe open. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    execvp("redis-server", (char *const *)argv);
    _exit(127);
}

/* A TLS-only server does not answer plain PING: read its log instead. */
static int log_says_ready(const test_redis *r)
{
    char path[192], line[512];
    int ready = 0;
    FILE *f;
    snprintf(path, sizeof(path), "%s/redis.log", r->dir);
    f = fopen(path, "r");
    while (f && !ready && fgets(line, sizeof(line), f))
        ready = strstr(line, "Ready to accept connections") != NULL;
    if (f)
        fclose(f);
    return ready;
}

static int tls_only(const test_redis *r)
{
    for (int i = 0; i < TEST_REDIS_MAX_ARGS && r->extra[i]; i++)
        if (strcmp(r->extra[i], "--tls-port") == 0)
            return 1;
    return 0;
}

static int ping(const test_redis *r)
{
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    redisReply *reply;
    int ok;
    if (!c || c->err) {
        redisFree(c);
        return 0;
    }
    reply = redisCommand(c, "PING");
    /* A server with requirepass answers NOAUTH: it is up all the same. */
    ok = reply && (reply->type == REDIS_REPLY_STATUS ||
                   (reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "NOAUTH", 6) == 0));
    freeReplyObject(reply);
    redisFree(c);
    return ok;
}

/* Forks the server and waits until it answers. 0, or -1 if it exited. */
static int spawn(test_redis *r)
{
    long long deadline = test_now_ms() + (long long)READY_WAIT_MS * test_slowdown();
    r->pid = fork();
    if (r->pid < 0)
        return -1;
    if (r->pid == 0)
        exec_server(r);
    while (test_now_ms() < deadline) {
        int status;
        if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
            r->pid = 0;
            return -1;
        }
        if (tls_only(r) ? log_says_ready(r) : ping(r))
            return 0;
        usleep(10000);
    }
    test_redis_kill(r);
    return -1;
}

int test_redis_start(test_redis *r, const char *const *extra)
{
    memset(r, 0, sizeof(*r));
    for (int i = 0; extra && extra[i]; i++) {
        if (i == TEST_REDIS_MAX_ARGS - 1) { /* cut short, the server would differ */
            fprintf(stderr, "test_redis_start: more than %d arguments\n", TEST_REDIS_MAX_ARGS - 1);
            return -1;
        }
        r->extra[i] = extra[i];
    }
    snprintf(r->dir, sizeof(r->dir), "/tmp/dlock-test-XXXXXX");
    if (!mkdtemp(r->dir)) {
        perror("mkdtemp");
        return -1;
    }
    for (int attempt = 0; attempt < START_TRIES; attempt++) {
        r->port = test_free_port();
        snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", r->port);
        snprintf(r->unix_url, sizeof(r->unix_url), "unix://%s/redis.sock", r->dir);
        if (spawn(r) == 0)
            return 0;
    }
    fprintf(stderr, "cannot start redis-server (see %s/redis.log)\n", r->dir);
    return -1;
}

int test_redis_restart(test_redis *r)
{
    char log[192];
    if (r->pid > 0)
        test_redis_kill(r);
    snprintf(log, sizeof(log), "%s/redis.log", r->dir);
    unlink(log); /* the readiness check of a TLS server reads it */
    return spawn(r);
}

void test_redis_kill(test_redis *r)
{
    if (r->pid <= 0)
        return;
    kill(r->pid, SIGKILL);
    while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    r->pid = 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    remove(path);
    return 0; /* what cannot be removed stays: go on with the rest */
}

void test_redis_stop(test_redis *r)
{
    if (r->pid > 0) {
        kill(r->pid, SIGCONT);
        kill(r->pid, SIGTERM);
        while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        r->pid = 0;
    }
    if (!r->dir[0])
        return;
    /* The directory is the test's alone: besides the server's log and
     * socket, it holds the tests' scratch files and whatever the server
     * wrote (an appendonlydir). */
    nftw(r->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    r->dir[0] = '\0';
}

void test_redis_pause(test_redis *r)
{
    kill(r->pid, SIGSTOP);
}

void test_redis_resume(test_redis *r)
{
    kill(r->pid, SIGCONT);
}

redisContext *test_redis_connect(const test_redis *r, const char *password)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    if (!c || c->err) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (password) {
        redisReply *reply = redisCommand(c, "AUTH %s", password);
        freeReplyObject(reply);
    }
    return c;
}

int test_redis_start_all(test_redis *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (test_redis_start(&r[i], NULL) < 0)
            return -1;
    return 0;
}

void test_redis_stop_all(test_redis *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        test_redis_stop(&r[i]);
}
