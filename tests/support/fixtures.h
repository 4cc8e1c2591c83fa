/* What the tests start around the library, kept until teardown
 * (cleanup.h): redis-servers, plain connections, fault proxies, scripted
 * servers, dlock commands and other child processes; and the cmocka
 * fixtures of one server per file or per test. */
#ifndef TEST_FIXTURES_H
#define TEST_FIXTURES_H

#include "cli_runner.h"
#include "fake_server.h"
#include "fault_proxy.h"
#include "redis_server.h"
#include "script_server.h"

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* n servers of the test's own, without extra arguments. */
test_redis *start_servers(size_t n);

/* One, with the extra arguments `extra` (NULL-terminated, or NULL). */
test_redis *start_server(const char *const *extra);

/* One whose clock the clock shim `shim` (tests/chaos/clock_shift.c)
 * moves by the milliseconds in `shift_file` (its path into that buffer;
 * write_number_file() there changes the shift; removed at teardown),
 * `shift_ms` to begin with. */
test_redis *start_shifted_server(const char *shim, char *shift_file, size_t len, long shift_ms);

/* A plain hiredis connection to `server`, for checking what the library
 * did. */
redisContext *connect_to(const test_redis *server);

/* A fault proxy in front of 127.0.0.1:`port`; its URL into url. */
fault_proxy *start_proxy(int port, char *url, size_t url_len);

/* `dlock ARGS...` started as cli_start() does; killed at teardown unless
 * cli_wait() collected it. */
cli_proc *start_cli(const char *url, const char *const *args, const char *const *env);

/* fork(), the child killed and reaped at teardown unless wait_child()
 * reaped it. Returns what fork() returns. */
pid_t fork_child(void);

/* Waits for a child of fork_child(); its wait status. */
int wait_child(pid_t pid);

/* The same for at most `within_ms` (times the slowdown): its exit status
 * (128 + signal), or -1 if it was still running (it is killed then). */
int wait_child_within(pid_t pid, int within_ms);

/* A server that answers every command with `reply` (fake_server.h). */
fake_server *start_fake_server(const char *reply, size_t len, bool close_after_reply);

/* A server that answers from `steps` (script_server.h), which must outlive
 * it; script_server_stop() may come first, to read its log. */
script_server *start_script_server(script_step *steps, size_t n_steps);

/* Keeps what the test got otherwise, given back (free(),
 * freeReplyObject(), close()) at teardown. kept_fd() returns `fd`, which
 * may be -1 (not kept). */
char *kept_string(char *s);
redisReply *kept_reply(redisReply *r);
int kept_fd(int fd);

/* cmocka group setup/teardown: one redis-server, group_server, shared by
 * the tests of a file. */
extern test_redis group_server;
int group_setup_server(void **state);
int group_teardown_server(void **state);

/* cmocka setups, with cleanup_teardown: a plain connection to
 * group_server in *state; a redis-server of the test's own in *state. */
int setup_group_redis(void **state);
int setup_server(void **state);

#endif
