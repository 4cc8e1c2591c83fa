/* The exit status table of a document (docs/dlock.1 or README.md, given as
 * the argument) has exactly the codes and texts of the table in
 * tools/dlock/exit_codes.h, in its order: one table, no drifting copies. */
#include "exit_codes.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define ROWS_MAX 32
#define TEXT_MAX 256

struct row {
    int code;
    char text[TEXT_MAX];
};

static const struct row table[] = {
#define CLI_EXIT_ROW(code, name, text) {code, text},
    CLI_EXIT_CODES(CLI_EXIT_ROW)
#undef CLI_EXIT_ROW
};

static const char *document; /* path, from the command line */

/* The document, whole: a static buffer, so that a failed assertion (which
 * leaves the test by longjmp) leaks nothing. */
static const char *read_document(void)
{
    static char text[1 << 17];
    FILE *f = fopen(document, "r");
    size_t len;
    assert_non_null(f);
    len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    assert_true(len > 0 && len < sizeof(text) - 1);
    text[len] = '\0';
    return text;
}

/* The exit code that `s` starts with. */
static int code_at(const char *s)
{
    char *end;
    long code = strtol(s, &end, 10);
    assert_true(end > s && code >= 0 && code <= 255);
    return (int)code;
}

/* Appends `line` to `out` as the table writes it: without roff font changes
 * (\fB...\fR), backquotes or roff's escaped hyphen, lines joined by a space. */
static void append_plain(char *out, const char *line, size_t len)
{
    size_t used = strlen(out);
    if (used && used + 1 < TEXT_MAX)
        out[used++] = ' ';
    for (size_t i = 0; i < len && used + 1 < TEXT_MAX; i++) {
        if (line[i] == '\\' && i + 2 < len && line[i + 1] == 'f')
            i += 2;
        else if (line[i] == '\\' && i + 1 < len && line[i + 1] == '-')
            out[used++] = line[++i];
        else if (line[i] != '`')
            out[used++] = line[i];
    }
    out[used] = '\0';
}

/* The man page: ".TP", ".B CODE", text lines, up to the next .PP or .SH. */
static size_t man_rows(const char *text, struct row *rows)
{
    const char *line = strstr(text, ".SH EXIT STATUS\n");
    size_t n = 0;
    assert_non_null(line);
    for (line = strchr(line, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        size_t len = strcspn(line, "\n");
        if (strncmp(line, ".PP", 3) == 0 || strncmp(line, ".SH", 3) == 0 || !line[len])
            break;
        if (strncmp(line, ".B ", 3) == 0) {
            assert_true(n < ROWS_MAX);
            rows[n++] = (struct row){.code = code_at(line + 3)};
        } else if (strncmp(line, ".TP", 3) != 0) {
            assert_true(n > 0);
            append_plain(rows[n - 1].text, line, len);
        }
    }
    return n;
}

/* README.md: "| exit | meaning |", "|---|---|", then "| CODE | TEXT |". */
static size_t readme_rows(const char *text, struct row *rows)
{
    const char *line = strstr(text, "\n| exit | meaning |\n|---|---|\n");
    size_t n = 0;
    assert_non_null(line);
    for (line = strstr(line, "|---|---|\n") + 10; *line == '|'; line = strchr(line, '\n') + 1) {
        const char *bar = strchr(line + 1, '|');
        const char *end = line + strcspn(line, "\n");
        assert_true(n < ROWS_MAX && bar && bar < end && end[-1] == '|' && *end);
        rows[n] = (struct row){.code = code_at(line + 1)};
        /* the text between "| " and " |" */
        append_plain(rows[n++].text, bar + 2, (size_t)(end - 1 - (bar + 2) - 1));
    }
    return n;
}

static void test_exit_codes_document_matches_the_table(void **state)
{
    struct row rows[ROWS_MAX];
    const char *text = read_document();
    bool man = strcmp(document + strlen(document) - 2, ".1") == 0;
    size_t n = man ? man_rows(text, rows) : readme_rows(text, rows);
    (void)state;
    for (size_t i = 0; i < n && i < sizeof(table) / sizeof(table[0]); i++) {
        assert_int_equal(rows[i].code, table[i].code);
        assert_string_equal(rows[i].text, table[i].text);
    }
    assert_int_equal(n, sizeof(table) / sizeof(table[0]));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes_document_matches_the_table),
    };
    if (argc != 2) {
        fprintf(stderr, "usage: %s docs/dlock.1|README.md\n", argv[0]);
        return 2;
    }
    document = argv[1];
    return cmocka_run_group_tests(tests, NULL, NULL);
}
