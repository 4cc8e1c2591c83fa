/* A fake Redis on loopback that answers from a script: for conversations a
 * real server cannot be made to hold on cue (a lock busy on the first try
 * and free on the second, with nothing in between). It parses each
 * connection's RESP commands (pipelined ones too), one thread per
 * connection, and answers each command with:
 *   - the first unused step whose command and argument match, else
 *   - SCRIPT: a 40-hex bulk string (the client computes its SHAs itself),
 *   - SSUBSCRIBE / SUNSUBSCRIBE: one confirmation per channel, echoing it,
 *   - EVAL / EVALSHA: an error (no scripted reply: the test is wrong),
 *   - anything else: +OK.
 * It keeps the names of the commands it received, in order. Read the steps
 * and the log after script_server_stop(), which joins its threads. */
#ifndef TEST_SCRIPT_SERVER_H
#define TEST_SCRIPT_SERVER_H

#include <pthread.h>
#include <stddef.h>

#define SCRIPT_LOG_MAX 64
#define SCRIPT_CONNS_MAX 8

typedef struct script_step {
    const char *command; /* a name or its start: "EVAL" also matches EVALSHA */
    const char *arg;     /* a text one of the arguments contains; NULL: any */
    const char *reply;   /* RESP bytes, NUL-terminated */
    int seq;             /* its command's place in the log; -1 until answered */
    long long served_ms; /* test_now_ms() when answered */
} script_step;

typedef struct script_server {
    int listen_fd;
    int port;
    char url[64];
    script_step *steps;
    size_t n_steps;
    pthread_mutex_t mu; /* steps, log, connections */
    char log[SCRIPT_LOG_MAX][24];
    int n_log;
    int conn_fds[SCRIPT_CONNS_MAX];
    pthread_t conn_threads[SCRIPT_CONNS_MAX];
    size_t n_conns;
    pthread_t acceptor;
} script_server;

/* Serves `steps` (borrowed until stop) on a free loopback port. 0 or -1. */
int script_server_start(script_server *s, script_step *steps, size_t n_steps);

/* Closes every connection and joins the threads; once stopped, does
 * nothing. */
void script_server_stop(script_server *s);

/* The place in the log of the first command named `name`, or -1. */
int script_server_first(const script_server *s, const char *name);

/* The log as "NAME NAME ...", for failure messages. */
const char *script_server_log(const script_server *s, char *out, size_t len);

#endif
