/* A scripted TCP server on loopback. See fake_server.h. Commands are
 * counted naively (lines that start with '*'): good enough for ours. */
#include "fake_server.h"

#include "redis_server.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void serve_connection(fake_server *s, int fd)
{
    char buf[65536];
    for (;;) {
        struct pollfd p[2] = {{fd, POLLIN, 0}, {s->listen_fd, POLLIN, 0}};
        ssize_t n;
        if (poll(p, 2, 5000) <= 0 || (p[1].revents & (POLLHUP | POLLERR | POLLNVAL)))
            return;
        if (!(p[0].revents & POLLIN))
            return; /* a new connection is waiting: this client is done */
        n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0)
            return;
        /* One reply per command read: a command is a line starting '*'. */
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '*' || (i > 0 && buf[i - 1] != '\n'))
                continue;
            if (send(fd, s->reply, s->reply_len, MSG_NOSIGNAL) < 0 || s->close_after_reply)
                return;
        }
    }
}

static void *serve(void *arg)
{
    fake_server *s = arg;
    for (;;) {
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL; /* listening socket shut down */
        }
        serve_connection(s, fd);
        close(fd);
    }
}

int fake_server_start(fake_server *s, const char *reply, size_t len, bool close_after_reply)
{
    memset(s, 0, sizeof(*s));
    s->reply = reply;
    s->reply_len = len;
    s->close_after_reply = close_after_reply;
    s->listen_fd = test_listen_loopback(&s->port, s->url, sizeof(s->url));
    if (s->listen_fd < 0)
        return -1;
    return pthread_create(&s->thread, NULL, serve, s) == 0 ? 0 : -1;
}

void fake_server_stop(fake_server *s)
{
    shutdown(s->listen_fd, SHUT_RDWR);
    pthread_join(s->thread, NULL);
    close(s->listen_fd);
}
