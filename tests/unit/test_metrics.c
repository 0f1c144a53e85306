/* Metrics registry, metrics table, readiness/liveness decisions and the
 * HTTP endpoint. The registry is process-wide and CK_FORK=no runs every
 * test in one process, so counter tests compare before/after values; the
 * tests that depend on "never happened yet" state run first, in order.
 * The readiness windows read a clock_manual_t that the tests move. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "command.h"
#include "metrics/metrics.h"
#include "metrics/metrics_table.h"
#include "metrics/readiness.h"

/* ---- helpers ---- */

static char *render(void) {
  model_buf_t b = MODEL_BUF_INIT;
  metrics_render(&b);
  model_buf_putc(&b, '\0');
  return b.data;
}

/* Value of the series written exactly as `series` ("name{labels}" or "name"),
 * or NAN when the exposition has no such line. */
static double value_in(const char *text, const char *series) {
  size_t n = strlen(series);
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (!strncmp(p, series, n) && p[n] == ' ') return strtod(p + n + 1, NULL);
  }
  return NAN;
}

static double value(const char *series) {
  char *t = render();
  double v = value_in(t, series);
  free(t);
  return v;
}

/* The clock every readiness window of the registry reads, from the first
 * test on (an unchecked fixture): the tests move it instead of sleeping. */
static clock_manual_t g_clock;

static void use_manual_clock(void) {
  static bool done;
  if (done) return; /* once: times recorded since were read from it */
  done = true;
  clock_manual_init(&g_clock, 1000000, 1700000000000);
  metrics_set_clock(&g_clock.source);
}

typedef struct http_reply {
  int status;
  char head[2048];
  char *body; /* malloc'd, NUL-terminated */
  size_t body_len;
} http_reply_t;

/* A plain HTTP/1.0 client: one request, read to EOF. */
static bool http_get(int port, const char *method, const char *path, http_reply_t *r) {
  memset(r, 0, sizeof *r);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return false;
  }
  char req[256];
  int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n", method, path);
  ck_assert_int_eq(write(fd, req, (size_t)n), n);
  model_buf_t b = MODEL_BUF_INIT;
  char chunk[4096];
  ssize_t got;
  while ((got = read(fd, chunk, sizeof chunk)) > 0) model_buf_append(&b, chunk, (size_t)got);
  close(fd);
  model_buf_putc(&b, '\0');
  char *sep = strstr(b.data, "\r\n\r\n");
  ck_assert_msg(sep != NULL, "no header end in reply: %s", b.data);
  size_t hlen = (size_t)(sep - b.data);
  ck_assert_uint_lt(hlen, sizeof r->head);
  memcpy(r->head, b.data, hlen);
  r->head[hlen] = '\0';
  ck_assert_int_eq(sscanf(b.data, "HTTP/1.%*d %d", &r->status), 1);
  r->body_len = b.len - 1 - (hlen + 4);
  r->body = strdup(sep + 4);
  model_buf_destroy(&b);
  return true;
}

/* ---- the exposition, byte for byte (runs first) ---- */

/* The text of `path` under the source tree, NUL-terminated; fails the test
 * when it cannot be read. */
static char *read_source_file(const char *rel) {
  const char *src = getenv("AGG_SOURCE_DIR");
  ck_assert_msg(src != NULL, "AGG_SOURCE_DIR is not set");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", src, rel);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot read %s", path);
  model_buf_t b = MODEL_BUF_INIT;
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) model_buf_append(&b, chunk, n);
  fclose(f);
  model_buf_putc(&b, '\0');
  return b.data;
}

/* Every line of text except the process_* families, whose values belong to
 * the machine; their family names, in order, go to families. */
static void split_process(const char *text, model_buf_t *rest, model_buf_t *families) {
  for (const char *p = text; *p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
    if (!strncmp(p, "# TYPE process_", 15)) {
      const char *name = p + 7, *sp = memchr(name, ' ', len - 7);
      model_buf_append(families, name, (size_t)(sp - name));
      model_buf_putc(families, '\n');
    } else if (strncmp(p, "process_", 8) && strncmp(p, "# HELP process_", 15)) {
      model_buf_append(rest, p, len);
    }
    p += len;
  }
}

/* Records known values into every metric and compares the whole exposition
 * with tests/unit/metrics_exposition.txt: names, labels, HELP and TYPE
 * lines, order, bucket bounds and number formats are what dashboards and
 * alert rules read, so any change to them is deliberate. @VERSION@ there
 * stands for the build's version. Readiness is left alone: the next test
 * needs it untouched, and aggregator_ready reads 0 here. */
START_TEST(test_exposition_golden) {
  for (int t = 0; t < MODEL_CMD_TYPE_COUNT; t++)
    for (int r = 0; r <= METRICS_REJECTED; r++) metrics_command(t, (metrics_cmd_result_t)r, (uint64_t)(t * 10 + r + 1));
  metrics_command(METRICS_TYPE_INVALID, METRICS_REJECTED, 5);
  for (int c = 0; c <= MODEL_REJ_COUNT; c++) metrics_reject(c); /* MODEL_OK and out of range: other */
  metrics_reject(MODEL_REJ_INVALID_JSON);
  metrics_store_write(METRICS_WRITE_OK, 1000);
  metrics_store_write(METRICS_WRITE_CONFLICT, 20);
  metrics_store_write(METRICS_WRITE_ERROR, 3);
  metrics_store_write_bytes(18446744073709551615ull);
  metrics_store_too_large(2);
  metrics_dead_letter(METRICS_DEAD_LETTER_OK, 11);
  metrics_dead_letter(METRICS_DEAD_LETTER_ERROR, 4);
  metrics_change_event(METRICS_CHANGE_EVENT_OK, 13);
  metrics_change_event(METRICS_CHANGE_EVENT_ERROR, 2);
  metrics_set_change_events_pending(4, &g_clock.source, clock_mono(&g_clock.source) - 2500);
  metrics_set_dirty(12);
  metrics_set_cached(345, 883200);
  metrics_set_pending_bytes(67890);
  metrics_set_lag("commands", 0, 7);
  metrics_set_lag("commands", 11, 0);
  metrics_set_lag("we\"ird\\\ntopic", 2, -1);
  metrics_store_retry();
  metrics_store_retry();
  metrics_rebalance(METRICS_REBALANCE_ASSIGNED);
  metrics_rebalance(METRICS_REBALANCE_ASSIGNED);
  metrics_rebalance(METRICS_REBALANCE_REVOKED);
  metrics_rebalance((metrics_rebalance_t)9); /* out of range: ignored */
  metrics_set_bounds(268435456, 100000, 268435456);
  metrics_set_fetch_paused(true);
  metrics_set_assigned_partitions(3);
  metrics_set_committed_lag("commands", 0, 1207);
  metrics_set_committed_lag("we\"ird\\\ntopic", 2, 0);
  int64_t now = clock_wall(&g_clock.source);
  metrics_set_oldest_uncommitted("commands", 0, now - 90500);
  metrics_set_oldest_uncommitted("commands", 11, 0);                   /* nothing uncommitted */
  metrics_set_oldest_uncommitted("we\"ird\\\ntopic", 2, now + 5000); /* a producer's clock ahead: 0 */
  metrics_flush(0.001, 1);
  metrics_flush(0.0031, 7);
  metrics_flush(0.5, 100);
  metrics_flush(20.0, 20000);
  metrics_flush(NAN, 10000);
  metrics_latency(0.1, 3);
  metrics_latency(0.333, 1);
  metrics_latency(1e-9, 2);
  metrics_latency(301, 1);
  metrics_committable_latency(1.5, 2);
  metrics_committable_latency(0.125, 1000000);

  char *got = render();
  model_buf_t rest = MODEL_BUF_INIT, families = MODEL_BUF_INIT;
  split_process(got, &rest, &families);
  model_buf_putc(&rest, '\0');
  model_buf_putc(&families, '\0');

  char *tmpl = read_source_file("tests/unit/metrics_exposition.txt");
  model_buf_t want = MODEL_BUF_INIT;
  const char *at = strstr(tmpl, "@VERSION@");
  ck_assert(at != NULL);
  model_buf_append(&want, tmpl, (size_t)(at - tmpl));
  model_buf_puts(&want, AGG_VERSION);
  model_buf_puts(&want, at + 9);
  model_buf_putc(&want, '\0');
  if (strcmp(rest.data, want.data)) {
    FILE *f = fopen("metrics_exposition.got", "wb");
    if (f) {
      fputs(rest.data, f);
      fclose(f);
    }
  }
  ck_assert_msg(!strcmp(rest.data, want.data),
                "the exposition differs from tests/unit/metrics_exposition.txt (see metrics_exposition.got)");
  ck_assert_str_eq(families.data, "process_cpu_seconds_total\nprocess_start_time_seconds\n"
                                  "process_virtual_memory_bytes\nprocess_resident_memory_bytes\nprocess_open_fds\n");
  free(got);
  free(tmpl);
  model_buf_destroy(&rest);
  model_buf_destroy(&families);
  model_buf_destroy(&want);
  metrics_clear_lag("commands", 0);
  metrics_clear_lag("commands", 11);
  metrics_clear_lag("we\"ird\\\ntopic", 2);
  metrics_set_fetch_paused(false);
  metrics_set_assigned_partitions(0);
}
END_TEST

/* ---- "before anything happened" state (runs first) ---- */

START_TEST(test_initial_state) {
  char reason[128];
  ck_assert(!metrics_healthy(reason, sizeof reason));
  ck_assert_str_eq(reason, "main loop not started");
  metrics_set_assigned(true);
  ck_assert(!metrics_ready(reason, sizeof reason));
  ck_assert_str_eq(reason, "store has not answered yet");
  metrics_set_assigned(false);
  ck_assert(!metrics_ready(reason, sizeof reason));
  ck_assert_str_eq(reason, "no partition assignment");
  ck_assert_double_eq(value("aggregator_ready"), 0);
}
END_TEST

/* ---- counters and gauges ---- */

START_TEST(test_command_counters) {
  char *t = render();
  /* Every type x result series exists from the start, at zero or more. */
  static const char *const results[] = {"applied", "stale", "rejected"};
  for (int i = 0; i < MODEL_CMD_TYPE_COUNT; i++)
    for (int r = 0; r < 3; r++) {
      char s[128];
      snprintf(s, sizeof s, "aggregator_commands_total{type=\"%s\",result=\"%s\"}",
               model_cmd_type_name((model_cmd_type_t)i), results[r]);
      ck_assert_msg(!isnan(value_in(t, s)), "missing %s", s);
    }
  ck_assert(!isnan(value_in(t, "aggregator_commands_total{type=\"invalid\",result=\"rejected\"}")));
  ck_assert(isnan(value_in(t, "aggregator_commands_total{type=\"invalid\",result=\"applied\"}")));
  ck_assert_ptr_nonnull(strstr(t, "# TYPE aggregator_commands_total counter\n"));
  ck_assert_ptr_nonnull(strstr(t, "# HELP aggregator_commands_total "));
  double up_applied = value_in(t, "aggregator_commands_total{type=\"assignment.upserted\",result=\"applied\"}");
  double grade_stale = value_in(t, "aggregator_commands_total{type=\"grade.updated\",result=\"stale\"}");
  double grade_applied = value_in(t, "aggregator_commands_total{type=\"grade.updated\",result=\"applied\"}");
  double invalid = value_in(t, "aggregator_commands_total{type=\"invalid\",result=\"rejected\"}");
  double roster_rej = value_in(t, "aggregator_commands_total{type=\"roster.assigned\",result=\"rejected\"}");
  free(t);

  metrics_command(MODEL_CMD_ASSIGNMENT_UPSERTED, METRICS_APPLIED, 1);
  metrics_command(MODEL_CMD_ASSIGNMENT_UPSERTED, METRICS_APPLIED, 1);
  metrics_command(MODEL_CMD_GRADE_UPDATED, METRICS_STALE, 3);
  metrics_command(MODEL_CMD_ROSTER_ASSIGNED, METRICS_REJECTED, 1);
  metrics_command(METRICS_TYPE_INVALID, METRICS_REJECTED, 1);
  metrics_command(MODEL_CMD_TYPE_COUNT + 7, METRICS_REJECTED, 2); /* counted as invalid */
  metrics_command(-5, METRICS_REJECTED, 1);                      /* too */

  t = render();
  ck_assert_double_eq(value_in(t, "aggregator_commands_total{type=\"assignment.upserted\",result=\"applied\"}"),
                      up_applied + 2);
  ck_assert_double_eq(value_in(t, "aggregator_commands_total{type=\"grade.updated\",result=\"stale\"}"),
                      grade_stale + 3);
  ck_assert_double_eq(value_in(t, "aggregator_commands_total{type=\"grade.updated\",result=\"applied\"}"),
                      grade_applied);
  ck_assert_double_eq(value_in(t, "aggregator_commands_total{type=\"roster.assigned\",result=\"rejected\"}"),
                      roster_rej + 1);
  ck_assert_double_eq(value_in(t, "aggregator_commands_total{type=\"invalid\",result=\"rejected\"}"), invalid + 4);
  free(t);
}
END_TEST

START_TEST(test_reject_counters) {
  char *t = render();
  for (int c = 1; c < MODEL_REJ_COUNT; c++) {
    char s[128];
    snprintf(s, sizeof s, "aggregator_rejects_total{code=\"%s\"}", model_reject_code_name((model_reject_code_t)c));
    ck_assert_msg(!isnan(value_in(t, s)), "missing %s", s);
  }
  ck_assert_ptr_nonnull(strstr(t, "# TYPE aggregator_rejects_total counter\n"));
  double too_large = value_in(t, "aggregator_rejects_total{code=\"too_large\"}");
  double dup = value_in(t, "aggregator_rejects_total{code=\"duplicate_key\"}");
  double other = value_in(t, "aggregator_rejects_total{code=\"other\"}");
  double json = value_in(t, "aggregator_rejects_total{code=\"invalid_json\"}");
  free(t);

  metrics_reject(MODEL_REJ_TOO_LARGE);
  metrics_reject(MODEL_REJ_TOO_LARGE);
  metrics_reject(MODEL_REJ_DUPLICATE_KEY);
  metrics_reject(MODEL_REJ_COUNT + 3); /* out of range: other */

  t = render();
  ck_assert_double_eq(value_in(t, "aggregator_rejects_total{code=\"too_large\"}"), too_large + 2);
  ck_assert_double_eq(value_in(t, "aggregator_rejects_total{code=\"duplicate_key\"}"), dup + 1);
  ck_assert_double_eq(value_in(t, "aggregator_rejects_total{code=\"other\"}"), other + 1);
  ck_assert_double_eq(value_in(t, "aggregator_rejects_total{code=\"invalid_json\"}"), json);
  free(t);
}
END_TEST

START_TEST(test_store_write_counters) {
  double ok = value("aggregator_store_writes_total{result=\"ok\"}");
  double conflict = value("aggregator_store_writes_total{result=\"conflict\"}");
  double error = value("aggregator_store_writes_total{result=\"error\"}");
  ck_assert(!isnan(ok) && !isnan(conflict) && !isnan(error));
  metrics_store_write(METRICS_WRITE_OK, 500);
  metrics_store_write(METRICS_WRITE_OK, 7);
  metrics_store_write(METRICS_WRITE_CONFLICT, 2);
  metrics_store_write(METRICS_WRITE_ERROR, 1);
  ck_assert_double_eq(value("aggregator_store_writes_total{result=\"ok\"}"), ok + 507);
  ck_assert_double_eq(value("aggregator_store_writes_total{result=\"conflict\"}"), conflict + 2);
  ck_assert_double_eq(value("aggregator_store_writes_total{result=\"error\"}"), error + 1);
}
END_TEST

/* A family of results ok and error (a delivery's), through its recorder:
 * both series rendered at zero too, each counted, a result out of range
 * ignored. */
static void check_ok_error(const char *family, void (*record)(int result, uint64_t n)) {
  char ok_series[128], error_series[128];
  snprintf(ok_series, sizeof ok_series, "%s{result=\"ok\"}", family);
  snprintf(error_series, sizeof error_series, "%s{result=\"error\"}", family);
  double ok = value(ok_series), error = value(error_series);
  ck_assert(!isnan(ok) && !isnan(error));
  record(0, 3);
  record(1, 1);
  record(1, 1);
  record(7, 100);
  ck_assert_double_eq(value(ok_series), ok + 3);
  ck_assert_double_eq(value(error_series), error + 2);
}

static void record_dead_letter(int r, uint64_t n) { metrics_dead_letter((metrics_dead_letter_result_t)r, n); }
static void record_change_event(int r, uint64_t n) { metrics_change_event((metrics_change_event_result_t)r, n); }

START_TEST(test_dead_letter_counters) {
  ck_assert_int_eq(METRICS_DEAD_LETTER_OK, 0);
  ck_assert_int_eq(METRICS_DEAD_LETTER_ERROR, 1);
  check_ok_error("aggregator_dead_letter_deliveries_total", record_dead_letter);
}
END_TEST

START_TEST(test_change_event_counters) {
  ck_assert_int_eq(METRICS_CHANGE_EVENT_OK, 0);
  ck_assert_int_eq(METRICS_CHANGE_EVENT_ERROR, 1);
  check_ok_error("aggregator_change_events_total", record_change_event);
}
END_TEST

/* The oldest pending change event's age is read against the producer's
 * clock when scraped: it grows while nothing is reported, is 0 with none
 * pending, and a time ahead of the clock reads 0. */
START_TEST(test_change_events_pending) {
  clock_manual_t producer;
  clock_manual_init(&producer, 5000, 0);
  metrics_set_change_events_pending(2, &producer.source, 4000);
  ck_assert_double_eq(value("aggregator_change_events_pending"), 2);
  ck_assert_double_eq(value("aggregator_change_events_oldest_pending_seconds"), 1);
  clock_manual_advance(&producer, 1250);
  ck_assert_double_eq(value("aggregator_change_events_oldest_pending_seconds"), 2.25);
  metrics_set_change_events_pending(1, &producer.source, 7000);
  ck_assert_double_eq(value("aggregator_change_events_oldest_pending_seconds"), 0);
  metrics_set_change_events_pending(0, &producer.source, 1);
  ck_assert_double_eq(value("aggregator_change_events_pending"), 0);
  ck_assert_double_eq(value("aggregator_change_events_oldest_pending_seconds"), 0);
}
END_TEST

START_TEST(test_gauges) {
  metrics_set_dirty(7);
  metrics_set_cached(100000, 987654321);
  metrics_set_pending_bytes(123456789);
  char *t = render();
  ck_assert_double_eq(value_in(t, "aggregator_dirty_aggregates"), 7);
  ck_assert_double_eq(value_in(t, "aggregator_cached_aggregates"), 100000);
  ck_assert_double_eq(value_in(t, "aggregator_cached_bytes"), 987654321);
  ck_assert_double_eq(value_in(t, "aggregator_pending_bytes"), 123456789);
  ck_assert_ptr_nonnull(strstr(t, "# TYPE aggregator_dirty_aggregates gauge\n"));
  ck_assert_ptr_nonnull(strstr(t, "# TYPE aggregator_pending_bytes gauge\n"));
  free(t);
  metrics_set_dirty(0); /* gauges are set, not added */
  ck_assert_double_eq(value("aggregator_dirty_aggregates"), 0);
}
END_TEST

START_TEST(test_consumer_lag) {
  metrics_set_lag("commands", 0, 10);
  metrics_set_lag("commands", 1, 5);
  metrics_set_lag("roster", 0, 0);
  metrics_set_lag("commands", 0, 3); /* update in place */
  char *t = render();
  ck_assert_ptr_nonnull(strstr(t, "# TYPE aggregator_consumer_lag gauge\n"));
  ck_assert_double_eq(value_in(t, "aggregator_consumer_lag{topic=\"commands\",partition=\"0\"}"), 3);
  ck_assert_double_eq(value_in(t, "aggregator_consumer_lag{topic=\"commands\",partition=\"1\"}"), 5);
  ck_assert_double_eq(value_in(t, "aggregator_consumer_lag{topic=\"roster\",partition=\"0\"}"), 0);
  free(t);

  metrics_clear_lag("commands", 1); /* revoked */
  metrics_clear_lag("nothing", 9);  /* unknown: no effect */
  metrics_set_lag("we\"ird\\", 2, 1);
  t = render();
  ck_assert(isnan(value_in(t, "aggregator_consumer_lag{topic=\"commands\",partition=\"1\"}")));
  ck_assert_double_eq(value_in(t, "aggregator_consumer_lag{topic=\"commands\",partition=\"0\"}"), 3);
  ck_assert_double_eq(value_in(t, "aggregator_consumer_lag{topic=\"we\\\"ird\\\\\",partition=\"2\"}"), 1);
  free(t);
  metrics_clear_lag("commands", 0);
  metrics_clear_lag("roster", 0);
  metrics_clear_lag("we\"ird\\", 2);
  t = render();
  ck_assert_ptr_null(strstr(t, "aggregator_consumer_lag{"));
  free(t);
}
END_TEST

START_TEST(test_retries_and_rebalances) {
  double retries = value("aggregator_store_retries_total");
  double assigned = value("aggregator_rebalances_total{event=\"assigned\"}");
  double revoked = value("aggregator_rebalances_total{event=\"revoked\"}");
  double lost = value("aggregator_rebalances_total{event=\"lost\"}");
  ck_assert(!isnan(retries) && !isnan(assigned) && !isnan(revoked) && !isnan(lost)); /* rendered at zero too */
  metrics_store_retry();
  metrics_rebalance(METRICS_REBALANCE_ASSIGNED);
  metrics_rebalance(METRICS_REBALANCE_LOST);
  metrics_rebalance(METRICS_REBALANCE_LOST);
  metrics_rebalance((metrics_rebalance_t)3); /* out of range: ignored */
  char *t = render();
  ck_assert_ptr_nonnull(strstr(t, "# TYPE aggregator_store_retries_total counter\n"));
  ck_assert_ptr_nonnull(strstr(t, "# TYPE aggregator_rebalances_total counter\n"));
  ck_assert_double_eq(value_in(t, "aggregator_store_retries_total"), retries + 1);
  ck_assert_double_eq(value_in(t, "aggregator_rebalances_total{event=\"assigned\"}"), assigned + 1);
  ck_assert_double_eq(value_in(t, "aggregator_rebalances_total{event=\"revoked\"}"), revoked);
  ck_assert_double_eq(value_in(t, "aggregator_rebalances_total{event=\"lost\"}"), lost + 2);
  free(t);
}
END_TEST

START_TEST(test_bounds_paused_assigned) {
  metrics_set_bounds(64ull << 20, 5000, 256ull << 20);
  metrics_set_fetch_paused(true);
  metrics_set_assigned_partitions(12);
  char *t = render();
  ck_assert_double_eq(value_in(t, "aggregator_pending_bytes_limit"), 64 << 20);
  ck_assert_double_eq(value_in(t, "aggregator_cached_aggregates_limit"), 5000);
  ck_assert_double_eq(value_in(t, "aggregator_cached_bytes_limit"), 256 << 20);
  ck_assert_double_eq(value_in(t, "aggregator_fetch_paused"), 1);
  ck_assert_double_eq(value_in(t, "aggregator_assigned_partitions"), 12);
  ck_assert_ptr_nonnull(strstr(t, "# TYPE aggregator_pending_bytes_limit gauge\n"));
  ck_assert_ptr_nonnull(strstr(t, "# TYPE aggregator_fetch_paused gauge\n"));
  free(t);
  metrics_set_bounds(16ull << 30, 0, 0); /* a reload: set, not added */
  metrics_set_fetch_paused(false);
  metrics_set_assigned_partitions(0);
  t = render();
  ck_assert_double_eq(value_in(t, "aggregator_pending_bytes_limit"), (double)(16ull << 30));
  ck_assert_double_eq(value_in(t, "aggregator_cached_aggregates_limit"), 0);
  ck_assert_double_eq(value_in(t, "aggregator_cached_bytes_limit"), 0);
  ck_assert_double_eq(value_in(t, "aggregator_fetch_paused"), 0);
  ck_assert_double_eq(value_in(t, "aggregator_assigned_partitions"), 0);
  free(t);
}
END_TEST

/* The committed-offset lag and the oldest uncommitted command's age live
 * beside the position lag, per partition; the age is read against the
 * clock at scrape time, so it grows while nothing reports. */
START_TEST(test_partition_series) {
  const char *lag = "aggregator_consumer_lag{topic=\"t\",partition=\"4\"}";
  const char *committed = "aggregator_consumer_committed_lag{topic=\"t\",partition=\"4\"}";
  const char *age = "aggregator_oldest_uncommitted_age_seconds{topic=\"t\",partition=\"4\"}";
  const char *age5 = "aggregator_oldest_uncommitted_age_seconds{topic=\"t\",partition=\"5\"}";
  int64_t now = clock_wall(&g_clock.source);
  metrics_set_oldest_uncommitted("t", 5, 0); /* assigned, nothing consumed yet: age 0, no lag yet */
  metrics_set_lag("t", 4, 10);
  metrics_set_committed_lag("t", 4, 250);
  metrics_set_oldest_uncommitted("t", 4, now - 2000);
  char *t = render();
  ck_assert_ptr_nonnull(strstr(t, "# TYPE aggregator_consumer_committed_lag gauge\n"));
  ck_assert_ptr_nonnull(strstr(t, "# TYPE aggregator_oldest_uncommitted_age_seconds gauge\n"));
  ck_assert_double_eq(value_in(t, lag), 10);
  ck_assert_double_eq(value_in(t, committed), 250);
  ck_assert_double_eq(value_in(t, age), 2);
  ck_assert_double_eq(value_in(t, age5), 0);
  ck_assert(isnan(value_in(t, "aggregator_consumer_lag{topic=\"t\",partition=\"5\"}")));
  ck_assert(isnan(value_in(t, "aggregator_consumer_committed_lag{topic=\"t\",partition=\"5\"}")));
  free(t);

  clock_manual_advance(&g_clock, 60250); /* nothing reported meanwhile: the age still grows */
  ck_assert_double_eq(value(age), 62.25);
  ck_assert_double_eq(value(age5), 0);
  clock_manual_step_wall(&g_clock, 3600000); /* the age is a wall-clock difference, like Kafka's retention */
  ck_assert_double_eq(value(age), 3662.25);

  metrics_set_oldest_uncommitted("t", 4, 0); /* committed up to what was consumed */
  metrics_set_committed_lag("t", 4, 0);
  ck_assert_double_eq(value(age), 0);
  ck_assert_double_eq(value(committed), 0);
  ck_assert_double_eq(value(lag), 10);

  metrics_clear_lag("t", 4); /* revoked: every series of the partition goes */
  metrics_clear_lag("t", 5);
  t = render();
  ck_assert(isnan(value_in(t, lag)) && isnan(value_in(t, committed)) && isnan(value_in(t, age)));
  ck_assert_ptr_null(strstr(t, "aggregator_oldest_uncommitted_age_seconds{"));
  ck_assert_ptr_null(strstr(t, "aggregator_consumer_committed_lag{"));
  free(t);
}
END_TEST

/* ---- histograms ---- */

/* Checks the structure of one histogram family: TYPE line, buckets in
 * ascending le order with non-decreasing cumulative counts, +Inf last and
 * equal to _count. Returns the number of buckets. */
static int check_histogram_shape(const char *t, const char *name) {
  char want[160];
  snprintf(want, sizeof want, "# TYPE %s histogram\n", name);
  ck_assert_msg(strstr(t, want) != NULL, "no TYPE line for %s", name);
  snprintf(want, sizeof want, "%s_bucket{le=\"", name);
  double prev_le = -INFINITY, prev_count = -1;
  int buckets = 0;
  bool saw_inf = false;
  for (const char *p = strstr(t, want); p; p = strstr(p + 1, want)) {
    ck_assert(!saw_inf); /* nothing after +Inf */
    const char *le = p + strlen(want);
    double bound = !strncmp(le, "+Inf\"", 5) ? INFINITY : strtod(le, NULL);
    saw_inf = isinf(bound);
    ck_assert_msg(bound > prev_le, "%s: le not ascending", name);
    const char *v = strstr(le, "} ");
    double count = strtod(v + 2, NULL);
    ck_assert_msg(count >= prev_count, "%s: buckets not cumulative", name);
    prev_le = bound;
    prev_count = count;
    buckets++;
  }
  ck_assert(saw_inf);
  snprintf(want, sizeof want, "%s_count", name);
  ck_assert_double_eq(value_in(t, want), prev_count);
  snprintf(want, sizeof want, "%s_sum", name);
  ck_assert(!isnan(value_in(t, want)));
  return buckets;
}

#define B(name, le) value_in(t, name "_bucket{le=\"" le "\"}")

START_TEST(test_histograms) {
  const char *fd = "aggregator_flush_duration_seconds";
  const char *fa = "aggregator_flush_aggregates";
  const char *lat = "aggregator_command_durable_latency_seconds";
  const char *com = "aggregator_command_committable_latency_seconds";
  char *t = render();
  ck_assert_int_ge(check_histogram_shape(t, fd), 5);
  ck_assert_int_ge(check_histogram_shape(t, fa), 5);
  ck_assert_int_ge(check_histogram_shape(t, lat), 5);
  ck_assert_int_ge(check_histogram_shape(t, com), 5);
  double c_1 = B("aggregator_command_committable_latency_seconds", "1"),
         c_2 = B("aggregator_command_committable_latency_seconds", "2");
  double d_0025 = B("aggregator_flush_duration_seconds", "0.0025"), d_0005 = B("aggregator_flush_duration_seconds", "0.005"),
         d_05 = B("aggregator_flush_duration_seconds", "0.5"), d_10 = B("aggregator_flush_duration_seconds", "10"),
         d_inf = B("aggregator_flush_duration_seconds", "+Inf");
  double d_sum = value_in(t, "aggregator_flush_duration_seconds_sum");
  double d_count = value_in(t, "aggregator_flush_duration_seconds_count");
  double a_5 = B("aggregator_flush_aggregates", "5"), a_10 = B("aggregator_flush_aggregates", "10"),
         a_100 = B("aggregator_flush_aggregates", "100"), a_inf = B("aggregator_flush_aggregates", "+Inf");
  double a_sum = value_in(t, "aggregator_flush_aggregates_sum");
  double l_inf = B("aggregator_command_durable_latency_seconds", "+Inf");
  double l_sum = value_in(t, "aggregator_command_durable_latency_seconds_sum");
  double l_1 = B("aggregator_command_durable_latency_seconds", "1");
  double l_07 = B("aggregator_command_durable_latency_seconds", "0.7");
  double l_08 = B("aggregator_command_durable_latency_seconds", "0.8");
  ck_assert(!isnan(d_0025) && !isnan(d_0005) && !isnan(d_05) && !isnan(d_10) && !isnan(a_5) && !isnan(a_10) &&
            !isnan(a_100) && !isnan(l_1) && !isnan(l_07) && !isnan(l_08));
  free(t);

  metrics_flush(0.003, 7);    /* le 0.005 */
  metrics_flush(0.5, 100);    /* exactly on a bound: le is inclusive */
  metrics_flush(20.0, 20000); /* above every bound: +Inf only */
  metrics_latency(0.75, 3);
  metrics_latency(NAN, 1); /* ignored */
  metrics_committable_latency(1.5, 2); /* its own histogram: le 1.75 */

  t = render();
  check_histogram_shape(t, fd);
  check_histogram_shape(t, fa);
  check_histogram_shape(t, lat);
  check_histogram_shape(t, com);
  ck_assert_double_eq(B("aggregator_command_committable_latency_seconds", "1"), c_1);
  ck_assert_double_eq(B("aggregator_command_committable_latency_seconds", "2"), c_2 + 2);
  ck_assert_double_eq(B("aggregator_flush_duration_seconds", "0.0025"), d_0025);
  ck_assert_double_eq(B("aggregator_flush_duration_seconds", "0.005"), d_0005 + 1);
  ck_assert_double_eq(B("aggregator_flush_duration_seconds", "0.5"), d_05 + 2);
  ck_assert_double_eq(B("aggregator_flush_duration_seconds", "10"), d_10 + 2);
  ck_assert_double_eq(B("aggregator_flush_duration_seconds", "+Inf"), d_inf + 3);
  ck_assert_double_eq(value_in(t, "aggregator_flush_duration_seconds_count"), d_count + 3);
  ck_assert_double_eq_tol(value_in(t, "aggregator_flush_duration_seconds_sum"), d_sum + 20.503, 1e-9);
  ck_assert_double_eq(B("aggregator_flush_aggregates", "5"), a_5);
  ck_assert_double_eq(B("aggregator_flush_aggregates", "10"), a_10 + 1);
  ck_assert_double_eq(B("aggregator_flush_aggregates", "100"), a_100 + 2);
  ck_assert_double_eq(B("aggregator_flush_aggregates", "+Inf"), a_inf + 3);
  ck_assert_double_eq_tol(value_in(t, "aggregator_flush_aggregates_sum"), a_sum + 20107, 1e-9);
  ck_assert_double_eq(B("aggregator_command_durable_latency_seconds", "0.7"), l_07); /* 0.75: the bucket le 0.8 */
  ck_assert_double_eq(B("aggregator_command_durable_latency_seconds", "0.8"), l_08 + 3);
  ck_assert_double_eq(B("aggregator_command_durable_latency_seconds", "1"), l_1 + 3);
  ck_assert_double_eq(B("aggregator_command_durable_latency_seconds", "+Inf"), l_inf + 3);
  ck_assert_double_eq_tol(value_in(t, "aggregator_command_durable_latency_seconds_sum"), l_sum + 2.25, 1e-9);
  free(t);
}
END_TEST

/* ---- readiness and liveness ---- */

START_TEST(test_readiness_transitions) {
  char reason[128];
  metrics_set_windows(3600, 3600);
  metrics_set_assigned(true);
  metrics_store_answered();
  ck_assert(metrics_ready(reason, sizeof reason));
  ck_assert_str_eq(reason, "");
  ck_assert_double_eq(value("aggregator_ready"), 1);

  metrics_store_failed();
  ck_assert(!metrics_ready(reason, sizeof reason));
  ck_assert_str_eq(reason, "store unreachable");
  ck_assert_double_eq(value("aggregator_ready"), 0);

  metrics_store_answered(); /* recovered by itself */
  ck_assert(metrics_ready(NULL, 0));

  metrics_set_dead_letter_failing(true); /* docs/GUARANTEES.md: not ready while rejects cannot be delivered */
  ck_assert(!metrics_ready(reason, sizeof reason));
  ck_assert_str_eq(reason, "dead-letter delivery failing");
  ck_assert_double_eq(value("aggregator_ready"), 0);
  metrics_set_dead_letter_failing(false);
  ck_assert(metrics_ready(NULL, 0));

  metrics_set_changes_failing(true); /* SPEC.md 5: not ready while writes cannot be announced */
  ck_assert(!metrics_ready(reason, sizeof reason));
  ck_assert_str_eq(reason, "change-event delivery failing");
  ck_assert_double_eq(value("aggregator_ready"), 0);
  metrics_set_changes_failing(false);
  ck_assert(metrics_ready(NULL, 0));

  metrics_set_assigned(false); /* rebalance took every partition */
  ck_assert(!metrics_ready(reason, sizeof reason));
  ck_assert_str_eq(reason, "no partition assignment");
  metrics_set_assigned(true);
  ck_assert(metrics_ready(NULL, 0));

  /* The store has not answered within the window: not ready. */
  metrics_set_windows(2, 3600);
  clock_manual_advance(&g_clock, 2000);
  ck_assert(metrics_ready(NULL, 0)); /* the window's end is still in it */
  clock_manual_advance(&g_clock, 1);
  ck_assert(!metrics_ready(reason, sizeof reason));
  ck_assert_str_eq(reason, "store silent for 2.0 s");
  ck_assert_double_eq(value("aggregator_ready"), 0);
  clock_manual_step_wall(&g_clock, -3600000); /* a wall-clock step moves no window */
  ck_assert(!metrics_ready(reason, sizeof reason));
  ck_assert_str_eq(reason, "store silent for 2.0 s");
  metrics_store_answered();
  ck_assert(metrics_ready(NULL, 0));
  metrics_set_windows(3600, 3600);
  ck_assert(metrics_ready(NULL, 0));
}
END_TEST

START_TEST(test_liveness) {
  char reason[128];
  metrics_set_windows(3600, 3600);
  metrics_heartbeat();
  ck_assert(metrics_healthy(reason, sizeof reason));
  metrics_set_windows(3600, 0.001); /* one millisecond, the clock's unit */
  clock_manual_advance(&g_clock, 1);
  ck_assert(metrics_healthy(NULL, 0));
  clock_manual_advance(&g_clock, 1500);
  ck_assert(!metrics_healthy(reason, sizeof reason));
  ck_assert_str_eq(reason, "main loop stalled: no heartbeat for 1.5 s");
  metrics_heartbeat();
  metrics_set_windows(3600, 3600);
  ck_assert(metrics_healthy(NULL, 0));
}
END_TEST

/* The policy on an instance of its own, with its own clock: the registry's
 * is one use of it. */
START_TEST(test_readiness_policy) {
  clock_manual_t clk;
  clock_manual_init(&clk, 0, 0); /* time 0 is a time like any other, not "never" */
  readiness_t r;
  readiness_init(&r, &clk.source);
  char reason[128];
  ck_assert(!readiness_healthy(&r, reason, sizeof reason));
  ck_assert_str_eq(reason, "main loop not started");
  readiness_heartbeat(&r);
  ck_assert(readiness_healthy(&r, reason, sizeof reason));
  ck_assert_str_eq(reason, "");
  clock_manual_advance(&clk, READINESS_HEARTBEAT_WINDOW_MS);
  ck_assert(readiness_healthy(&r, NULL, 0));
  clock_manual_advance(&clk, 1);
  ck_assert(!readiness_healthy(&r, reason, sizeof reason));
  ck_assert_str_eq(reason, "main loop stalled: no heartbeat for 30.0 s");

  readiness_set_assigned(&r, true);
  ck_assert(!readiness_ready(&r, reason, sizeof reason));
  ck_assert_str_eq(reason, "store has not answered yet");
  readiness_store_answered(&r);
  ck_assert(readiness_ready(&r, NULL, 0));
  readiness_set_windows_ms(&r, 100, 0); /* 0: the heartbeat window stays */
  clock_manual_advance(&clk, 101);
  ck_assert(!readiness_ready(&r, reason, sizeof reason));
  ck_assert_str_eq(reason, "store silent for 0.1 s");
  readiness_store_answered(&r);
  readiness_store_failed(&r);
  ck_assert(!readiness_ready(&r, reason, sizeof reason));
  ck_assert_str_eq(reason, "store unreachable");
  readiness_store_answered(&r);
  readiness_set_dead_letter_failing(&r, true);
  ck_assert(!readiness_ready(&r, reason, sizeof reason));
  ck_assert_str_eq(reason, "dead-letter delivery failing");
  readiness_set_dead_letter_failing(&r, false);
  ck_assert(readiness_ready(&r, NULL, 0));
  /* A store fault with its cause: named until the store answers. */
  readiness_store_failed_cause(&r, "credentials refused");
  ck_assert(!readiness_ready(&r, reason, sizeof reason));
  ck_assert_str_eq(reason, "store unreachable: credentials refused");
  readiness_store_answered(&r);
  ck_assert(readiness_ready(&r, NULL, 0));
  /* A source that cannot do its work: named first, even with no assignment. */
  readiness_set_source_failing(&r, "not authorized: may not read kafka.topics 't'");
  ck_assert(!readiness_ready(&r, reason, sizeof reason));
  ck_assert_str_eq(reason, "Kafka: not authorized: may not read kafka.topics 't'");
  readiness_set_assigned(&r, false);
  ck_assert(!readiness_ready(&r, reason, sizeof reason));
  ck_assert_str_eq(reason, "Kafka: not authorized: may not read kafka.topics 't'");
  readiness_set_assigned(&r, true);
  readiness_set_source_failing(&r, NULL);
  ck_assert(readiness_ready(&r, NULL, 0));
  readiness_heartbeat(&r);
  clock_manual_advance(&clk, READINESS_HEARTBEAT_WINDOW_MS);
  ck_assert(readiness_healthy(&r, NULL, 0));
}
END_TEST

/* ---- the metrics table ---- */

/* What the renderer and the docs generator rely on, row by row. */
START_TEST(test_table_rows) {
  for (size_t r = 0; r < METRICS_ROW_COUNT; r++) {
    const metrics_def_t *m = &metrics_table[r];
    ck_assert_msg(m->name && m->help && *m->help, "row %zu: no name or help", r);
    ck_assert_msg(!strchr(m->help, '\n') && !strchr(m->help, '\\'), "%s: help must stay one plain line", m->name);
    int sources = (m->slots != NULL) + (m->hist != NULL) + (m->read != NULL) + (m->part != METRICS_PART_NONE);
    ck_assert_msg(sources == 1, "%s: %d sample sources", m->name, sources);
    ck_assert_msg((m->type == METRICS_HISTOGRAM) == (m->hist != NULL), "%s: histogram without buckets", m->name);
    ck_assert_uint_le(m->nlabels, METRICS_MAX_LABELS);
    for (size_t q = 0; q < r; q++) ck_assert_str_ne(metrics_table[q].name, m->name);
    size_t combinations = 1;
    for (size_t l = 0; l < m->nlabels; l++) {
      const metrics_label_t *lab = &m->labels[l];
      ck_assert_msg(lab->name && *lab->name, "%s: label %zu has no name", m->name, l);
      ck_assert_msg(lab->count || lab->doc, "%s: label %s has neither values nor doc", m->name, lab->name);
      for (size_t i = 0; i < lab->count; i++) ck_assert_ptr_nonnull(metrics_label_value(lab, i));
      ck_assert_ptr_null(metrics_label_value(lab, lab->count));
      combinations *= lab->count;
    }
    if (m->slots) ck_assert_msg(m->nslots == combinations, "%s: %zu slots for %zu series", m->name, m->nslots,
                                combinations);
    if (m->part) ck_assert_uint_gt(m->nlabels, 0);
    if (m->read) ck_assert_uint_eq(m->nlabels, 0);
    if (m->hist) {
      ck_assert_uint_eq(m->nlabels, 0);
      ck_assert(m->nbounds > 0 && m->nbounds <= METRICS_HIST_MAX_BOUNDS);
      for (size_t b = 1; b < m->nbounds; b++) ck_assert_msg(m->bounds[b - 1] < m->bounds[b], "%s: le", m->name);
    }
  }
}
END_TEST

/* Each line of METRICS_FAMILIES is the row of its ID, in the order of the
 * lines, with the line's name and type: the enum and the rows follow from
 * the same line. */
START_TEST(test_families_lines) {
#define FAMILY_LINE(id, name, type, ...) {METRICS_ROW_##id, name, METRICS_##type},
  static const struct {
    metrics_row_t row;
    const char *name;
    metrics_type_t type;
  } lines[] = {METRICS_FAMILIES(FAMILY_LINE)};
#undef FAMILY_LINE
  ck_assert_uint_eq(sizeof lines / sizeof lines[0], METRICS_ROW_COUNT);
  for (size_t i = 0; i < METRICS_ROW_COUNT; i++) {
    ck_assert_uint_eq(lines[i].row, i);
    ck_assert_str_eq(metrics_table[i].name, lines[i].name);
    ck_assert_int_eq(metrics_table[i].type, lines[i].type);
  }
}
END_TEST

/* A label's enum constant is the index of its value: a recorder's argument
 * and the series it lands in come from one list. */
START_TEST(test_label_enums) {
#define CHECK_VALUE(c, value) ck_assert_str_eq(metrics_label_value(lab, (size_t)(c)), value);
  const metrics_label_t *lab = &metrics_table[METRICS_ROW_COMMANDS].labels[1];
  METRICS_CMD_RESULTS(CHECK_VALUE)
  lab = &metrics_table[METRICS_ROW_STORE_WRITES].labels[0];
  METRICS_WRITE_RESULTS(CHECK_VALUE)
  lab = &metrics_table[METRICS_ROW_DEAD_LETTERS].labels[0];
  METRICS_DEAD_LETTER_RESULTS(CHECK_VALUE)
  lab = &metrics_table[METRICS_ROW_CHANGE_EVENTS].labels[0];
  METRICS_CHANGE_EVENT_RESULTS(CHECK_VALUE)
  lab = &metrics_table[METRICS_ROW_REBALANCES].labels[0];
  METRICS_REBALANCE_EVENTS(CHECK_VALUE)
#undef CHECK_VALUE
}
END_TEST

static uint64_t slot_value(metrics_row_t row, size_t series) {
  return atomic_load_explicit(&metrics_table[row].slots[series], memory_order_relaxed);
}

/* The generic recorders write only where the family's line says: a counter
 * adds, a gauge is set, a histogram observes; a series past the family's,
 * a row past the table or a recorder of another type changes nothing. */
START_TEST(test_generic_recorders) {
  uint64_t conflict = slot_value(METRICS_ROW_STORE_WRITES, METRICS_WRITE_CONFLICT);
  uint64_t error = slot_value(METRICS_ROW_STORE_WRITES, METRICS_WRITE_ERROR);
  metrics_add(METRICS_ROW_STORE_WRITES, METRICS_WRITE_CONFLICT, 5);
  ck_assert_uint_eq(slot_value(METRICS_ROW_STORE_WRITES, METRICS_WRITE_CONFLICT), conflict + 5);
  metrics_add(METRICS_ROW_STORE_WRITES, METRICS_WRITE_ERROR + 1, 5); /* past the family's series */
  metrics_set(METRICS_ROW_STORE_WRITES, METRICS_WRITE_CONFLICT, 1);  /* a counter is not set */
  metrics_add(METRICS_ROW_COUNT, 0, 5);                              /* no such row */
  ck_assert_uint_eq(slot_value(METRICS_ROW_STORE_WRITES, METRICS_WRITE_CONFLICT), conflict + 5);
  ck_assert_uint_eq(slot_value(METRICS_ROW_STORE_WRITES, METRICS_WRITE_ERROR), error);

  uint64_t dirty = slot_value(METRICS_ROW_DIRTY, 0);
  metrics_set(METRICS_ROW_DIRTY, 0, 4242);
  ck_assert_uint_eq(slot_value(METRICS_ROW_DIRTY, 0), 4242);
  metrics_add(METRICS_ROW_DIRTY, 0, 1); /* a gauge does not count */
  metrics_set(METRICS_ROW_DIRTY, 1, 7); /* past its one series */
  ck_assert_uint_eq(slot_value(METRICS_ROW_DIRTY, 0), 4242);
  metrics_set(METRICS_ROW_DIRTY, 0, dirty);

  metrics_hist_t *h = metrics_table[METRICS_ROW_FLUSH_AGGREGATES].hist;
  pthread_mutex_lock(&h->lock);
  uint64_t count = h->count;
  pthread_mutex_unlock(&h->lock);
  metrics_observe(METRICS_ROW_FLUSH_AGGREGATES, 3, 2);
  metrics_observe(METRICS_ROW_DIRTY, 3, 2);            /* not a histogram */
  metrics_observe(METRICS_ROW_FLUSH_AGGREGATES, NAN, 2); /* not a value */
  pthread_mutex_lock(&h->lock);
  ck_assert_uint_eq(h->count, count + 2);
  pthread_mutex_unlock(&h->lock);
  ck_assert_uint_eq(slot_value(METRICS_ROW_DIRTY, 0), dirty);
}
END_TEST

/* ---- process metrics ---- */

START_TEST(test_process_metrics) {
  char *t = render();
  double cpu = value_in(t, "process_cpu_seconds_total");
  double rss = value_in(t, "process_resident_memory_bytes");
  double start = value_in(t, "process_start_time_seconds");
  double fds = value_in(t, "process_open_fds");
  ck_assert_ptr_nonnull(strstr(t, "# TYPE process_cpu_seconds_total counter\n"));
  ck_assert_ptr_nonnull(strstr(t, "# TYPE process_resident_memory_bytes gauge\n"));
  free(t);
  ck_assert(cpu >= 0);
  ck_assert(rss > 1024 * 1024); /* any process with libc and check mapped has more than 1 MiB resident */
  double now = (double)time(NULL);
  ck_assert_msg(start <= now + 1 && start > now - 3600, "start %f now %f", start, now);
  ck_assert(fds >= 3);
}
END_TEST

/* ---- listen address validation ---- */

START_TEST(test_listen_validation) {
  static const char *const bad[] = {"nohost", ":9464", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:9x",
                                    "127.0.0.1:-1", "::1:9464", "[::1:9464", "[]:9464", "no-such-host.invalid:9464"};
  char err[256];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    ck_assert_msg(!metrics_start(bad[i], err, sizeof err), "accepted %s", bad[i]);
    ck_assert_msg(err[0] != '\0', "no message for %s", bad[i]);
    ck_assert_int_eq(metrics_port(), 0);
  }
  /* An address that is not local to this machine (TEST-NET-1): bind fails, said so. */
  ck_assert(!metrics_start("192.0.2.1:9464", err, sizeof err));
  ck_assert_msg(strstr(err, "bind 192.0.2.1:9464") != NULL, "err: %s", err);

  /* "" is no server, and not an error. */
  ck_assert(metrics_start("", err, sizeof err));
  ck_assert_int_eq(metrics_port(), 0);
  metrics_stop();
}
END_TEST

START_TEST(test_port_in_use) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(fd, 1), 0);
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &len);
  char where[64], err[256];
  snprintf(where, sizeof where, "127.0.0.1:%d", ntohs(a.sin_port));
  ck_assert(!metrics_start(where, err, sizeof err));
  ck_assert_msg(strstr(err, "Address already in use") != NULL, "err: %s", err);
  close(fd);
}
END_TEST

/* ---- HTTP ---- */

START_TEST(test_http_endpoints) {
  char err[256];
  ck_assert_msg(metrics_start("127.0.0.1:0", err, sizeof err), "start: %s", err);
  int port = metrics_port();
  ck_assert_int_gt(port, 0);
  ck_assert(!metrics_start("127.0.0.1:0", err, sizeof err)); /* one server per process */
  ck_assert_ptr_nonnull(strstr(err, "already"));
  ck_assert_int_eq(metrics_port(), port);

  metrics_set_windows(3600, 3600);
  metrics_command(MODEL_CMD_SUBMISSION_UPDATED, METRICS_APPLIED, 42);
  http_reply_t r;
  ck_assert(http_get(port, "GET", "/metrics", &r));
  ck_assert_int_eq(r.status, 200);
  ck_assert_ptr_nonnull(strcasestr(r.head, "\r\nContent-Type: text/plain; version=0.0.4"));
  ck_assert_ptr_nonnull(strstr(r.body, "# TYPE aggregator_commands_total counter\n"));
  ck_assert(value_in(r.body, "aggregator_commands_total{type=\"submission.updated\",result=\"applied\"}") >= 42);
  ck_assert_ptr_nonnull(strstr(r.body, "aggregator_flush_duration_seconds_bucket{le=\"+Inf\"}"));
  ck_assert(r.body[r.body_len - 1] == '\n'); /* the format ends every line */
  free(r.body);

  ck_assert(http_get(port, "GET", "/metrics?x=1", &r)); /* a query string does not change the route */
  ck_assert_int_eq(r.status, 200);
  free(r.body);

  ck_assert(http_get(port, "HEAD", "/metrics", &r));
  ck_assert_int_eq(r.status, 200);
  ck_assert_uint_eq(r.body_len, 0);
  free(r.body);

  metrics_heartbeat(); /* metrics_start also beat */
  ck_assert(http_get(port, "GET", "/healthz", &r));
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body, "ok\n");
  free(r.body);

  metrics_set_windows(3600, 1);
  clock_manual_advance(&g_clock, 1001);
  ck_assert(http_get(port, "GET", "/healthz", &r));
  ck_assert_int_eq(r.status, 503);
  ck_assert_str_eq(r.body, "main loop stalled: no heartbeat for 1.0 s\n");
  free(r.body);
  metrics_set_windows(3600, 3600);
  metrics_heartbeat();

  metrics_set_assigned(false);
  ck_assert(http_get(port, "GET", "/readyz", &r));
  ck_assert_int_eq(r.status, 503);
  ck_assert_str_eq(r.body, "no partition assignment\n");
  free(r.body);

  metrics_set_assigned(true);
  metrics_store_failed();
  ck_assert(http_get(port, "GET", "/readyz", &r));
  ck_assert_int_eq(r.status, 503);
  ck_assert_str_eq(r.body, "store unreachable\n");
  free(r.body);

  metrics_store_answered();
  ck_assert(http_get(port, "GET", "/readyz", &r));
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body, "ok\n");
  free(r.body);
  ck_assert(http_get(port, "GET", "/metrics", &r));
  ck_assert_double_eq(value_in(r.body, "aggregator_ready"), 1);
  free(r.body);

  ck_assert(http_get(port, "GET", "/nope", &r));
  ck_assert_int_eq(r.status, 404);
  free(r.body);
  ck_assert(http_get(port, "GET", "/metricsx", &r));
  ck_assert_int_eq(r.status, 404);
  free(r.body);

  ck_assert(http_get(port, "POST", "/metrics", &r));
  ck_assert_int_eq(r.status, 405);
  ck_assert_ptr_nonnull(strcasestr(r.head, "\r\nAllow: GET, HEAD"));
  free(r.body);

  metrics_stop();
  ck_assert_int_eq(metrics_port(), 0);
  /* The socket is closed: nothing listens there any more. */
  ck_assert(!http_get(port, "GET", "/healthz", &r));
  metrics_stop(); /* twice is harmless */

  /* And it can start again (SIGHUP does not do this, but tests and embedders may). */
  ck_assert_msg(metrics_start("127.0.0.1:0", err, sizeof err), "restart: %s", err);
  ck_assert(http_get(metrics_port(), "GET", "/healthz", &r));
  ck_assert_int_eq(r.status, 200);
  free(r.body);
  metrics_stop();
}
END_TEST

START_TEST(test_http_ipv6_loopback) {
  /* Only where the machine has IPv6 loopback (containers may not). */
  int probe = socket(AF_INET6, SOCK_STREAM, 0);
  struct sockaddr_in6 a = {0};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  bool have_v6 = probe >= 0 && bind(probe, (struct sockaddr *)&a, sizeof a) == 0;
  if (probe >= 0) close(probe);
  if (!have_v6) return;

  char err[256];
  ck_assert_msg(metrics_start("[::1]:0", err, sizeof err), "start: %s", err);
  int port = metrics_port();
  ck_assert_int_gt(port, 0);
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  a.sin6_port = htons((uint16_t)port);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  const char req[] = "GET /healthz HTTP/1.0\r\n\r\n";
  ck_assert_int_eq(write(fd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
  char buf[256] = {0};
  ck_assert_int_gt(read(fd, buf, sizeof buf - 1), 12);
  close(fd);
  ck_assert_ptr_nonnull(strstr(buf, " 200 "));
  /* Bound to ::1 only: the IPv4 loopback does not answer on that port. */
  http_reply_t r;
  ck_assert(!http_get(port, "GET", "/healthz", &r));
  metrics_stop();
}
END_TEST

/* The pipeline records while the HTTP thread renders: no update is lost and
 * nothing tears (run under ASan/TSan/valgrind by the suite's users). */
#define HAMMER_ROUNDS 20000
static void *hammer(void *arg) {
  (void)arg;
  for (int i = 0; i < HAMMER_ROUNDS; i++) {
    metrics_command(MODEL_CMD_ROSTER_UNASSIGNED, METRICS_STALE, 1);
    metrics_store_write(METRICS_WRITE_CONFLICT, 1);
    metrics_set_lag("hammer", i % 4, i);
    metrics_set_committed_lag("hammer", (i + 2) % 4, i);
    metrics_set_oldest_uncommitted("hammer", (i + 3) % 4, 1700000000000 + i);
    if (i % 3 == 0) metrics_clear_lag("hammer", (i + 1) % 4);
    if (i % 100 == 0) metrics_flush(0.01, 10);
    metrics_set_pending_bytes((uint64_t)i);
  }
  return NULL;
}

START_TEST(test_concurrent_scrapes) {
  char err[256];
  ck_assert_msg(metrics_start("127.0.0.1:0", err, sizeof err), "start: %s", err);
  double stale = value("aggregator_commands_total{type=\"roster.unassigned\",result=\"stale\"}");
  double conflict = value("aggregator_store_writes_total{result=\"conflict\"}");
  double flushes = value("aggregator_flush_aggregates_count");
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, hammer, NULL), 0);
  for (int i = 0; i < 20; i++) {
    http_reply_t r;
    ck_assert(http_get(metrics_port(), "GET", "/metrics", &r));
    ck_assert_int_eq(r.status, 200);
    check_histogram_shape(r.body, "aggregator_flush_aggregates");
    free(r.body);
  }
  pthread_join(th, NULL);
  ck_assert_double_eq(value("aggregator_commands_total{type=\"roster.unassigned\",result=\"stale\"}"),
                      stale + HAMMER_ROUNDS);
  ck_assert_double_eq(value("aggregator_store_writes_total{result=\"conflict\"}"), conflict + HAMMER_ROUNDS);
  ck_assert_double_eq(value("aggregator_flush_aggregates_count"), flushes + HAMMER_ROUNDS / 100);
  for (int p = 0; p < 4; p++) metrics_clear_lag("hammer", p);
  metrics_stop();
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("metrics");
  TCase *tc = tcase_create("registry");
  tcase_add_unchecked_fixture(tc, use_manual_clock, NULL);
  tcase_add_test(tc, test_exposition_golden); /* first: the values it sets are absolute */
  tcase_add_test(tc, test_initial_state);     /* before readiness changes: relies on none having happened */
  tcase_add_test(tc, test_command_counters);
  tcase_add_test(tc, test_reject_counters);
  tcase_add_test(tc, test_dead_letter_counters);
  tcase_add_test(tc, test_change_event_counters);
  tcase_add_test(tc, test_change_events_pending);
  tcase_add_test(tc, test_store_write_counters);
  tcase_add_test(tc, test_gauges);
  tcase_add_test(tc, test_consumer_lag);
  tcase_add_test(tc, test_retries_and_rebalances);
  tcase_add_test(tc, test_bounds_paused_assigned);
  tcase_add_test(tc, test_partition_series);
  tcase_add_test(tc, test_histograms);
  tcase_add_test(tc, test_readiness_transitions);
  tcase_add_test(tc, test_liveness);
  tcase_add_test(tc, test_readiness_policy);
  tcase_add_test(tc, test_table_rows);
  tcase_add_test(tc, test_families_lines);
  tcase_add_test(tc, test_label_enums);
  tcase_add_test(tc, test_process_metrics);
  tcase_add_test(tc, test_generic_recorders);
  suite_add_tcase(s, tc);
  TCase *http = tcase_create("http");
  tcase_add_unchecked_fixture(http, use_manual_clock, NULL);
  tcase_set_timeout(http, 60);
  tcase_add_test(http, test_listen_validation);
  tcase_add_test(http, test_port_in_use);
  tcase_add_test(http, test_http_endpoints);
  tcase_add_test(http, test_http_ipv6_loopback);
  tcase_add_test(http, test_concurrent_scrapes);
  suite_add_tcase(s, http);
  return s;
}
