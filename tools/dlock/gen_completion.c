/* Writes the bash completion at build time: the hand-written logic of
 * completion.bash.in, with the line "@DLOCK_TABLES@" replaced by the
 * commands and options of the command's own tables, so the completion
 * offers what the parser takes.
 *   dlock_gen_completion TEMPLATE OUTPUT */
#include "command_table.h"
#include "option_table.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MARKER "@DLOCK_TABLES@\n"

/* One line per option of `where`: its spellings, then "=VALUE" if it takes
 * one ("-t --ttl =DUR", "--json"). */
static void write_options(FILE *f, const char *label, unsigned where)
{
    fprintf(f, "        %s) printf '%%s\\n'", label);
    for (const struct cli_option *o = cli_options; o->key; o++) {
        if (!(o->where & where))
            continue;
        fputs(" \"", f);
        if (cli_option_has_letter(o))
            fprintf(f, "-%c%s", o->key, o->name ? " " : "");
        if (o->name)
            fprintf(f, "--%s", o->name);
        if (o->value)
            fprintf(f, " =%s", o->value);
        putc('"', f);
    }
    fputs(" ;;\n", f);
}

/* An operand in lower case is a word to type as it is (guard's action). */
static bool literal(const char *operands)
{
    size_t len = strcspn(operands, " ");
    for (size_t i = 0; i < len; i++)
        if (!islower((unsigned char)operands[i]) && operands[i] != '-')
            return false;
    return len > 0;
}

static void write_tables(FILE *f)
{
    fputs("# Generated from the dlock command's tables (tools/dlock/command_table.c,\n"
          "# option_table.c).\n_dlock_commands=\"",
          f);
    for (size_t i = 0; i < CLI_CMD_COUNT; i++)
        fprintf(f, "%s%s", i ? " " : "", cli_commands[i].name);
    fputs("\"\n\n"
          "# _dlock_options [COMMAND]: the global options (or COMMAND's), one a line:\n"
          "# its spellings, then \"=VALUE\" if it takes one (\"-t --ttl =DUR\").\n"
          "_dlock_options()\n{\n    case $1 in\n",
          f);
    write_options(f, "\"\"", CLI_GLOBAL);
    for (size_t i = 0; i < CLI_CMD_COUNT; i++)
        write_options(f, cli_commands[i].name, CLI_IN(i));
    fputs("    esac\n}\n\n"
          "# _dlock_words COMMAND: the words its first operand is typed as.\n"
          "_dlock_words()\n{\n    case $1 in\n",
          f);
    for (size_t i = 0; i < CLI_CMD_COUNT; i++)
        if (literal(cli_commands[i].operands))
            fprintf(f, "        %s) echo \"%.*s\" ;;\n", cli_commands[i].name,
                    (int)strcspn(cli_commands[i].operands, " "), cli_commands[i].operands);
    fputs("    esac\n}\n", f);
}

int main(int argc, char **argv)
{
    char line[1024];
    FILE *in, *out;
    int rc;
    if (argc != 3) {
        fprintf(stderr, "usage: %s TEMPLATE OUTPUT\n", argv[0]);
        return 2;
    }
    in = fopen(argv[1], "r");
    if (!in) {
        perror(argv[1]);
        return 1;
    }
    out = fopen(argv[2], "w");
    if (!out) {
        perror(argv[2]);
        fclose(in);
        return 1;
    }
    while (fgets(line, sizeof(line), in)) {
        if (strcmp(line, MARKER) == 0)
            write_tables(out);
        else
            fputs(line, out);
    }
    rc = ferror(in) || ferror(out);
    rc |= fclose(out) != 0;
    fclose(in);
    if (rc) {
        perror(argv[2]);
        remove(argv[2]);
    }
    return rc;
}
