/* A fake Redis that answers from a script. See script_server.h. */
#include "script_server.h"

#include "redis_server.h"

#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define ARGS_MAX 16
#define INPUT_MAX ((size_t)256 * 1024) /* SCRIPT LOAD carries whole scripts */

struct command {
    int argc;
    const char *argv[ARGS_MAX];
    size_t len[ARGS_MAX];
};

struct connection {
    script_server *s;
    int fd;
    int subscriptions; /* the count a (un)subscribe confirmation reports */
};

/* Reads "<prefix><number>\r\n" at buf + *at. 1: read, 0: incomplete,
 * -1: not RESP. */
static int read_header(const char *buf, size_t len, size_t *at, char prefix, long *value)
{
    const char *end;
    char *stop;
    if (*at >= len)
        return 0;
    if (buf[*at] != prefix)
        return -1;
    end = memmem(buf + *at, len - *at, "\r\n", 2);
    if (!end)
        return 0;
    *value = strtol(buf + *at + 1, &stop, 10);
    if (stop != end || *value < 0)
        return -1;
    *at = (size_t)(end - buf) + 2;
    return 1;
}

/* The command (a multi-bulk array) at the start of buf: the bytes it takes,
 * 0 if it is not all there yet, -1 if it is not RESP. */
static long parse_command(const char *buf, size_t len, struct command *cmd)
{
    size_t at = 0;
    long n, arg_len;
    int rc = read_header(buf, len, &at, '*', &n);
    if (rc <= 0)
        return rc;
    if (n < 1 || n > ARGS_MAX)
        return -1;
    cmd->argc = (int)n;
    for (int i = 0; i < cmd->argc; i++) {
        rc = read_header(buf, len, &at, '$', &arg_len);
        if (rc <= 0)
            return rc;
        if (len - at < (size_t)arg_len + 2)
            return 0;
        cmd->argv[i] = buf + at;
        cmd->len[i] = (size_t)arg_len;
        at += (size_t)arg_len + 2;
    }
    return (long)at;
}

static int send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static int name_is(const struct command *cmd, const char *name)
{
    return cmd->len[0] == strlen(name) && strncasecmp(cmd->argv[0], name, cmd->len[0]) == 0;
}

static int step_matches(const script_step *st, const struct command *cmd)
{
    size_t n = strlen(st->command);
    if (st->seq >= 0 || cmd->len[0] < n || strncasecmp(cmd->argv[0], st->command, n) != 0)
        return 0;
    if (!st->arg)
        return 1;
    for (int i = 1; i < cmd->argc; i++)
        if (memmem(cmd->argv[i], cmd->len[i], st->arg, strlen(st->arg)))
            return 1;
    return 0;
}

/* Logs the command and takes the first step it matches: its reply, or
 * NULL. */
static const char *take_step(script_server *s, const struct command *cmd)
{
    const char *reply = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->n_log < SCRIPT_LOG_MAX) {
        size_t n = cmd->len[0] < sizeof(s->log[0]) - 1 ? cmd->len[0] : sizeof(s->log[0]) - 1;
        for (size_t i = 0; i < n; i++)
            s->log[s->n_log][i] = (char)toupper((unsigned char)cmd->argv[0][i]);
        s->log[s->n_log][n] = '\0';
    }
    for (size_t i = 0; i < s->n_steps && !reply; i++) {
        if (step_matches(&s->steps[i], cmd)) {
            s->steps[i].seq = s->n_log;
            s->steps[i].served_ms = test_now_ms();
            reply = s->steps[i].reply;
        }
    }
    s->n_log++;
    pthread_mutex_unlock(&s->mu);
    return reply;
}

/* One confirmation per channel, as Redis sends them. */
static int confirm_channels(struct connection *c, const struct command *cmd, const char *kind,
                            int delta)
{
    for (int i = 1; i < cmd->argc; i++) {
        char head[64], tail[32];
        c->subscriptions += delta;
        snprintf(head, sizeof(head), "*3\r\n$%zu\r\n%s\r\n$%zu\r\n", strlen(kind), kind,
                 cmd->len[i]);
        snprintf(tail, sizeof(tail), "\r\n:%d\r\n", c->subscriptions);
        if (send_all(c->fd, head, strlen(head)) < 0 ||
            send_all(c->fd, cmd->argv[i], cmd->len[i]) < 0 ||
            send_all(c->fd, tail, strlen(tail)) < 0)
            return -1;
    }
    return 0;
}

static int answer(struct connection *c, const struct command *cmd)
{
    static const char sha[] = "$40\r\n0123456789abcdef0123456789abcdef01234567\r\n";
    static const char unscripted[] = "-ERR the test scripted no reply to this\r\n";
    const char *reply = take_step(c->s, cmd);
    if (reply)
        return send_all(c->fd, reply, strlen(reply));
    if (name_is(cmd, "SCRIPT"))
        return send_all(c->fd, sha, strlen(sha));
    if (name_is(cmd, "SSUBSCRIBE"))
        return confirm_channels(c, cmd, "ssubscribe", 1);
    if (name_is(cmd, "SUNSUBSCRIBE"))
        return confirm_channels(c, cmd, "sunsubscribe", -1);
    if (name_is(cmd, "EVAL") || name_is(cmd, "EVALSHA"))
        return send_all(c->fd, unscripted, strlen(unscripted));
    return send_all(c->fd, "+OK\r\n", 5);
}

static void *serve_connection(void *arg)
{
    struct connection *c = arg;
    char *buf = malloc(INPUT_MAX);
    size_t used = 0;
    long took = 0;
    while (buf && took >= 0 && used < INPUT_MAX) {
        struct command cmd;
        ssize_t n = recv(c->fd, buf + used, INPUT_MAX - used, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
        /* Pipelined commands arrive together: answer each in turn. */
        while ((took = parse_command(buf, used, &cmd)) > 0) {
            if (answer(c, &cmd) < 0) {
                took = -1;
                break;
            }
            memmove(buf, buf + took, used - (size_t)took);
            used -= (size_t)took;
        }
    }
    free(buf);
    free(c);
    return NULL;
}

/* Starts a connection's thread; the descriptor is closed by stop. */
static void add_connection(script_server *s, int fd)
{
    struct connection *c = calloc(1, sizeof(*c));
    pthread_mutex_lock(&s->mu);
    if (c && s->n_conns < SCRIPT_CONNS_MAX) {
        c->s = s;
        c->fd = fd;
        if (pthread_create(&s->conn_threads[s->n_conns], NULL, serve_connection, c) == 0) {
            s->conn_fds[s->n_conns++] = fd;
            c = NULL;
            fd = -1;
        }
    }
    pthread_mutex_unlock(&s->mu);
    free(c);
    if (fd >= 0)
        close(fd);
}

static void *accept_connections(void *arg)
{
    script_server *s = arg;
    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
            continue;
        if (fd < 0)
            return NULL; /* the listening socket was shut down */
        add_connection(s, fd);
    }
}

int script_server_start(script_server *s, script_step *steps, size_t n_steps)
{
    memset(s, 0, sizeof(*s));
    s->steps = steps;
    s->n_steps = n_steps;
    for (size_t i = 0; i < n_steps; i++)
        steps[i].seq = -1;
    pthread_mutex_init(&s->mu, NULL);
    s->listen_fd = test_listen_loopback(&s->port, s->url, sizeof(s->url));
    if (s->listen_fd < 0)
        return -1;
    return pthread_create(&s->acceptor, NULL, accept_connections, s) == 0 ? 0 : -1;
}

void script_server_stop(script_server *s)
{
    if (s->listen_fd < 0)
        return;
    shutdown(s->listen_fd, SHUT_RDWR);
    pthread_join(s->acceptor, NULL);
    for (size_t i = 0; i < s->n_conns; i++) {
        shutdown(s->conn_fds[i], SHUT_RDWR);
        pthread_join(s->conn_threads[i], NULL);
        close(s->conn_fds[i]);
    }
    close(s->listen_fd);
    s->listen_fd = -1;
    pthread_mutex_destroy(&s->mu);
}

int script_server_first(const script_server *s, const char *name)
{
    for (int i = 0; i < s->n_log && i < SCRIPT_LOG_MAX; i++)
        if (strcmp(s->log[i], name) == 0)
            return i;
    return -1;
}

const char *script_server_log(const script_server *s, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < s->n_log && i < SCRIPT_LOG_MAX && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", i ? " " : "", s->log[i]);
    return out;
}
