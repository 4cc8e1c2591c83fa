/* The exit codes of the dlock command: the contract that scripts act on.
 * One table: it makes the enum and the "Exit status" part of `dlock --help`,
 * and a test (tests/unit/test_exit_codes.c) holds the man page
 * (docs/dlock.1) and README.md to the same codes and texts. */
#ifndef DLOCK_EXIT_CODES_H
#define DLOCK_EXIT_CODES_H

/* X(code, name, text): --help wraps the text beside the code. */
#define CLI_EXIT_CODES(X)                                                                          \
    X(0, DONE, "done; status: held")                                                               \
    X(1, REFUSED, "release/extend refused: not the owner, or the lock is gone; status: free; "    \
                  "audit: findings; check: not the newest, or not held")                       \
    X(64, USAGE, "usage error")                                                                    \
    X(69, UNAVAILABLE, "Redis unreachable or timed out, no quorum, or it refused the command")     \
    X(70, LOST, "run: the lock was lost while the command ran; the command was stopped")           \
    X(75, BUSY, "lock busy, or the wait ran out while it stayed busy (-E changes it)")             \
    X(76, PROTOCOL, "protocol error: the server's reply made no sense")                            \
    X(77, AUTH, "authentication, ACL or TLS failure")                                              \
    X(78, FINDINGS, "doctor: a finding of severity error")                                         \
    X(126, CANNOT_EXEC, "run: the command could not be executed")                                  \
    X(127, NOT_FOUND, "run: the command was not found")

#define CLI_EXIT_ENUM(code, name, text) EXIT_##name = code,
enum cli_exit { CLI_EXIT_CODES(CLI_EXIT_ENUM) };
#undef CLI_EXIT_ENUM

#endif
