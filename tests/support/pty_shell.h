/* An interactive job-control shell (bash -i) on a pseudo-terminal, for
 * tests of what a user at a terminal sees: typed lines, Ctrl-Z, fg. */
#ifndef TEST_PTY_SHELL_H
#define TEST_PTY_SHELL_H

#include <stddef.h>
#include <sys/types.h>

#define PTY_OUTPUT_MAX 65536

typedef struct pty_shell {
    pid_t pid;
    int fd; /* the terminal's master side */
    char out[PTY_OUTPUT_MAX];
    size_t used, seen; /* output so far; how far pty_shell_expect has matched */
} pty_shell;

/* Starts `bash --norc --noprofile -i` as the session leader of a new
 * terminal, with DLOCK_REDIS=redis_url. Returns 0 or -1. */
int pty_shell_start(pty_shell *sh, const char *redis_url);

/* Types `text` (a line needs its "\n"; Ctrl-Z is "\x1a"). */
void pty_shell_type(pty_shell *sh, const char *text);

/* Waits (at most timeout_ms, scaled by test_slowdown()) until `want`
 * appears in the output after the previous match. 1 if it did, else 0. */
int pty_shell_expect(pty_shell *sh, const char *want, int timeout_ms);

/* Hangs up the terminal and waits for the shell (SIGKILL if it lingers). */
void pty_shell_stop(pty_shell *sh);

#endif
