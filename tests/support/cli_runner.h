/* Runs the built dlock command as a child process and collects its output
 * and exit status. */
#ifndef TEST_CLI_RUNNER_H
#define TEST_CLI_RUNNER_H

#include <sys/types.h>

#define CLI_OUTPUT_MAX 16384

typedef struct cli_proc {
    pid_t pid;
    int out_fd, err_fd;
    int status;        /* exit code, or 128 + signal */
    char out[CLI_OUTPUT_MAX];
    char err[CLI_OUTPUT_MAX];
    long long took_ms;
    long long started_ms;
} cli_proc;

/* Starts `dlock ARGS...` (args NULL-terminated, without "dlock") with
 * DLOCK_REDIS=redis_url (NULL: unset) and the extra "NAME=value" entries of
 * env (NULL-terminated, may be NULL). Returns 0 or -1. */
int cli_start(cli_proc *p, const char *redis_url, const char *const *args,
              const char *const *env);

/* Waits for it (at most timeout_ms, then SIGKILL) and collects its output.
 * Returns its status. */
int cli_wait(cli_proc *p, int timeout_ms);

/* cli_start + cli_wait. */
int cli_run(cli_proc *p, const char *redis_url, const char *const *args, int timeout_ms);

#endif
