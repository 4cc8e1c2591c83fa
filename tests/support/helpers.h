/* What the integration tests share; a test includes this header. What a
 * helper hands out is kept until the test's teardown (cleanup.h): a test
 * frees nothing by hand, and a failed assertion leaks nothing. */
#ifndef TEST_HELPERS_H
#define TEST_HELPERS_H

#include "cleanup.h"
#include "cli_runner.h"
#include "clients.h"
#include "files.h"
#include "fixtures.h"
#include "redis_checks.h"
#include "threads.h"

/* `dlock ARG...` against group_server into *p, at most timeout_ms; its
 * exit status, as cli_run(). */
#define DLOCK(p, timeout_ms, ...)                                                                  \
    cli_run((p), group_server.url, (const char *const[]){__VA_ARGS__, NULL}, (timeout_ms))

#endif
