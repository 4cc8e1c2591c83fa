/* The metrics' pieces without a server: snprintf-style text, label value
 * escaping, the UTF-8 check, the cap on names kept, the histograms'
 * buckets, and a client's text as a Prometheus parser reads it. */
#include "clock.h"
#include "lane.h"
#include "metrics.h"
#include "promtext.h"
#include "text.h"

#include <dlock.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_metrics_text_counts_what_does_not_fit(void **state)
{
    char buf[8];
    dlock__text t;
    (void)state;
    dlock__text_init(&t, buf, sizeof(buf));
    dlock__text_printf(&t, "hello %s", "world");
    assert_int_equal(t.needed, 11);
    assert_string_equal(buf, "hello w");
    dlock__text_label_value(&t, "abc");
    assert_int_equal(t.needed, 14);
    assert_string_equal(buf, "hello w");
    dlock__text_init(&t, NULL, 0);
    dlock__text_printf(&t, "%0300d", 7); /* longer than a line of ours */
    assert_int_equal(t.needed, 300);
}

static void expect_label(const char *value, const char *escaped)
{
    char buf[64];
    dlock__text t;
    dlock__text_init(&t, buf, sizeof(buf));
    dlock__text_label_value(&t, value);
    assert_string_equal(buf, escaped);
    assert_int_equal(t.needed, strlen(escaped));
}

static void test_metrics_label_escapes_backslash_quote_newline(void **state)
{
    (void)state;
    expect_label("plain:name-1", "plain:name-1");
    expect_label("a\\b\"c\nd", "a\\\\b\\\"c\\nd");
    expect_label("\\\\", "\\\\\\\\");
    expect_label("\"\n", "\\\"\\n");
    expect_label("tab\there \xc3\xa9", "tab\there \xc3\xa9"); /* nothing else changes */
    expect_label("", "");
}

static void test_metrics_utf8_check(void **state)
{
    (void)state;
    assert_true(dlock__utf8_valid(""));
    assert_true(dlock__utf8_valid("job:caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x94\x92"));
    assert_false(dlock__utf8_valid("\xff"));
    assert_false(dlock__utf8_valid("\xc0\xaf"));         /* overlong '/' */
    assert_false(dlock__utf8_valid("\xed\xa0\x80"));     /* a surrogate */
    assert_false(dlock__utf8_valid("\xf4\x90\x80\x80")); /* above U+10FFFF */
    assert_false(dlock__utf8_valid("cut \xe6\x97"));     /* cut short */
    assert_false(dlock__utf8_valid("\x80"));             /* a lone continuation */
}

/* The first `max` names get entries of their own, kept in name order; the
 * others, names that are not UTF-8 and the overflow's own name share the
 * overflow, which is listed last once used. */
static void test_metrics_name_cap_and_overflow(void **state)
{
    dlock__metrics m;
    dlock__name_metrics *b, *a;
    (void)state;
    assert_int_equal(dlock__metrics_init(&m, 2), 0);
    b = dlock__metrics_of(&m, "b");
    a = dlock__metrics_of(&m, "a");
    assert_ptr_not_equal(a, b);
    assert_int_equal(dlock__metrics_count(&m), 2);
    assert_ptr_equal(dlock__metrics_of(&m, "b"), b);
    assert_ptr_equal(dlock__metrics_of(&m, "c"), m.other);
    assert_ptr_equal(dlock__metrics_of(&m, "d"), m.other);
    assert_ptr_equal(dlock__metrics_of(&m, "a"), a);
    assert_int_equal(dlock__metrics_count(&m), 3);
    assert_string_equal(dlock__metrics_at(&m, 0)->name, "a");
    assert_string_equal(dlock__metrics_at(&m, 1)->name, "b");
    assert_string_equal(dlock__metrics_at(&m, 2)->name, DLOCK_METRICS_OTHER);
    dlock__metrics_destroy(&m);

    assert_int_equal(dlock__metrics_init(&m, 10), 0);
    assert_ptr_equal(dlock__metrics_of(&m, "bad \xff"), m.other);
    assert_ptr_equal(dlock__metrics_of(&m, DLOCK_METRICS_OTHER), m.other);
    assert_int_equal(dlock__metrics_count(&m), 1);
    for (int i = 0; i < 12; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%02d", 11 - i);
        dlock__metrics_of(&m, name);
    }
    assert_int_equal(dlock__metrics_count(&m), 11); /* 10 names and the overflow */
    assert_string_equal(dlock__metrics_at(&m, 0)->name, "n02");
    assert_string_equal(dlock__metrics_at(&m, 9)->name, "n11");
    dlock__metrics_destroy(&m);
}

/* A bucket holds what is at most its bound: 1 ms exactly is in le=0.001. */
static void test_metrics_histogram_buckets(void **state)
{
    dlock__histogram h;
    (void)state;
    memset(&h, 0, sizeof(h));
    dlock__histogram_observe(&h, 1000000);
    dlock__histogram_observe(&h, 1000001);
    dlock__histogram_observe(&h, 600LL * 1000000000);
    dlock__histogram_observe(&h, 601LL * 1000000000);
    dlock__histogram_observe(&h, -5);
    assert_int_equal(atomic_load(&h.count[0]), 2);
    assert_int_equal(atomic_load(&h.count[1]), 1);
    assert_int_equal(atomic_load(&h.count[DLOCK__BOUNDS - 1]), 1);
    assert_int_equal(atomic_load(&h.count[DLOCK__BOUNDS]), 1);
    assert_int_equal(atomic_load(&h.sum_ns), 1201LL * 1000000000 + 2000001);
}

static void test_metrics_hold_is_observed_once(void **state)
{
    dlock__metrics m;
    dlock__name_metrics *e;
    _Atomic int64_t since;
    (void)state;
    assert_int_equal(dlock__metrics_init(&m, 1), 0);
    e = dlock__metrics_of(&m, "h");
    atomic_init(&since, dlock__now_ns() - 2000000000LL);
    dlock__metrics_hold_ended(e, &since);
    dlock__metrics_hold_ended(e, &since);
    assert_int_equal(atomic_load(&since), 0);
    assert_int_equal(atomic_load(&e->hold.count[7]), 1); /* 2 s: le=5 */
    assert_true(atomic_load(&e->hold.sum_ns) >= 2000000000LL);
    dlock__metrics_destroy(&m);
}

static dlock_client *open_capped(const char *url, unsigned max)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;
    char why[256];
    o.urls = &url;
    o.n_urls = 1;
    o.metrics_names_max = max;
    assert_int_equal(dlock_client_open(&c, &o, why, sizeof(why)), 0);
    return c;
}

/* A client's text, bumped by hand, read by prometheus_client: every family
 * with HELP and TYPE, escaped names, the overflow, the server without its
 * password; cut short in a small buffer as snprintf is. */
static void test_metrics_client_text_parses(void **state)
{
    dlock_client *c = open_capped("redis://:s3cret@127.0.0.1:1", 2);
    const char *odd = "odd \"name\" \\ with\nnewline";
    char small[100], *text = NULL, *parsed;
    int64_t len;
    (void)state;
    atomic_store(&dlock__metrics_of(&c->metrics, odd)->acquisitions, 3);
    dlock__metrics_acquired(dlock__metrics_of(&c->metrics, "plain"), DLOCK_EBUSY, 1, 2000000);
    dlock__metrics_acquired(dlock__metrics_of(&c->metrics, "third"), 0, 1, 0);
    dlock__metrics_renewed(dlock__metrics_of(&c->metrics, "plain"), 0, 1234);
    assert_int_equal(dlock_client_metrics_text(&text, c), 0);
    len = dlock_client_metrics(c, small, sizeof(small));
    assert_int_equal(len, strlen(text));
    assert_int_equal(strlen(small), sizeof(small) - 1);
    assert_memory_equal(small, text, sizeof(small) - 1);
    assert_int_equal(dlock_client_metrics(c, NULL, 0), len);
    assert_null(strstr(text, "s3cret"));
    parsed = promtext_parse(text);
    assert_int_equal(promtext_count(parsed, "dlock_acquisitions_total{name=\"odd \\\"name\\\" \\\\ "
                                            "with\\nnewline\"}"), 3);
    assert_int_equal(promtext_count(parsed, "dlock_busy_total{name=\"plain\"}"), 1);
    assert_int_equal(promtext_count(parsed, "dlock_acquisitions_total{name=\"__other__\"}"), 1);
    assert_int_equal(promtext_count(parsed, "dlock_acquisitions_total{name=\"third\"}"), -1);
    assert_int_equal(promtext_count(parsed, "dlock_wait_seconds_bucket{le=\"0.001\",name=\"plain\"}"), 0);
    assert_int_equal(promtext_count(parsed, "dlock_wait_seconds_bucket{le=\"0.005\",name=\"plain\"}"), 1);
    assert_int_equal(promtext_count(parsed, "dlock_wait_seconds_count{name=\"plain\"}"), 1);
    assert_float_equal(promtext_value(parsed, "dlock_wait_seconds_sum{name=\"plain\"}"), 0.002, 1e-9);
    assert_float_equal(promtext_value(parsed, "dlock_renewal_margin_min_seconds{name=\"plain\"}"),
                       1.234, 1e-9);
    assert_int_equal(promtext_count(parsed, "dlock_renewal_margin_min_seconds{name=\"__other__\"}"), -1);
    assert_int_equal(promtext_count(parsed, "dlock_server_errors_total{server=\"127.0.0.1:1\"}"), 0);
    assert_int_equal(promtext_count(parsed, "dlock_server_timeouts_total{server=\"127.0.0.1:1\"}"), 0);
    free(parsed);
    dlock_metrics_free(text);
    dlock_client_close(c);
}

/* Every family the library writes is in docs/operations.md's tables, which
 * check_examples.py holds the dashboard and the rules to. */
static void test_metrics_every_family_is_documented(void **state)
{
    static char docs[1 << 17];
    dlock_client *c = open_capped("redis://127.0.0.1:1", 0);
    char *text = NULL, *parsed, *line;
    FILE *f = fopen(SOURCE_DIR "/docs/operations.md", "r");
    size_t n, families = 0;
    (void)state;
    assert_non_null(f);
    n = fread(docs, 1, sizeof(docs) - 1, f);
    fclose(f);
    docs[n] = '\0';
    dlock__metrics_renewed(dlock__metrics_of(&c->metrics, "x"), 0, 1); /* the gauge has a sample */
    assert_int_equal(dlock_client_metrics_text(&text, c), 0);
    parsed = promtext_parse(text);
    for (line = strstr(parsed, "# TYPE "); line; line = strstr(line + 1, "# TYPE ")) {
        char quoted[128];
        snprintf(quoted, sizeof(quoted), "`%.*s`", (int)strcspn(line + 7, " "), line + 7);
        if (!strstr(docs, quoted))
            fail_msg("%s is not in docs/operations.md", quoted);
        families++;
    }
    assert_int_equal(families, 12);
    free(parsed);
    dlock_metrics_free(text);
    dlock_client_close(c);
}

static void test_metrics_refuses_bad_arguments(void **state)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;
    char buf[8], *text = NULL, why[256];
    (void)state;
    assert_int_equal(dlock_client_metrics(NULL, buf, sizeof(buf)), DLOCK_EINVAL);
    assert_int_equal(dlock_client_metrics_text(&text, NULL), DLOCK_EINVAL);
    assert_null(text);
    o.metrics_names_max = DLOCK_METRICS_NAMES_MAX + 1;
    assert_int_equal(dlock_client_open(&c, &o, why, sizeof(why)), DLOCK_EINVAL);
    assert_non_null(strstr(why, "metrics_names_max"));
    c = open_capped("redis://127.0.0.1:1", DLOCK_METRICS_NAMES_MAX);
    assert_int_equal(dlock_client_metrics(c, NULL, 5), DLOCK_EINVAL);
    assert_int_equal(dlock_client_metrics_text(NULL, c), DLOCK_EINVAL);
    dlock_client_close(c);
    dlock_metrics_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_text_counts_what_does_not_fit),
        cmocka_unit_test(test_metrics_label_escapes_backslash_quote_newline),
        cmocka_unit_test(test_metrics_utf8_check),
        cmocka_unit_test(test_metrics_name_cap_and_overflow),
        cmocka_unit_test(test_metrics_histogram_buckets),
        cmocka_unit_test(test_metrics_hold_is_observed_once),
        cmocka_unit_test(test_metrics_client_text_parses),
        cmocka_unit_test(test_metrics_every_family_is_documented),
        cmocka_unit_test(test_metrics_refuses_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
