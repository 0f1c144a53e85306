/* bench_models: decode + validate + merge throughput on one core, and the
 * memory an aggregate costs (scripts/bench-models runs it; results are
 * recorded there).
 *
 *   bench_models [--commands N] [--assignments N] [--students N] [--seed N]
 *                [--order time|shuffle] [--versions counter|time]
 *   bench_models --sweep [--rounds R] [--commands N] [other options]
 *
 * Generates the stream in memory with cmdgen.h (default 2,000,000 commands
 * over 20,000 assignments of 30 students: every slot of every student
 * filled, plus 9 further updates per assignment of all six types, in time
 * order), renders it to JSON, then measures without I/O:
 *   1. decode only: model_command_decode over every line;
 *   2. decode + route (hash table by tenant/assignment) + apply, the whole
 *      per-command work of the worker's merge; RSS (/proc/self/statm) is
 *      read before and after, so "RSS/aggregate" includes the handles,
 *      blocks, malloc overhead and fragmentation, and the hash table;
 *   3. model_aggregate_merge of every aggregate into an empty one;
 *   4. the codecs: model_codec_to_bson and model_codec_to_json of every
 *      aggregate.
 * Generation and rendering are not timed. The last line of a run is
 * "RESULT key=value ...", for the sweep.
 *
 * --sweep runs the class-size sweep in one invocation: 30, 300 and 3,000
 * students per assignment, each with 600,000 / students assignments (the
 * same 600,000 students and the same number of commands at every size),
 * interleaved over R rounds (default 3) so that a noisy machine hits every
 * size alike; rates and merge times are per CPU second of the process
 * (CLOCK_PROCESS_CPUTIME_ID), not wall time, for the same reason. Each size runs in a child process (this binary again), so
 * that each measures RSS on a fresh heap. It prints, per size, the median
 * over the rounds of decode+apply commands/s, merge of one aggregate into
 * an empty one, RSS growth and model_aggregate_memory per aggregate and
 * their ratio, and the BSON document size, then the ratios to 30 students.
 *
 * With AGG_PERF_CTL and AGG_PERF_ACK naming perf's control fifos
 * (perf record --control=fifo:CTL,ACK -D -1), profiling is enabled for
 * phase 2 only (scripts/bench-models --profile).
 *
 * Under callgrind started with --instr-atstart=no, each timed phase is
 * instrumented alone and its counts dumped under its name ("decode",
 * "decode_apply", "merge", "to_bson", "to_json"), so that instructions per
 * command come per phase, without generation (scripts/bench-models
 * --instructions reads the dumps). Natively the requests cost a few
 * instructions per phase. */
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#endif
#endif

#include "aggregate.h"
#include "aggset.h"
#include "cmdgen.h"
#include "codec.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU time of this (single-threaded) process: on a shared machine it
 * leaves out the time other processes held the core, which wall time
 * counts (the sweep's rates and merge times use it). */
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, resident = 0;
  if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
  if (f) fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

/* Sends "enable" or "disable" to perf, if it is listening. */
static void perf_ctl(const char *cmd) {
  static int ctl = -1, ack = -1;
  const char *c = getenv("AGG_PERF_CTL"), *a = getenv("AGG_PERF_ACK");
  if (!c || !a) return;
  if (ctl < 0) ctl = open(c, O_WRONLY);
  if (ack < 0) ack = open(a, O_RDONLY);
  char buf[16];
  if (ctl < 0 || ack < 0 || write(ctl, cmd, strlen(cmd)) < 0 || read(ack, buf, sizeof buf) < 0)
    fputs("bench_models: perf control failed\n", stderr);
}

/* A phase's instructions, when running under callgrind: counted from
 * phase_begin to phase_end and dumped under the phase's name. */
static void phase_begin(void) {
#ifdef HAVE_CALLGRIND
  CALLGRIND_START_INSTRUMENTATION;
  CALLGRIND_ZERO_STATS;
#endif
}

static void phase_end(const char *name) {
#ifdef HAVE_CALLGRIND
  CALLGRIND_DUMP_STATS_AT(name);
  CALLGRIND_STOP_INSTRUMENTATION;
#else
  (void)name;
#endif
}

/* The same table as a replay without a store (models/aggset.h). */
static model_aggset_t table = MODEL_AGGSET_INIT;
static model_aggregate_t **aggs_all; /* the table's aggregates, once taken */
static size_t table_count;

static model_aggregate_t *route(const model_command_t *c) {
  return model_aggset_get(&table, c, model_aggset_hash(c->tenant, c->tenant_len, c->assignment, c->assignment_len));
}

/* ---- the sweep ---- */

typedef struct {
  double apply_cps, merge_ns, rss, mem, bson;
} result_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int sweep(const char *self, int rounds, int argc, char **argv) {
  enum { NSIZES = 3, MAX_ROUNDS = 15 };
  static const unsigned sizes[NSIZES] = {30, 300, 3000};
  if (rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "bench_models: --rounds 1..%d\n", MAX_ROUNDS);
    return 2;
  }
  /* the options other than --sweep/--rounds/--students/--assignments pass through */
  char extra[1024] = "";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rounds") || !strcmp(argv[i], "--students") || !strcmp(argv[i], "--assignments")) continue;
    size_t l = strlen(extra);
    snprintf(extra + l, sizeof extra - l, " %s '%s'", argv[i], argv[i + 1]);
  }
  result_t r[NSIZES][MAX_ROUNDS];
  for (int round = 0; round < rounds; round++) {
    for (int k = 0; k < NSIZES; k++) {
      char cmd[2048];
      snprintf(cmd, sizeof cmd, "'%s' --students %u --assignments %u%s", self, sizes[k], 600000 / sizes[k], extra);
      FILE *p = popen(cmd, "r");
      if (!p) return 1;
      char line[1024];
      bool got = false;
      while (fgets(line, sizeof line, p)) {
        result_t *x = &r[k][round];
        if (sscanf(line, "RESULT apply_cps=%lf merge_ns=%lf rss=%lf mem=%lf bson=%lf", &x->apply_cps, &x->merge_ns,
                   &x->rss, &x->mem, &x->bson) == 5)
          got = true;
      }
      if (pclose(p) != 0 || !got) {
        fprintf(stderr, "bench_models: run failed: %s\n", cmd);
        return 1;
      }
      fprintf(stderr, "round %d, %u students: %.0f commands/s\n", round + 1, sizes[k], r[k][round].apply_cps);
    }
  }
  result_t m[NSIZES];
  for (int k = 0; k < NSIZES; k++) {
    double v[MAX_ROUNDS];
#define MEDIAN(field)                                        \
  do {                                                       \
    for (int i = 0; i < rounds; i++) v[i] = r[k][i].field;   \
    m[k].field = median(v, rounds);                          \
  } while (0)
    MEDIAN(apply_cps);
    MEDIAN(merge_ns);
    MEDIAN(rss);
    MEDIAN(mem);
    MEDIAN(bson);
#undef MEDIAN
  }
  printf("sweep: medians of %d interleaved rounds, 600,000 students at every size, CPU time\n", rounds);
  printf("%-34s %12s %12s %12s\n", "students per assignment", "30", "300", "3,000");
  printf("%-34s %12.0f %12.0f %12.0f\n", "decode + apply, commands/CPU s", m[0].apply_cps, m[1].apply_cps, m[2].apply_cps);
  printf("%-34s %12.1f %12.1f %12.1f\n", "merge into empty (+equal), CPU us", m[0].merge_ns / 1e3, m[1].merge_ns / 1e3,
         m[2].merge_ns / 1e3);
  printf("%-34s %12.0f %12.0f %12.0f\n", "RSS per aggregate, bytes", m[0].rss, m[1].rss, m[2].rss);
  printf("%-34s %12.0f %12.0f %12.0f\n", "model_aggregate_memory, bytes", m[0].mem, m[1].mem, m[2].mem);
  printf("%-34s %12.3f %12.3f %12.3f\n", "RSS / model_aggregate_memory", m[0].rss / m[0].mem, m[1].rss / m[1].mem,
         m[2].rss / m[2].mem);
  printf("%-34s %12.0f %12.0f %12.0f\n", "BSON document, bytes", m[0].bson, m[1].bson, m[2].bson);
  printf("ratios to 30 students: decode+apply rate %.2fx (300), %.2fx (3,000); merge time %.1fx (300), %.1fx (3,000)\n",
         m[1].apply_cps / m[0].apply_cps, m[2].apply_cps / m[0].apply_cps, m[1].merge_ns / m[0].merge_ns,
         m[2].merge_ns / m[0].merge_ns);
  return 0;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--sweep")) continue;
    int rounds = 3;
    for (int j = 1; j + 1 < argc; j++)
      if (!strcmp(argv[j], "--rounds")) rounds = atoi(argv[j + 1]);
    char **rest = malloc((size_t)argc * sizeof *rest);
    int n = 0;
    for (int j = 0; j < argc; j++)
      if (j != i) rest[n++] = argv[j];
    int rc = sweep(argv[0], rounds, n, rest);
    free(rest);
    return rc;
  }
  cmdgen_opts_t o;
  cmdgen_defaults(&o);
  o.assignments = 20000;
  o.students = 30;
  o.tenants = 50;
  o.count = 2000000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    if (!strcmp(a, "--commands")) o.count = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--assignments")) o.assignments = (uint32_t)strtoul(v, NULL, 0);
    else if (!strcmp(a, "--students")) o.students = (uint32_t)strtoul(v, NULL, 0);
    else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--order")) o.order = strcmp(v, "shuffle") ? CMDGEN_ORDER_TIME : CMDGEN_ORDER_SHUFFLE;
    else if (!strcmp(a, "--versions")) o.version_style = strcmp(v, "time") ? CMDGEN_VERSION_COUNTER : CMDGEN_VERSION_TIME;
    else {
      fprintf(stderr, "bench_models: unknown option %s\n", a);
      return 2;
    }
  }
  if (o.tenants > o.assignments) o.tenants = o.assignments;

  /* ---- generate and render (not timed) ---- */
  cmdgen_t g;
  if (!cmdgen_build(&g, &o)) {
    fputs("bench_models: cannot generate\n", stderr);
    return 1;
  }
  size_t n = g.n;
  size_t *off = malloc((n + 1) * sizeof *off);
  model_buf_t text = MODEL_BUF_INIT;
  model_buf_reserve(&text, n * 200);
  for (size_t i = 0; i < n; i++) {
    off[i] = text.len;
    cmdgen_render(&g, &g.ev[i], &text);
    text.len--; /* drop the '\n': a Kafka message has none */
  }
  off[n] = text.len;
  cmdgen_destroy(&g);
  printf("stream: %zu commands, %u assignments x %u students, %.0f bytes mean, order %s, versions %s\n", n,
         o.assignments, o.students, (double)text.len / (double)n, o.order == CMDGEN_ORDER_TIME ? "time" : "shuffle",
         o.version_style == CMDGEN_VERSION_TIME ? "time" : "counter");

  model_command_t *cmd = malloc(sizeof *cmd);
  model_reject_t rej;

  /* ---- 1. decode only ---- */
  phase_begin();
  double t0 = now();
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += !model_command_decode(text.data + off[i], off[i + 1] - off[i], 1 << 20, cmd, &rej);
  double t_decode = now() - t0;
  phase_end("decode");
  if (bad) {
    fprintf(stderr, "bench_models: %zu commands rejected\n", bad);
    return 1;
  }

  /* ---- 2. decode + route + apply ---- */
  malloc_trim(0); /* free heap pages left by generation would hide growth */
  long rss0 = rss_bytes();
  struct mallinfo2 mi0 = mallinfo2();
  size_t applied = 0;
  perf_ctl("enable\n");
  phase_begin();
  double c0 = cpu_now();
  t0 = now();
  for (size_t i = 0; i < n; i++) {
    model_command_decode(text.data + off[i], off[i + 1] - off[i], 1 << 20, cmd, &rej);
    applied += model_aggregate_apply(route(cmd), cmd) == MODEL_APPLY_APPLIED;
  }
  double t_all = now() - t0, c_all = cpu_now() - c0;
  phase_end("decode_apply");
  perf_ctl("disable\n");
  long rss1 = rss_bytes();
  struct mallinfo2 mi1 = mallinfo2();
  size_t table_bytes = table.cap * sizeof *table.slots;
  table_count = model_aggset_count(&table);
  aggs_all = malloc((table_count + 1) * sizeof *aggs_all);
  if (!aggs_all) abort();
  model_aggset_take(&table, aggs_all);
  malloc_trim(0); /* what a worker could give back after a burst: whole free pages */
  long rss2 = rss_bytes();

  size_t mem = 0, students = 0, filled = 0;
  for (size_t j = 0; j < table_count; j++) {
    mem += model_aggregate_memory(aggs_all[j]);
    size_t ns = model_aggregate_student_count(aggs_all[j]);
    students += ns;
    for (size_t s = 0; s < ns; s++) {
      model_student_view_t v;
      model_aggregate_student(aggs_all[j], s, &v);
      filled += v.has_member && v.has_submission && v.has_grade;
    }
  }
  double aggs = (double)table_count;
  printf("decode only:           %8.0f ns/command  %9.0f commands/s\n", t_decode / (double)n * 1e9,
         (double)n / t_decode);
  printf("decode+route+apply:    %8.0f ns/command  %9.0f commands/s  (applied %zu, stale %zu)\n",
         t_all / (double)n * 1e9, (double)n / t_all, applied, n - applied);
  printf("route+apply (diff):    %8.0f ns/command\n", (t_all - t_decode) / (double)n * 1e9);
  printf("memory: %zu aggregates, %.1f students each (%.1f%% with all 3 slots)\n", table_count,
         (double)students / aggs, 100.0 * (double)filled / (double)students);
  printf("  RSS growth %.0f bytes/aggregate, %.0f after malloc_trim (hash table included: %.0f); malloc in use %.0f, "
         "free in heap %.0f; model_aggregate_memory %.0f\n",
         (double)(rss1 - rss0) / aggs, (double)(rss2 - rss0) / aggs, (double)table_bytes / aggs,
         (double)((long)(mi1.uordblks + mi1.hblkhd) - (long)(mi0.uordblks + mi0.hblkhd)) / aggs,
         (double)((long)mi1.fordblks - (long)mi0.fordblks) / aggs, (double)mem / aggs);

  /* ---- 3. merge ---- */
  phase_begin();
  c0 = cpu_now();
  t0 = now();
  for (size_t j = 0; j < table_count; j++) {
    size_t tl, al;
    const char *t = model_aggregate_tenant(aggs_all[j], &tl), *a = model_aggregate_assignment(aggs_all[j], &al);
    model_aggregate_t *e = model_aggregate_new(t, tl, a, al);
    model_aggregate_merge(e, aggs_all[j]);
    if (!model_aggregate_equal(e, aggs_all[j])) abort();
    model_aggregate_destroy(e);
  }
  double t_merge = now() - t0, c_merge = cpu_now() - c0;
  phase_end("merge");
  printf("merge into empty (+equal): %8.0f ns/aggregate\n", t_merge / aggs * 1e9);

  /* ---- 4. codecs ---- */
  size_t bson_bytes = 0, json_bytes = 0;
  phase_begin();
  t0 = now();
  for (size_t j = 0; j < table_count; j++) {
    bson_t b = BSON_INITIALIZER;
    model_codec_to_bson(aggs_all[j], 1, 1788220800000LL, &b);
    bson_bytes += b.len;
    bson_destroy(&b);
  }
  double t_bson = now() - t0;
  phase_end("to_bson");
  model_buf_t jb = MODEL_BUF_INIT;
  phase_begin();
  t0 = now();
  for (size_t j = 0; j < table_count; j++) {
    model_buf_clear(&jb);
    model_codec_to_json(aggs_all[j], 1, 1788220800000LL, &jb);
    json_bytes += jb.len;
  }
  double t_json = now() - t0;
  phase_end("to_json");
  printf("to_bson: %8.0f ns/aggregate (%.0f bytes); to_json: %8.0f ns/aggregate (%.0f bytes)\n", t_bson / aggs * 1e9,
         (double)bson_bytes / aggs, t_json / aggs * 1e9, (double)json_bytes / aggs);
  printf("cpu time: decode+route+apply %.0f commands per CPU second; merge %.0f CPU ns/aggregate\n",
         (double)n / c_all, c_merge / aggs * 1e9);
  printf("RESULT apply_cps=%.0f merge_ns=%.0f rss=%.0f mem=%.0f bson=%.0f\n", (double)n / c_all, c_merge / aggs * 1e9,
         (double)(rss1 - rss0) / aggs, (double)mem / aggs, (double)bson_bytes / aggs);

  for (size_t j = 0; j < table_count; j++) model_aggregate_destroy(aggs_all[j]);
  free(aggs_all);
  model_aggset_free(&table);
  free(cmd);
  free(off);
  model_buf_destroy(&text);
  model_buf_destroy(&jb);
  return 0;
}
