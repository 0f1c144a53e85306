/* bench_store: what the store costs per write and per load at a given
 * collection size, through the store module itself (scripts/bench-store
 * drives it over sizes and FerretDB backends; docs/BENCHMARKS.md has the
 * numbers).
 *
 *   bench_store URI DATABASE DOCS SINGLE BULK LOADKEYS [--no-in]
 *
 * 1. fill: DOCS realistic aggregates (cmdgen's base commands: a header and
 *    30 students with every slot, about 8 KB of BSON each) inserted at rev 1
 *    with plain insert_many, which costs no scan on any backend, into
 *    DATABASE.aggregates (dropped first);
 * 2. single: SINGLE conditional writes of one aggregate each (store_write of
 *    one item, rev r -> r+1, a random document): the per-write latency;
 * 3. bulk: one store_write of BULK distinct random documents, as a flush
 *    sends them (FerretDB: commands of 16): writes per second;
 * 4. load: store_load of LOADKEYS random keys (one find per key on
 *    FerretDB), and, unless --no-in, the same keys as one {_id: {$in}} find,
 *    MongoDB's way, for comparison.
 *
 * One line of key=value results on stdout; progress on stderr. Times are
 * wall-clock: the machine is shared, so compare runs made side by side. */
#include <bson/bson.h>
#include <mongoc/mongoc.h>
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

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int die(const char *what, const char *msg) {
  fprintf(stderr, "bench_store: %s: %s\n", what, msg);
  return 1;
}

static void count_found(void *ctx, model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms) {
  (void)updated_at_ms;
  (void)rev;
  (*(size_t *)ctx)++;
  model_aggregate_destroy(agg);
}

/* Builds n aggregates from cmdgen's base commands (every slot filled). */
static model_aggregate_t **build_aggregates(uint32_t n) {
  cmdgen_opts_t o;
  cmdgen_defaults(&o);
  o.seed = 11;
  o.assignments = n;
  o.tenants = n < 10 ? n : 10;
  o.count = 0;
  cmdgen_t g;
  if (!cmdgen_build(&g, &o)) return NULL;
  model_aggregate_t **aggs = calloc(n, sizeof *aggs);
  model_command_t *cmd = malloc(sizeof *cmd);
  model_buf_t b = MODEL_BUF_INIT;
  for (size_t i = 0; aggs && cmd && i < g.n; i++) {
    const cmdgen_event_t *e = &g.ev[i];
    if (e->invalid) continue;
    model_buf_clear(&b);
    cmdgen_render(&g, e, &b);
    model_reject_t rej;
    if (!model_command_decode(b.data, b.len - 1, 1 << 20, cmd, &rej)) continue; /* cannot happen: valid */
    model_aggregate_t **a = &aggs[e->assignment];
    if (!*a) *a = model_aggregate_new(cmd->tenant, cmd->tenant_len, cmd->assignment, cmd->assignment_len);
    model_aggregate_apply(*a, cmd);
  }
  model_buf_destroy(&b);
  free(cmd);
  cmdgen_destroy(&g);
  return aggs;
}

/* What the run works on. */
typedef struct bench {
  store_t *store;
  mongoc_collection_t *coll; /* the same collection through a plain client */
  model_aggregate_t **aggs;
  int64_t *rev; /* each document's stored rev; -1 once a failed write left it unknown */
  uint32_t ndocs;
  uint64_t rnd;
} bench_t;

/* What the run measured: the line of results. */
typedef struct results {
  size_t doc_bytes;
  double fill_s;
  size_t nsingle, single_failed;
  double *lat; /* per single write, sorted */
  double single_total;
  size_t nbulk;
  double bulk_s; /* 0 when the bulk failed */
  char bulk_error[256];
  size_t nload, loaded, in_found;
  bool with_in;
  double load_s, in_s;
} results_t;

/* 1. fill: every document at rev 1 with insert_many. */
static int fill(bench_t *b, results_t *r) {
  double t = now_s();
  enum { FILL_BATCH = 200 };
  bson_t docs[FILL_BATCH];
  const bson_t *ptrs[FILL_BATCH];
  bson_error_t e;
  for (uint32_t off = 0; off < b->ndocs; off += FILL_BATCH) {
    uint32_t n = b->ndocs - off < FILL_BATCH ? b->ndocs - off : FILL_BATCH;
    for (uint32_t i = 0; i < n; i++) {
      bson_init(&docs[i]);
      model_codec_to_bson(b->aggs[off + i], 1, 1788249600000LL, &docs[i]);
      r->doc_bytes += docs[i].len;
      ptrs[i] = &docs[i];
      b->rev[off + i] = 1;
    }
    bool ok = mongoc_collection_insert_many(b->coll, ptrs, n, NULL, NULL, &e);
    for (uint32_t i = 0; i < n; i++) bson_destroy(&docs[i]);
    if (!ok) return die("fill", e.message);
  }
  r->fill_s = now_s() - t;
  fprintf(stderr, "bench_store: filled %u documents (%.1f KB each) in %.1f s\n", b->ndocs,
          r->doc_bytes / 1024.0 / b->ndocs, r->fill_s);
  return 0;
}

/* 2. single conditional writes of random documents. */
static int single_writes(bench_t *b, results_t *r) {
  sink_error_t err;
  r->lat = calloc(r->nsingle ? r->nsingle : 1, sizeof *r->lat);
  for (size_t i = 0; i < r->nsingle; i++) {
    uint32_t k = (uint32_t)cmdgen_below(&b->rnd, b->ndocs);
    if (b->rev[k] < 0) continue; /* a failed write left it unknown */
    sink_write_item_t item = {.agg = b->aggs[k], .rev = b->rev[k]};
    double t = now_s();
    sink_status_t st = store_write(b->store, &item, 1, 1788249600000LL, &err);
    r->lat[i] = now_s() - t;
    r->single_total += r->lat[i];
    if (st != SINK_OK) {
      /* FerretDB on SQLite at a few thousand documents under load: longer
       * than the 60 s socket timeout. Counted (at the time it took), and
       * the document's rev is unknown now: it is not written again. */
      r->single_failed++;
      fprintf(stderr, "\nbench_store: single write %zu failed after %.1f s: %s\n", i + 1, r->lat[i], err.message);
      b->rev[k] = -1;
      continue;
    }
    if (item.result != SINK_ITEM_OK) return die("single write", "not ok");
    b->rev[k]++;
    fprintf(stderr, "\rbench_store: single write %zu/%zu: %.1f ms   ", i + 1, r->nsingle, r->lat[i] * 1e3);
  }
  if (r->nsingle) fputc('\n', stderr);
  qsort(r->lat, r->nsingle, sizeof *r->lat, cmp_double);
  return 0;
}

/* 3. one bulk of distinct documents. A failure is a result too (FerretDB
 * on SQLite can take longer than the 60 s socket timeout for one command):
 * reported, and the run goes on. */
static int bulk_write(bench_t *b, results_t *r) {
  if (!r->nbulk) return 0;
  sink_error_t err;
  sink_write_item_t *items = calloc(r->nbulk, sizeof *items);
  uint32_t start = (uint32_t)cmdgen_below(&b->rnd, b->ndocs);
  for (size_t i = 0; i < r->nbulk; i++) {
    uint32_t k = (uint32_t)((start + i * 7919u) % b->ndocs); /* 7919 is prime: distinct while nbulk <= ndocs */
    items[i] = (sink_write_item_t){.agg = b->aggs[k], .rev = b->rev[k] < 0 ? 1 : b->rev[k]};
  }
  double t = now_s();
  sink_status_t st = store_write(b->store, items, r->nbulk, 1788249600000LL, &err);
  r->bulk_s = now_s() - t;
  if (st != SINK_OK) {
    snprintf(r->bulk_error, sizeof r->bulk_error, "%s", err.message);
    for (char *p = r->bulk_error; *p; p++)
      if (*p == ' ') *p = '_';
    fprintf(stderr, "bench_store: bulk of %zu failed after %.2f s: %s\n", r->nbulk, r->bulk_s, err.message);
    r->bulk_s = 0;
  } else {
    /* Only a document left unknown by a failed single write can
     * conflict; anything else is a bug. */
    for (size_t i = 0; i < r->nbulk; i++)
      if (items[i].result != SINK_ITEM_OK && !(items[i].result == SINK_ITEM_CONFLICT && r->single_failed))
        return die("bulk write", "an item did not land");
    fprintf(stderr, "bench_store: bulk of %zu in %.2f s\n", r->nbulk, r->bulk_s);
  }
  free(items);
  return 0;
}

/* The same keys as one {_id: {$in}} find through the plain client. */
static int find_in(bench_t *b, const char **keys, results_t *r) {
  bson_t filter = BSON_INITIALIZER, id, in;
  BSON_APPEND_DOCUMENT_BEGIN(&filter, "_id", &id);
  BSON_APPEND_ARRAY_BEGIN(&id, "$in", &in);
  for (size_t i = 0; i < r->nload; i++) {
    char buf[16];
    const char *k;
    bson_uint32_to_string((uint32_t)i, &k, buf, sizeof buf);
    bson_append_utf8(&in, k, -1, keys[i], -1);
  }
  bson_append_array_end(&id, &in);
  bson_append_document_end(&filter, &id);
  bson_t *opts = BCON_NEW("batchSize", BCON_INT32((int32_t)r->nload));
  double t = now_s();
  mongoc_cursor_t *cur = mongoc_collection_find_with_opts(b->coll, &filter, opts, NULL);
  const bson_t *doc;
  while (mongoc_cursor_next(cur, &doc)) r->in_found++;
  r->in_s = now_s() - t;
  bson_error_t e;
  if (mongoc_cursor_error(cur, &e)) return die("$in find", e.message);
  mongoc_cursor_destroy(cur);
  bson_destroy(opts);
  bson_destroy(&filter);
  fprintf(stderr, "bench_store: one $in find of %zu keys: %zu found in %.2f s\n", r->nload, r->in_found, r->in_s);
  return 0;
}

/* 4. store_load of random keys, then (unless --no-in) the same as one $in. */
static int loads(bench_t *b, results_t *r) {
  if (!r->nload) return 0;
  sink_error_t err;
  const char **keys = calloc(r->nload, sizeof *keys);
  uint32_t start = (uint32_t)cmdgen_below(&b->rnd, b->ndocs);
  for (size_t i = 0; i < r->nload; i++) {
    size_t len;
    keys[i] = model_aggregate_key(b->aggs[(start + i * 7919u) % b->ndocs], &len);
  }
  double t = now_s();
  sink_status_t st = store_load(b->store, keys, r->nload, count_found, &r->loaded, &err);
  r->load_s = now_s() - t;
  if (st != SINK_OK) return die("load", err.message);
  fprintf(stderr, "bench_store: store_load of %zu keys: %zu found in %.2f s\n", r->nload, r->loaded, r->load_s);
  if (r->with_in && find_in(b, keys, r) != 0) return 1;
  free(keys);
  return 0;
}

static void print_results(const bench_t *b, const results_t *r) {
  size_t n = r->nsingle;
  printf("docs=%u doc_kb=%.1f fill_s=%.1f single_n=%zu single_ms_p50=%.1f single_ms_p90=%.1f single_ms_mean=%.1f "
         "bulk_n=%zu bulk_s=%.2f bulk_writes_per_s=%.0f load_keys=%zu load_found=%zu load_s=%.2f",
         b->ndocs, r->doc_bytes / 1024.0 / b->ndocs, r->fill_s, n, n ? r->lat[n / 2] * 1e3 : 0,
         n ? r->lat[n * 9 / 10] * 1e3 : 0, n ? r->single_total / n * 1e3 : 0, r->nbulk, r->bulk_s,
         r->bulk_s > 0 ? r->nbulk / r->bulk_s : 0, r->nload, r->loaded, r->load_s);
  if (r->with_in && r->nload) printf(" in_found=%zu in_s=%.2f", r->in_found, r->in_s);
  if (r->single_failed) printf(" single_failed=%zu", r->single_failed);
  if (*r->bulk_error) printf(" bulk_error=%s", r->bulk_error);
  putchar('\n');
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fputs("usage: bench_store URI DATABASE DOCS SINGLE BULK LOADKEYS [--no-in]\n", stderr);
    return 2;
  }
  const char *uri = argv[1], *dbname = argv[2];
  bench_t b = {.ndocs = (uint32_t)strtoul(argv[3], NULL, 10), .rnd = 42};
  results_t r = {.nsingle = strtoul(argv[4], NULL, 10),
                 .nbulk = strtoul(argv[5], NULL, 10),
                 .nload = strtoul(argv[6], NULL, 10),
                 .with_in = !(argc > 7 && !strcmp(argv[7], "--no-in"))};
  if (b.ndocs == 0 || r.nbulk > b.ndocs || r.nload > b.ndocs)
    return die("arguments", "BULK and LOADKEYS must be <= DOCS > 0");

  sink_error_t err;
  b.store = store_new(uri, dbname, "aggregates", "1", &err);
  if (!b.store) return die("store_new", err.message);
  if (store_ping(b.store, &err) != SINK_OK) return die("ping", err.message);
  mongoc_client_t *raw = mongoc_client_new(uri);
  mongoc_client_set_error_api(raw, MONGOC_ERROR_API_VERSION_2);
  mongoc_database_t *db = mongoc_client_get_database(raw, dbname);
  bson_error_t e;
  mongoc_database_drop(db, &e); /* absent is fine */
  b.coll = mongoc_client_get_collection(raw, dbname, "aggregates");

  fprintf(stderr, "bench_store: building %u aggregates\n", b.ndocs);
  b.aggs = build_aggregates(b.ndocs);
  if (!b.aggs) return die("build", "out of memory");
  b.rev = calloc(b.ndocs, sizeof *b.rev);
  if (fill(&b, &r) || single_writes(&b, &r) || bulk_write(&b, &r) || loads(&b, &r)) return 1;
  print_results(&b, &r);

  mongoc_database_drop(db, &e);
  for (uint32_t i = 0; i < b.ndocs; i++) model_aggregate_destroy(b.aggs[i]);
  free(b.aggs);
  free(b.rev);
  free(r.lat);
  mongoc_collection_destroy(b.coll);
  mongoc_database_destroy(db);
  mongoc_client_destroy(raw);
  store_destroy(b.store);
  mongoc_cleanup();
  return 0;
}
