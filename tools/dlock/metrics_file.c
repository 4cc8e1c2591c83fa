/* run --metrics-file FILE: the client's counters as Prometheus text when
 * dlock exits, for node_exporter's textfile collector. The file is replaced
 * at once (a temporary file in the same folder, written, synced, renamed
 * over it), so that a scrape never reads half of it; the temporary name
 * does not end in .prom, so the collector never reads the temporary. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int write_all(int fd, const char *s, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, s, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        s += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Makes the rename itself durable: fsync of the folder. */
static void sync_folder(const char *path)
{
    char *copy = strdup(path);
    int fd = copy ? open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(copy);
}

/* A new file of our own beside `path`; its name in tmp. */
static int create_temporary(const char *path, char *tmp, size_t len)
{
    int fd;
    snprintf(tmp, len, "%s.%ld.tmp", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0) /* left by a dead dlock of our pid */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    return fd;
}

int cli_write_metrics(dlock_client *client, const char *path)
{
    char tmp[4096], *text = NULL;
    int fd, rc;
    if (strlen(path) + 32 > sizeof(tmp)) {
        cli_error("--metrics-file %s: name too long", path);
        return -1;
    }
    if (dlock_client_metrics_text(&text, client) < 0) {
        cli_error("--metrics-file %s: out of memory", path);
        return -1;
    }
    fd = create_temporary(path, tmp, sizeof(tmp));
    if (fd < 0) {
        cli_error("--metrics-file %s: cannot create %s: %s", path, tmp, strerror(errno));
        dlock_metrics_free(text);
        return -1;
    }
    rc = write_all(fd, text, strlen(text));
    if (rc == 0)
        rc = fsync(fd);
    if (close(fd) < 0)
        rc = -1;
    if (rc == 0)
        rc = rename(tmp, path);
    if (rc < 0) {
        cli_error("--metrics-file %s: %s", path, strerror(errno));
        unlink(tmp);
    } else {
        sync_folder(path);
    }
    dlock_metrics_free(text);
    return rc;
}
