/* The command's option table (tools/dlock/option_table.c) against what is
 * made from it: each option's names and text are in the help of every
 * command that takes it (and in the global help), the parser of each such
 * command takes it, and the other commands refuse it. The bash completion
 * is held to the same help by tests/install/completion.sh. */
#include "command_options.h"
#include "exit_codes.h"
#include "global_options.h"
#include "help.h"
#include "option_table.h"

#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define HELP_MAX (1 << 16)
#define WIDTH 79
#define ARGS_MAX 8

/* A help text, printed into a static buffer (a failed assertion leaves the
 * test by longjmp: nothing to free). */
static const char *help_of(const struct cli_command *cmd)
{
    static char text[HELP_MAX];
    FILE *f = fmemopen(text, sizeof(text), "w");
    assert_non_null(f);
    if (cmd)
        cli_print_command_help(cmd, f);
    else
        cli_print_help(f);
    assert_int_equal(fclose(f), 0);
    return text;
}

/* The text with every run of spaces and newlines made one space. */
static void collapse(const char *text, char *out, size_t len)
{
    size_t n = 0;
    for (const char *p = text; *p && n + 1 < len; p++) {
        char c = *p;
        if (c == '\n')
            c = ' ';
        if (c != ' ' || (n && out[n - 1] != ' '))
            out[n++] = c;
    }
    out[n] = '\0';
}

/* "-t, --ttl DUR how long the lock lives...": the option as its help line
 * shows it, spaces collapsed. */
static void option_line(const struct cli_option *o, char *out, size_t len)
{
    size_t n = 0;
    if (o->key < 256)
        n += (size_t)snprintf(out, len, "-%c%s", o->key, o->name ? ", " : "");
    if (o->name)
        n += (size_t)snprintf(out + n, len - n, "--%s", o->name);
    if (o->value)
        n += (size_t)snprintf(out + n, len - n, " %s", o->value);
    snprintf(out + n, len - n, " %s", o->help);
}

static void assert_shows(const char *help, const struct cli_option *o, const char *where)
{
    static char flat[HELP_MAX], line[1024];
    collapse(help, flat, sizeof(flat));
    option_line(o, line, sizeof(line));
    if (!strstr(flat, line))
        fail_msg("%s --help does not show \"%s\"", where, line);
}

static void test_cli_table_rows_of_one_option_agree(void **state)
{
    (void)state;
    for (const struct cli_option *a = cli_options; a->key; a++) {
        assert_non_null(a->help);
        assert_true(a->where != 0);
        assert_true(a->name || (a->flags & CLI_AFTER_NAME));
        for (const struct cli_option *b = a + 1; b->key; b++) {
            bool same_name = a->name && b->name && strcmp(a->name, b->name) == 0;
            if (a->key != b->key) {
                assert_false(same_name);
                continue;
            }
            /* one option, worded for other commands */
            assert_true(same_name || (!a->name && !b->name));
            assert_true((!a->value && !b->value) ||
                        (a->value && b->value && strcmp(a->value, b->value) == 0));
            assert_int_equal(a->flags, b->flags);
            assert_int_equal(a->where & b->where, 0);
        }
    }
}

/* cli_getopt_for() has room for every option of a command, or of the
 * global ones. */
static void test_cli_table_getopt_has_room(void **state)
{
    (void)state;
    for (unsigned bit = 0; bit <= CLI_CMD_COUNT; bit++) {
        size_t n = 0;
        for (const struct cli_option *o = cli_options; o->key; o++)
            n += (o->where & (1u << bit)) != 0;
        assert_in_range(n, 1, CLI_GETOPT_MAX);
    }
}

static void test_cli_table_every_command_shows_its_options(void **state)
{
    (void)state;
    for (size_t i = 0; i < CLI_CMD_COUNT; i++) {
        const char *help = help_of(&cli_commands[i]);
        size_t shown = 0;
        for (const struct cli_option *o = cli_options; o->key; o++) {
            if (o->where & CLI_IN(i)) {
                assert_shows(help, o, cli_commands[i].name);
                shown++;
            }
        }
        assert_true(shown > 0); /* -h at least */
    }
}

static void test_cli_table_global_help_shows_the_global_options(void **state)
{
    const char *help = help_of(NULL);
    (void)state;
    for (const struct cli_option *o = cli_options; o->key; o++)
        if (o->where & CLI_GLOBAL)
            assert_shows(help, o, "dlock");
    for (size_t i = 0; i < CLI_CMD_COUNT; i++)
        assert_non_null(strstr(help, cli_commands[i].summary));
}

static void assert_lines_fit(const char *text, const char *where)
{
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        if (len > WIDTH)
            fail_msg("%s --help: a line of %zu characters: %.*s", where, len, (int)len, p);
        p += len + (p[len] == '\n');
    }
}

/* The exit codes' texts too: wrapped beside their codes. */
static void test_cli_table_help_lines_fit(void **state)
{
    (void)state;
    assert_lines_fit(help_of(NULL), "dlock");
    for (size_t i = 0; i < CLI_CMD_COUNT; i++)
        assert_lines_fit(help_of(&cli_commands[i]), cli_commands[i].name);
}

/* A value each kind of value takes. */
static const char *sample(const char *value)
{
    static const struct {
        const char *name, *sample;
    } samples[] = {{"DUR", "2s"}, {"K", "1"},       {"N", "2"},    {"CODE", "3"},
                   {"FILE", "x"}, {"DIR", "x"},     {"NAME", "x"}, {"URL", "redis://127.0.0.1:1"}};
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
        if (strcmp(samples[i].name, value) == 0)
            return samples[i].sample;
    fail_msg("no sample value for %s", value);
    return NULL;
}

/* dlock CMD [--fair] OPTION [VALUE] OPERANDS..., parsed. */
static int parse_with(const struct cli_command *cmd, const struct cli_option *o,
                      struct cli_command_opts *out)
{
    char spelling[40], *argv[ARGS_MAX + 1];
    int argc = 0;
    argv[argc++] = (char *)cmd->name;
    if (o->key == CLI_KEY_LEASE)
        argv[argc++] = "--fair"; /* the lease is a fair waiter's */
    snprintf(spelling, sizeof(spelling), "--%s", o->name);
    argv[argc++] = spelling;
    if (o->value)
        argv[argc++] = (char *)sample(o->value);
    argv[argc++] = "n";
    if (cmd->flags & CLI_RUN_OPERANDS) {
        argv[argc++] = "--";
        argv[argc++] = "true";
    } else if (cmd->n_operands == 2) {
        argv[argc++] = "7";
    }
    argv[argc] = NULL;
    optind = 0; /* getopt starts afresh */
    return cli_parse_command(cmd, argc, argv, out);
}

static void test_cli_table_every_option_is_parsed_where_it_is_taken(void **state)
{
    struct cli_command_opts opts;
    (void)state;
    for (size_t i = 0; i < CLI_CMD_COUNT; i++) {
        for (const struct cli_option *o = cli_options; o->key; o++) {
            if (o->key == 'h' || (o->flags & CLI_AFTER_NAME) || !o->name)
                continue;
            if (o->where & CLI_IN(i)) {
                if (parse_with(&cli_commands[i], o, &opts) != 0)
                    fail_msg("%s refuses its --%s", cli_commands[i].name, o->name);
                /* the parser's last case: an option it has no case for would land there */
                assert_int_equal(opts.json, o->key == CLI_KEY_JSON);
            } else if (!(o->where & CLI_GLOBAL) && !cli_option_find(CLI_IN(i), o->key) &&
                       parse_with(&cli_commands[i], o, &opts) != EXIT_USAGE) {
                fail_msg("%s takes --%s, which the table does not give it",
                         cli_commands[i].name, o->name);
            }
        }
    }
}

static void test_cli_table_every_global_option_is_parsed(void **state)
{
    (void)state;
    unsetenv("DLOCK_REDIS");
    for (const struct cli_option *o = cli_options; o->key; o++) {
        char spelling[40], *argv[] = {"dlock", spelling, NULL, NULL};
        struct cli cli = {0};
        int rc;
        if (!(o->where & CLI_GLOBAL))
            continue;
        snprintf(spelling, sizeof(spelling), "--%s", o->name);
        argv[2] = o->value ? (char *)sample(o->value) : NULL;
        optind = 0;
        rc = cli_parse_global(&cli, o->value ? 3 : 2, argv);
        cli_free_urls(&cli);
        assert_int_equal(rc, o->key == 'h' ? CLI_HELP : o->key == CLI_KEY_VERSION ? CLI_VERSION : 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_table_rows_of_one_option_agree),
        cmocka_unit_test(test_cli_table_getopt_has_room),
        cmocka_unit_test(test_cli_table_every_command_shows_its_options),
        cmocka_unit_test(test_cli_table_global_help_shows_the_global_options),
        cmocka_unit_test(test_cli_table_help_lines_fit),
        cmocka_unit_test(test_cli_table_every_option_is_parsed_where_it_is_taken),
        cmocka_unit_test(test_cli_table_every_global_option_is_parsed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
