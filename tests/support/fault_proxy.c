/* The fault proxy. See fault_proxy.h. */
#include "fault_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAIRS 256
#define CHUNK 16384

struct chunk {
    struct chunk *next;
    int64_t due_ns;
    size_t len, off;
    char data[];
};

/* Bytes read from one side, waiting to be written to the other. */
struct queue {
    struct chunk *head, *tail;
};

struct pair {
    int fd[2]; /* 0: the client, 1: the server */
    struct queue to[2]; /* to[i]: bytes for fd[i] */
    bool lost; /* bytes were dropped: the streams are broken */
};

struct fault_proxy {
    int listen_fd, port, target_port;
    int wake[2];
    pthread_t thread;
    pthread_mutex_t mutex;
    pthread_cond_t applied_cond;
    enum fault_mode mode; /* with the mutex */
    int delay_ms;
    bool stop;
    unsigned generation, applied; /* mode changes asked for, and taken in */
    atomic_ullong hits;
    struct pair pairs[MAX_PAIRS]; /* the thread's own */
    size_t n_pairs;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void queue_clear(struct queue *q)
{
    while (q->head) {
        struct chunk *c = q->head;
        q->head = c->next;
        free(c);
    }
    q->tail = NULL;
}

/* Closes both sides; `reset` sends RST instead of FIN. */
static void close_pair(fault_proxy *p, size_t i, bool reset)
{
    struct pair *pr = &p->pairs[i];
    for (int s = 0; s < 2; s++) {
        if (reset) {
            struct linger lg = {1, 0};
            setsockopt(pr->fd[s], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        }
        close(pr->fd[s]);
        queue_clear(&pr->to[s]);
    }
    p->pairs[i] = p->pairs[--p->n_pairs];
}

static void reset_all(fault_proxy *p, bool only_lost)
{
    for (size_t i = p->n_pairs; i-- > 0;) {
        if (only_lost && !p->pairs[i].lost)
            continue;
        close_pair(p, i, true);
        atomic_fetch_add(&p->hits, 1);
    }
}

static void accept_client(fault_proxy *p, enum fault_mode mode)
{
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->target_port)};
    int one = 1, client = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), server;
    if (client < 0)
        return;
    if (mode == FAULT_RESET || p->n_pairs == MAX_PAIRS) {
        struct linger lg = {1, 0};
        setsockopt(client, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        close(client);
        atomic_fetch_add(&p->hits, 1);
        return;
    }
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (server < 0 || connect(server, (struct sockaddr *)&to, sizeof(to)) < 0) {
        if (server >= 0)
            close(server);
        close(client);
        return;
    }
    fcntl(server, F_SETFL, O_NONBLOCK);
    setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    p->pairs[p->n_pairs++] = (struct pair){.fd = {client, server}};
}

/* Reads from side `s` of pair `i`; returns false when the pair is gone. */
static bool read_side(fault_proxy *p, size_t i, int s, enum fault_mode mode, int delay_ms)
{
    struct pair *pr = &p->pairs[i];
    struct chunk *c = malloc(sizeof(*c) + CHUNK);
    ssize_t n;
    if (!c)
        return true;
    n = recv(pr->fd[s], c->data, CHUNK, 0);
    if (n <= 0) {
        free(c);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return true;
        close_pair(p, i, false);
        return false;
    }
    if (mode != FAULT_PASS)
        atomic_fetch_add(&p->hits, (unsigned long long)n);
    if (mode == FAULT_DROP) {
        pr->lost = true;
        free(c);
        return true;
    }
    c->next = NULL;
    c->len = (size_t)n;
    c->off = 0;
    c->due_ns = now_ns() + (mode == FAULT_DELAY ? (int64_t)delay_ms * 1000000 : 0);
    if (pr->to[!s].tail)
        pr->to[!s].tail->next = c;
    else
        pr->to[!s].head = c;
    pr->to[!s].tail = c;
    return true;
}

/* Writes what is due to side `s`; returns false when the pair is gone. */
static bool write_side(fault_proxy *p, size_t i, int s, int64_t now)
{
    struct pair *pr = &p->pairs[i];
    struct queue *q = &pr->to[s];
    while (q->head && q->head->due_ns <= now) {
        struct chunk *c = q->head;
        ssize_t n = send(pr->fd[s], c->data + c->off, c->len - c->off, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return true;
        if (n < 0) {
            close_pair(p, i, false);
            return false;
        }
        c->off += (size_t)n;
        if (c->off < c->len)
            return true;
        q->head = c->next;
        if (!q->head)
            q->tail = NULL;
        free(c);
    }
    return true;
}

/* Milliseconds until the next delayed chunk is due; -1: none. */
static int next_due_ms(const fault_proxy *p, int64_t now)
{
    int64_t soonest = INT64_MAX;
    for (size_t i = 0; i < p->n_pairs; i++)
        for (int s = 0; s < 2; s++)
            if (p->pairs[i].to[s].head && p->pairs[i].to[s].head->due_ns < soonest)
                soonest = p->pairs[i].to[s].head->due_ns;
    if (soonest == INT64_MAX)
        return -1;
    return soonest <= now ? 0 : (int)((soonest - now) / 1000000 + 1);
}

static void *run(void *arg)
{
    fault_proxy *p = arg;
    struct pollfd fds[2 + 2 * MAX_PAIRS];
    enum fault_mode last = FAULT_PASS;
    for (;;) {
        enum fault_mode mode;
        int delay_ms, timeout;
        size_t n_pairs;
        int64_t now;

        pthread_mutex_lock(&p->mutex);
        mode = p->mode;
        delay_ms = p->delay_ms;
        if (p->stop) {
            pthread_mutex_unlock(&p->mutex);
            return NULL;
        }
        if (mode != last && (mode == FAULT_RESET || last == FAULT_DROP))
            reset_all(p, mode != FAULT_RESET);
        last = mode;
        p->applied = p->generation;
        pthread_cond_broadcast(&p->applied_cond);
        pthread_mutex_unlock(&p->mutex);

        now = now_ns();
        for (size_t i = p->n_pairs; mode != FAULT_BLACKHOLE && i-- > 0;)
            if (write_side(p, i, 0, now) && i < p->n_pairs)
                write_side(p, i, 1, now);
        timeout = mode == FAULT_BLACKHOLE ? -1 : next_due_ms(p, now);

        fds[0] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
        fds[1] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
        n_pairs = p->n_pairs;
        for (size_t i = 0; i < n_pairs; i++)
            for (int s = 0; s < 2; s++)
                fds[2 + 2 * i + (size_t)s] = (struct pollfd){
                    .fd = p->pairs[i].fd[s],
                    .events = (short)(POLLIN | (p->pairs[i].to[s].head && mode != FAULT_BLACKHOLE
                                                    ? POLLOUT
                                                    : 0))};
        if (poll(fds, 2 + 2 * n_pairs, timeout) < 0 && errno != EINTR)
            return NULL;
        if (fds[0].revents) {
            char buf[64];
            while (read(p->wake[0], buf, sizeof(buf)) > 0)
                ;
        }
        /* Backwards: closing a pair moves the last one into its place. */
        for (size_t i = n_pairs; i-- > 0;)
            for (int s = 0; s < 2; s++)
                if ((fds[2 + 2 * i + (size_t)s].revents & (POLLIN | POLLHUP | POLLERR)) &&
                    !read_side(p, i, s, mode, delay_ms))
                    break;
        if (fds[1].revents & POLLIN)
            accept_client(p, mode);
    }
}

fault_proxy *fault_proxy_start(int target_port)
{
    fault_proxy *p = calloc(1, sizeof(*p));
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t len = sizeof(addr);
    if (!p)
        return NULL;
    p->target_port = target_port;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
        listen(p->listen_fd, 128) < 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&addr, &len) < 0 ||
        pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) < 0) {
        perror("fault proxy");
        if (p->listen_fd >= 0)
            close(p->listen_fd);
        free(p);
        return NULL;
    }
    p->port = ntohs(addr.sin_port);
    pthread_mutex_init(&p->mutex, NULL);
    pthread_cond_init(&p->applied_cond, NULL);
    if (pthread_create(&p->thread, NULL, run, p) != 0) {
        perror("fault proxy thread");
        close(p->listen_fd);
        close(p->wake[0]);
        close(p->wake[1]);
        free(p);
        return NULL;
    }
    return p;
}

int fault_proxy_port(const fault_proxy *p)
{
    return p->port;
}

static void wake(fault_proxy *p)
{
    ssize_t ignored = write(p->wake[1], "x", 1);
    (void)ignored;
}

void fault_proxy_set(fault_proxy *p, enum fault_mode mode, int delay_ms)
{
    unsigned wanted;
    pthread_mutex_lock(&p->mutex);
    p->mode = mode;
    p->delay_ms = delay_ms;
    wanted = ++p->generation;
    wake(p);
    /* In force when this returns: a test's next packet meets the new mode. */
    while ((int)(p->applied - wanted) < 0)
        pthread_cond_wait(&p->applied_cond, &p->mutex);
    pthread_mutex_unlock(&p->mutex);
}

unsigned long long fault_proxy_hits(const fault_proxy *p)
{
    return atomic_load(&p->hits);
}

void fault_proxy_stop(fault_proxy *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mutex);
    p->stop = true;
    pthread_mutex_unlock(&p->mutex);
    wake(p);
    pthread_join(p->thread, NULL);
    while (p->n_pairs)
        close_pair(p, p->n_pairs - 1, false);
    close(p->listen_fd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_cond_destroy(&p->applied_cond);
    pthread_mutex_destroy(&p->mutex);
    free(p);
}
