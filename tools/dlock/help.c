/* The help texts, from the tables: a command's usage line lists the options
 * it takes, each option's text is wrapped into a column beside its names,
 * and the exit codes come from exit_codes.h. */
#include "help.h"

#include "exit_codes.h"
#include "option_table.h"

#include <stdbool.h>
#include <string.h>

#define WIDTH 79    /* no line longer */
#define HEAD_MAX 24 /* a longer "  -x, --name VALUE" gets its text after it, past the column */

/* Words put on lines of at most WIDTH, the next line at `indent`. */
struct lines {
    FILE *f;
    size_t col, indent;
    bool gap; /* a space before the next word */
};

/* A word may hold spaces ("[-t DUR]"): it is never broken. */
static void put_word(struct lines *l, const char *word, size_t len)
{
    if (l->gap && l->col + 1 + len > WIDTH) {
        fprintf(l->f, "\n%*s", (int)l->indent, "");
        l->col = l->indent;
    } else if (l->gap) {
        putc(' ', l->f);
        l->col++;
    }
    fwrite(word, 1, len, l->f);
    l->col += len;
    l->gap = true;
}

static void put_text(struct lines *l, const char *text)
{
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, " ");
        if (len)
            put_word(l, p, len);
        p += len + (p[len] == ' ');
    }
}

/* "  -t, --ttl DUR", "      --json", "  -c CMD" */
static size_t format_head(const struct cli_option *o, char *out, size_t len)
{
    bool letter = cli_option_has_letter(o);
    int n = snprintf(out, len, "  %c%c%s%s%s%s%s", letter ? '-' : ' ', letter ? o->key : ' ',
                     letter && o->name ? ", " : o->name ? "  " : "", o->name ? "--" : "",
                     o->name ? o->name : "", o->value ? " " : "", o->value ? o->value : "");
    return n < 0 ? 0 : (size_t)n;
}

/* The column the texts of `where`'s options start in. */
static size_t text_column(unsigned where)
{
    char head[64];
    size_t widest = 0;
    for (const struct cli_option *o = cli_options; o->key; o++) {
        size_t n = (o->where & where) ? format_head(o, head, sizeof(head)) : 0;
        if (n <= HEAD_MAX && n > widest)
            widest = n;
    }
    return widest + 2;
}

static void print_options(unsigned where, FILE *f)
{
    size_t column = text_column(where);
    char head[64];
    for (const struct cli_option *o = cli_options; o->key; o++) {
        struct lines l = {.f = f, .indent = column};
        if (!(o->where & where))
            continue;
        l.col = format_head(o, head, sizeof(head));
        fputs(head, f);
        l.col += (size_t)fprintf(f, "%*s", l.col + 2 > column ? 2 : (int)(column - l.col), "");
        put_text(&l, o->help);
        putc('\n', f);
    }
}

/* "Usage: dlock acquire [-t DUR] [-w DUR] [-n] ... NAME", wrapped under
 * the first option; run's second form after it. */
static void print_usage(const struct cli_command *cmd, FILE *f)
{
    unsigned where = cli_command_bit(cmd);
    struct lines l = {.f = f};
    char item[64];
    l.col = l.indent = (size_t)fprintf(f, "Usage: dlock %s ", cmd->name);
    for (const struct cli_option *o = cli_options; o->key; o++) {
        char spelling[40];
        int n;
        if (!(o->where & where) || (o->flags & CLI_AFTER_NAME) || o->key == 'h')
            continue;
        if (cli_option_has_letter(o))
            snprintf(spelling, sizeof(spelling), "-%c", o->key);
        else
            snprintf(spelling, sizeof(spelling), "--%s", o->name);
        n = snprintf(item, sizeof(item), "[%s%s%s]", spelling, o->value ? " " : "",
                     o->value ? o->value : "");
        put_word(&l, item, (size_t)n);
    }
    put_word(&l, cmd->operands, strlen(cmd->operands));
    putc('\n', f);
    if (cmd->operands_too)
        fprintf(f, "       dlock %s [options] %s\n", cmd->name, cmd->operands_too);
}

void cli_print_command_help(const struct cli_command *cmd, FILE *f)
{
    print_usage(cmd, f);
    fputs(cmd->about, f);
    print_options(cli_command_bit(cmd), f);
    if (cmd->notes)
        fputs(cmd->notes, f);
}

/* "  75   lock busy, ...", the text wrapped beside the code. */
static void print_exit_code(FILE *f, int code, const char *text)
{
    struct lines l = {.f = f, .indent = 7};
    l.col = (size_t)fprintf(f, "  %-4d ", code);
    put_text(&l, text);
    putc('\n', f);
}

void cli_print_help(FILE *f)
{
    fputs("Usage: dlock [global options] COMMAND [options] NAME ...\n"
          "\n"
          "Distributed locks on Redis: one holder at a time across hosts.\n"
          "\n"
          "Commands:\n",
          f);
    for (size_t i = 0; i < CLI_CMD_COUNT; i++)
        fprintf(f, "  %-8s %s\n", cli_commands[i].name, cli_commands[i].summary);
    fputs("\nGlobal options (before COMMAND):\n", f);
    print_options(CLI_GLOBAL, f);
    fputs("\n"
          "Durations: a bare number is seconds (1.5 too); or 250ms, 30s, 5m, 1h.\n"
          "\n"
          "Exit status:\n",
          f);
#define CLI_EXIT_LINE(code, name, text) print_exit_code(f, code, text);
    CLI_EXIT_CODES(CLI_EXIT_LINE)
#undef CLI_EXIT_LINE
    fputs("  otherwise, run exits with the command's status (128+N if signal N ended it)\n", f);
}
