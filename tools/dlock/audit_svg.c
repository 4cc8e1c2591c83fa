/* audit --svg: the holders of a name over time, one row per hold, as plain
 * SVG. A bar runs from the grant to the end of the hold (its release or
 * loss, else its validity); the part after the validity ended is red; where
 * another hold overlaps it, the bar is orange and a band marks the time. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define WIDTH 960
#define LEFT 250   /* the labels */
#define RIGHT 20
#define TOP 56     /* the title and the axis */
#define ROW 22
#define BAR 14

#define COLOUR_HELD "#4a7fc1"
#define COLOUR_PAST "#d0312d"
#define COLOUR_OVERLAP "#f29e1f"

struct frame {
    int64_t from_us, to_us;
    FILE *f;
};

static double x_of(const struct frame *fr, int64_t us)
{
    double span = (double)(fr->to_us - fr->from_us);
    return LEFT + (double)(us - fr->from_us) / span * (WIDTH - LEFT - RIGHT);
}

/* Text as XML character data: markup escaped, and what XML 1.0 does not
 * allow (control characters, bytes that are not UTF-8) as U+FFFD. */
static void write_escaped(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t len = cli_utf8_length(p);
        if (*p == '&')
            fputs("&amp;", f);
        else if (*p == '<')
            fputs("&lt;", f);
        else if (*p == '>')
            fputs("&gt;", f);
        else if (*p == '"')
            fputs("&quot;", f);
        else if (*p < 0x20 || len == 0)
            fputs("&#xfffd;", f);
        else
            fwrite(p, 1, len, f);
        p += len ? len : 1;
    }
}

/* Its release or loss; an open hold: the end of its validity. */
static int64_t hold_end(const dlock_audit_hold *h)
{
    int64_t end = h->end_us ? h->end_us : h->valid_us;
    return end > h->start_us ? end : h->start_us;
}

static void bar(const struct frame *fr, int row, int64_t from, int64_t to, const char *colour)
{
    double x = x_of(fr, from), w = x_of(fr, to) - x;
    fprintf(fr->f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", x,
            TOP + row * ROW + (ROW - BAR) / 2, w < 1 ? 1 : w, BAR, colour);
}

/* A tick step that gives at most 8 ticks over the span. */
static int64_t tick_step(int64_t span_us)
{
    static const int64_t steps[] = {1000,     2000,     5000,      10000,     20000,
                                    50000,    100000,   200000,    500000,    1000000,
                                    2000000,  5000000,  10000000,  30000000,  60000000,
                                    300000000, 600000000, 1800000000, 3600000000};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
        if (span_us / steps[i] <= 8)
            return steps[i];
    return 3600000000LL * ((span_us / 3600000000LL) / 8 + 1);
}

static void axis(const struct frame *fr, int rows)
{
    int64_t step = tick_step(fr->to_us - fr->from_us);
    int bottom = TOP + rows * ROW;
    fprintf(fr->f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#555\"/>\n", LEFT,
            TOP - 4, WIDTH - RIGHT, TOP - 4);
    for (int64_t t = (fr->from_us / step + 1) * step; t < fr->to_us; t += step) {
        time_t secs = (time_t)(t / 1000000);
        struct tm tm;
        char text[32];
        double x = x_of(fr, t);
        gmtime_r(&secs, &tm);
        strftime(text, sizeof(text), "%H:%M:%S", &tm);
        fprintf(fr->f,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n"
                "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s",
                x, TOP - 8, x, bottom, x, TOP - 12, text);
        if (step < 1000000)
            fprintf(fr->f, ".%03d", (int)(t % 1000000 / 1000));
        fputs("</text>\n", fr->f);
    }
}

static void label(const struct frame *fr, int row, const dlock_audit_hold *h)
{
    char pid[24];
    snprintf(pid, sizeof(pid), "%ld", h->pid);
    fprintf(fr->f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">", LEFT - 8,
            TOP + row * ROW + ROW / 2 + 4);
    write_escaped(fr->f, h->host[0] ? h->host : "?");
    fprintf(fr->f, ":%s %.8s</text>\n", pid, h->token);
}

static void holds(const struct frame *fr, const dlock_audit_hold *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t end = hold_end(&h[i]);
        int64_t held_to = h[i].valid_us && h[i].valid_us < end ? h[i].valid_us : end;
        label(fr, (int)i, &h[i]);
        bar(fr, (int)i, h[i].start_us, held_to, COLOUR_HELD);
        if (held_to < end)
            bar(fr, (int)i, held_to, end, COLOUR_PAST);
    }
}

static void overlaps(const struct frame *fr, size_t n_holds, const dlock_audit_finding *f,
                     size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t from = f[i].at_us, to = f[i].at_us + f[i].amount_us;
        if (f[i].kind != DLOCK_AUDIT_OVERLAP)
            continue;
        fprintf(fr->f,
                "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
                "fill-opacity=\"0.18\"/>\n",
                x_of(fr, from), TOP - 4, x_of(fr, to) - x_of(fr, from) + 1,
                (int)n_holds * ROW + 4, COLOUR_OVERLAP);
        bar(fr, (int)f[i].a, from, to, COLOUR_OVERLAP);
        bar(fr, (int)f[i].b, from, to, COLOUR_OVERLAP);
    }
}

static void legend(const struct frame *fr, int rows)
{
    static const char *const items[][2] = {{COLOUR_HELD, "held, within its validity"},
                                           {COLOUR_PAST, "held past its validity"},
                                           {COLOUR_OVERLAP, "overlapping another holder"}};
    int y = TOP + rows * ROW + 18;
    for (int i = 0; i < 3; i++)
        fprintf(fr->f,
                "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n"
                "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text>\n",
                LEFT + i * 230, y, items[i][0], LEFT + i * 230 + 18, y + 10, items[i][1]);
}

static void frame_of(struct frame *fr, const dlock_audit_hold *h, size_t n)
{
    fr->from_us = n ? h[0].start_us : 0;
    fr->to_us = fr->from_us + 1000;
    for (size_t i = 0; i < n; i++) {
        fr->from_us = h[i].start_us < fr->from_us ? h[i].start_us : fr->from_us;
        fr->to_us = hold_end(&h[i]) > fr->to_us ? hold_end(&h[i]) : fr->to_us;
    }
    /* A margin either side, so that no bar touches the edge. */
    int64_t pad = (fr->to_us - fr->from_us) / 50 + 1;
    fr->from_us -= pad;
    fr->to_us += pad;
}

int cli_write_audit_svg(const dlock_audit *audit, const char *name, const char *path)
{
    const dlock_audit_hold *h;
    const dlock_audit_finding *f;
    size_t n_holds = dlock_audit_holds(audit, &h), n_findings = dlock_audit_findings(audit, &f);
    int rows = n_holds ? (int)n_holds : 1;
    struct frame fr;
    int rc = 0;
    frame_of(&fr, h, n_holds);
    fr.f = fopen(path, "w");
    if (!fr.f) {
        cli_error("%s: %s", path, strerror(errno));
        return -1;
    }
    fprintf(fr.f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">dlock audit: ",
            WIDTH, TOP + rows * ROW + 44);
    write_escaped(fr.f, name);
    fprintf(fr.f, " (%zu holds, %zu findings; server time, UTC)</text>\n", n_holds, n_findings);
    axis(&fr, rows);
    holds(&fr, h, n_holds);
    overlaps(&fr, n_holds, f, n_findings);
    legend(&fr, rows);
    fputs("</svg>\n", fr.f);
    if (ferror(fr.f))
        rc = -1;
    if (fclose(fr.f) != 0)
        rc = -1;
    if (rc < 0)
        cli_error("%s: cannot write the timeline", path);
    return rc;
}
