/* Real redis-server processes for the tests: started on a free loopback port
 * in a temp dir, stopped, paused, killed and restarted by pid. */
#ifndef TEST_REDIS_SERVER_H
#define TEST_REDIS_SERVER_H

#include <hiredis/hiredis.h>
#include <sys/types.h>

#define TEST_REDIS_MAX_ARGS 192

typedef struct test_redis {
    pid_t pid;
    int port;
    char dir[128];
    char url[96];      /* redis://127.0.0.1:PORT */
    char unix_url[192]; /* unix://DIR/redis.sock */
    const char *extra[TEST_REDIS_MAX_ARGS]; /* more redis-server arguments */
} test_redis;

/* Starts a server (extra: NULL-terminated list of arguments, or NULL; an
 * argument "{port}" becomes the chosen port, for --tls-port). Returns 0, or
 * -1 after printing why. */
int test_redis_start(test_redis *r, const char *const *extra);

/* Starts the server again on the same port, with the same arguments and an
 * empty data set. */
int test_redis_restart(test_redis *r);

/* SIGKILL, and waits until the pid is gone. */
void test_redis_kill(test_redis *r);

/* Starts n servers without extra arguments; 0, or -1 after printing why. */
int test_redis_start_all(test_redis *r, size_t n);

/* test_redis_stop() for each of n servers. */
void test_redis_stop_all(test_redis *r, size_t n);

/* Stops the server (if running) and removes its directory with everything
 * in it (scratch files of the tests included). */
void test_redis_stop(test_redis *r);

void test_redis_pause(test_redis *r);  /* SIGSTOP */
void test_redis_resume(test_redis *r); /* SIGCONT */

/* A plain hiredis connection for checking what the library did; NULL on
 * failure. Use password NULL for none. */
redisContext *test_redis_connect(const test_redis *r, const char *password);

/* A TCP socket listening on a free loopback port, its port in *port and
 * "redis://127.0.0.1:PORT" in `url`; -1 on failure. For scripted servers. */
int test_listen_loopback(int *port, char *url, size_t url_len);

/* A free loopback TCP port (bound and released: good enough in tests). */
int test_free_port(void);

/* Milliseconds on the monotonic clock. */
long long test_now_ms(void);

/* Milliseconds on the wall clock, which the servers' TIME reads too. */
long long test_wall_ms(void);

/* How much slower sanitizers and valgrind make us: multiply upper bounds. */
int test_slowdown(void);

#endif
