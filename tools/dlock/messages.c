/* Messages on stderr: errors, -q and -v, usage errors. */
#include "messages.h"

#include "exit_codes.h"
#include "global_options.h"

#include <stdarg.h>
#include <stdio.h>

static void vmessage(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* One write per message: a command writing to the same terminal or log
 * (its trap on our SIGTERM, say) must not land inside the line. */
static void vmessage(const char *fmt, va_list ap)
{
    char line[4096];
    int n = snprintf(line, sizeof(line), "dlock: ");
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    fwrite(line, 1, (size_t)n, stderr);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

void cli_info(const struct cli *cli, const char *fmt, ...)
{
    va_list ap;
    if (cli->quiet)
        return;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

void cli_debug(const struct cli *cli, const char *fmt, ...)
{
    va_list ap;
    if (!cli->verbose)
        return;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

int cli_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try 'dlock %s--help'.\n", command ? command : "");
    return EXIT_USAGE;
}
