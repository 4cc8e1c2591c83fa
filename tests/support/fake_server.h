/* A scripted TCP server on loopback that answers every command with the
 * same bytes: for replies a real Redis would not send. */
#ifndef TEST_FAKE_SERVER_H
#define TEST_FAKE_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct fake_server {
    int listen_fd;
    int port;
    char url[64];
    const char *reply; /* sent after each read */
    size_t reply_len;
    bool close_after_reply;
    pthread_t thread;
} fake_server;

/* Starts serving `reply` (of `len` bytes) on a free loopback port. */
int fake_server_start(fake_server *s, const char *reply, size_t len, bool close_after_reply);
void fake_server_stop(fake_server *s);

#endif
