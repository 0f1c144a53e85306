/* bench_partial: what a write of one changed student costs, whole against
 * partial, through the store module on a real server (docs/BENCHMARKS.md
 * has the numbers).
 *
 *   bench_partial URI DATABASE STUDENTS WRITES
 *
 * Builds one aggregate from cmdgen's base commands (a header and STUDENTS
 * students with every slot), stores it, then makes WRITES changes of one
 * random student's grade, each written first as a partial update (that
 * student, counts, rev, updatedAt) and then, after the next change, as a
 * whole replacement, alternating, so both see the same document sizes and
 * server state. For each kind: the bytes of the write's update document
 * (the replacement, or the {$set: ...}: what grows with the document; the
 * filter and the command envelope, about 100 bytes, are the same for both)
 * and the wall-clock time per store_write. At the end the stored document
 * must load back equal to the aggregate (else exit 1).
 *
 * One line of key=value results on stdout. The machine is shared: compare
 * runs made side by side. */
#include <bson/bson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmdgen.h"
#include "codec.h"
#include "store/store.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what, const char *msg) {
  fprintf(stderr, "bench_partial: %s: %s\n", what, msg);
  return 1;
}

static model_aggregate_t *build(uint32_t students) {
  cmdgen_opts_t o;
  cmdgen_defaults(&o);
  o.seed = 12;
  o.tenants = 1;
  o.assignments = 1;
  o.students = students;
  o.count = 0;
  cmdgen_t g;
  if (!cmdgen_build(&g, &o)) return NULL;
  model_aggregate_t *agg = NULL;
  model_command_t *cmd = malloc(sizeof *cmd);
  model_buf_t b = MODEL_BUF_INIT;
  for (size_t i = 0; cmd && i < g.n; i++) {
    if (g.ev[i].invalid) continue;
    model_buf_clear(&b);
    cmdgen_render(&g, &g.ev[i], &b);
    model_reject_t rej;
    if (!model_command_decode(b.data, b.len - 1, 1 << 20, cmd, &rej)) continue;
    if (!agg) agg = model_aggregate_new(cmd->tenant, cmd->tenant_len, cmd->assignment, cmd->assignment_len);
    model_aggregate_apply(agg, cmd);
  }
  model_buf_destroy(&b);
  free(cmd);
  cmdgen_destroy(&g);
  return agg;
}

/* A new grade for student i, newer than anything before. */
static void change(model_aggregate_t *agg, size_t i, uint64_t version) {
  model_student_view_t s;
  model_aggregate_student(agg, i, &s);
  size_t tl, al;
  const char *t = model_aggregate_tenant(agg, &tl), *a = model_aggregate_assignment(agg, &al);
  char json[512];
  int n = snprintf(json, sizeof json,
                   "{\"id\":\"bench-%llu\",\"type\":\"grade.updated\",\"tenant\":\"%.*s\",\"assignment\":\"%.*s\","
                   "\"ts\":\"2026-09-01T08:00:00Z\",\"student\":\"%.*s\",\"version\":%llu,\"data\":{\"points\":%llu}}",
                   (unsigned long long)version, (int)tl, t, (int)al, a, (int)s.student_len, s.student,
                   (unsigned long long)version, (unsigned long long)(version % 100));
  model_command_t cmd;
  model_reject_t rej;
  if (!model_command_decode(json, (size_t)n, 1 << 20, &cmd, &rej)) abort();
  model_aggregate_apply(agg, &cmd);
}

static void on_found(void *ctx, model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms) {
  (void)updated_at_ms;
  (void)rev;
  *(model_aggregate_t **)ctx = agg;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fputs("usage: bench_partial URI DATABASE STUDENTS WRITES\n", stderr);
    return 2;
  }
  uint32_t students = (uint32_t)strtoul(argv[3], NULL, 10);
  size_t writes = strtoul(argv[4], NULL, 10);
  model_aggregate_t *agg = build(students);
  if (!agg || writes == 0) return die("arguments", "STUDENTS and WRITES must be > 0");
  sink_error_t err;
  store_t *store = store_new(argv[1], argv[2], "aggregates", "1", &err);
  if (!store) return die("store_new", err.message);
  int64_t rev = 0;
  sink_write_item_t item = {.agg = agg, .rev = rev};
  if (store_write(store, &item, 1, 0, &err) != SINK_OK || item.result != SINK_ITEM_OK) {
    /* A previous run's document: start from its rev. */
    model_aggregate_t *old = NULL;
    const char *key = model_aggregate_key(agg, NULL);
    if (store_load(store, &key, 1, on_found, &old, &err) != SINK_OK || !old) return die("seed", err.message);
    model_aggregate_destroy(old);
    return die("seed", "the database is not empty: drop it first");
  }
  rev = 1;
  double t[2] = {0, 0};
  uint64_t bytes[2] = {0, 0};
  size_t n[2] = {0, 0};
  uint64_t rnd = 99;
  for (size_t w = 0; w < writes; w++) {
    size_t i = (size_t)(cmdgen_splitmix(&rnd) % model_aggregate_student_count(agg));
    change(agg, i, 1000000 + w);
    int kind = (int)(w % 2); /* 0 partial, 1 whole */
    item = (sink_write_item_t){.agg = agg, .rev = rev};
    bson_t u = BSON_INITIALIZER, set;
    if (kind == 0) {
      item.partial = true;
      item.students = &i;
      item.nstudents = 1;
      BSON_APPEND_DOCUMENT_BEGIN(&u, "$set", &set);
      model_codec_to_bson_set(agg, &i, 1, false, rev + 1, 1000 + (int64_t)w, &set);
      bson_append_document_end(&u, &set);
    } else {
      model_codec_to_bson(agg, rev + 1, 1000 + (int64_t)w, &u);
    }
    bytes[kind] += u.len;
    bson_destroy(&u);
    double t0 = now_s();
    if (store_write(store, &item, 1, 1000 + (int64_t)w, &err) != SINK_OK || item.result != SINK_ITEM_OK)
      return die("write", item.result == SINK_ITEM_OK ? err.message : "not written");
    t[kind] += now_s() - t0;
    n[kind]++;
    rev++;
  }
  model_aggregate_t *stored = NULL;
  const char *key = model_aggregate_key(agg, NULL);
  if (store_load(store, &key, 1, on_found, &stored, &err) != SINK_OK || !stored) return die("load", err.message);
  bool same = model_aggregate_equal(stored, agg);
  bson_t whole = BSON_INITIALIZER;
  model_codec_to_bson(agg, rev, 0, &whole);
  printf("students=%u document_bytes=%u partial_writes=%zu partial_bytes_per_write=%.0f partial_ms_per_write=%.2f "
         "whole_writes=%zu whole_bytes_per_write=%.0f whole_ms_per_write=%.2f stored_equal=%d\n",
         students, whole.len, n[0], n[0] ? (double)bytes[0] / (double)n[0] : 0, n[0] ? t[0] * 1000 / (double)n[0] : 0,
         n[1], n[1] ? (double)bytes[1] / (double)n[1] : 0, n[1] ? t[1] * 1000 / (double)n[1] : 0, same);
  bson_destroy(&whole);
  model_aggregate_destroy(stored);
  model_aggregate_destroy(agg);
  store_destroy(store);
  return same ? 0 : 1;
}
