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
 *    which is what store_load sent before (kept here for comparison).
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
#include "store.h"

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

static void count_found(void *ctx, model_aggregate_t *agg, int64_t rev) {
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

int main(int argc, char **argv) {
  if (argc < 7) {
    fputs("usage: bench_store URI DATABASE DOCS SINGLE BULK LOADKEYS [--no-in]\n", stderr);
    return 2;
  }
  const char *uri = argv[1], *dbname = argv[2];
  uint32_t ndocs = (uint32_t)strtoul(argv[3], NULL, 10);
  size_t nsingle = strtoul(argv[4], NULL, 10), nbulk = strtoul(argv[5], NULL, 10),
         nload = strtoul(argv[6], NULL, 10);
  bool with_in = !(argc > 7 && !strcmp(argv[7], "--no-in"));
  if (ndocs == 0 || nbulk > ndocs || nload > ndocs) return die("arguments", "BULK and LOADKEYS must be <= DOCS > 0");

  sink_error_t err;
  store_t *store = store_new(uri, dbname, "aggregates", "1", &err);
  if (!store) return die("store_new", err.message);
  if (store_ping(store, &err) != SINK_OK) return die("ping", err.message);
  mongoc_client_t *raw = mongoc_client_new(uri);
  mongoc_client_set_error_api(raw, MONGOC_ERROR_API_VERSION_2);
  mongoc_database_t *db = mongoc_client_get_database(raw, dbname);
  bson_error_t e;
  mongoc_database_drop(db, &e); /* absent is fine */
  mongoc_collection_t *coll = mongoc_client_get_collection(raw, dbname, "aggregates");

  fprintf(stderr, "bench_store: building %u aggregates\n", ndocs);
  model_aggregate_t **aggs = build_aggregates(ndocs);
  if (!aggs) return die("build", "out of memory");
  int64_t *rev = calloc(ndocs, sizeof *rev);

  /* 1. fill */
  double t = now_s();
  size_t doc_bytes = 0;
  enum { FILL_BATCH = 200 };
  bson_t docs[FILL_BATCH];
  const bson_t *ptrs[FILL_BATCH];
  for (uint32_t off = 0; off < ndocs; off += FILL_BATCH) {
    uint32_t n = ndocs - off < FILL_BATCH ? ndocs - off : FILL_BATCH;
    for (uint32_t i = 0; i < n; i++) {
      bson_init(&docs[i]);
      model_codec_to_bson(aggs[off + i], 1, 1788249600000LL, &docs[i]);
      doc_bytes += docs[i].len;
      ptrs[i] = &docs[i];
      rev[off + i] = 1;
    }
    bool ok = mongoc_collection_insert_many(coll, ptrs, n, NULL, NULL, &e);
    for (uint32_t i = 0; i < n; i++) bson_destroy(&docs[i]);
    if (!ok) return die("fill", e.message);
  }
  double fill_s = now_s() - t;
  fprintf(stderr, "bench_store: filled %u documents (%.1f KB each) in %.1f s\n", ndocs,
          doc_bytes / 1024.0 / ndocs, fill_s);

  uint64_t rnd = 42;
  /* 2. single conditional writes */
  double *lat = calloc(nsingle ? nsingle : 1, sizeof *lat);
  double single_total = 0;
  size_t single_failed = 0;
  for (size_t i = 0; i < nsingle; i++) {
    uint32_t k = (uint32_t)cmdgen_below(&rnd, ndocs);
    if (rev[k] < 0) continue; /* a failed write left it unknown */
    sink_write_item_t item = {.agg = aggs[k], .rev = rev[k]};
    t = now_s();
    sink_status_t st = store_write(store, &item, 1, 1788249600000LL, &err);
    lat[i] = now_s() - t;
    single_total += lat[i];
    if (st != SINK_OK) {
      /* FerretDB on SQLite at a few thousand documents under load: longer
       * than the 60 s socket timeout. Counted (at the time it took), and
       * the document's rev is unknown now: it is not written again. */
      single_failed++;
      fprintf(stderr, "\nbench_store: single write %zu failed after %.1f s: %s\n", i + 1, lat[i], err.message);
      rev[k] = -1;
      continue;
    }
    if (item.result != SINK_ITEM_OK) return die("single write", "not ok");
    rev[k]++;
    fprintf(stderr, "\rbench_store: single write %zu/%zu: %.1f ms   ", i + 1, nsingle, lat[i] * 1e3);
  }
  if (nsingle) fputc('\n', stderr);
  qsort(lat, nsingle, sizeof *lat, cmp_double);

  /* 3. one bulk of distinct documents */
  double bulk_s = 0;
  char bulk_error[256] = "";
  if (nbulk) {
    sink_write_item_t *items = calloc(nbulk, sizeof *items);
    uint32_t start = (uint32_t)cmdgen_below(&rnd, ndocs);
    for (size_t i = 0; i < nbulk; i++) {
      uint32_t k = (uint32_t)((start + i * 7919u) % ndocs); /* 7919 is prime: distinct while nbulk <= ndocs */
      items[i] = (sink_write_item_t){.agg = aggs[k], .rev = rev[k] < 0 ? 1 : rev[k]};
    }
    t = now_s();
    sink_status_t st = store_write(store, items, nbulk, 1788249600000LL, &err);
    bulk_s = now_s() - t;
    /* A failure is a result too (FerretDB on SQLite can take longer than the
     * 60 s socket timeout for one command): reported, and the run goes on. */
    if (st != SINK_OK) {
      snprintf(bulk_error, sizeof bulk_error, "%s", err.message);
      for (char *p = bulk_error; *p; p++)
        if (*p == ' ') *p = '_';
      fprintf(stderr, "bench_store: bulk of %zu failed after %.2f s: %s\n", nbulk, bulk_s, err.message);
      bulk_s = 0;
    } else {
      /* Only a document left unknown by a failed single write can
       * conflict; anything else is a bug. */
      for (size_t i = 0; i < nbulk; i++)
        if (items[i].result != SINK_ITEM_OK && !(items[i].result == SINK_ITEM_CONFLICT && single_failed))
          return die("bulk write", "an item did not land");
      fprintf(stderr, "bench_store: bulk of %zu in %.2f s\n", nbulk, bulk_s);
    }
    free(items);
  }

  /* 4. loads */
  double load_s = 0, in_s = 0;
  size_t loaded = 0, in_found = 0;
  if (nload) {
    const char **keys = calloc(nload, sizeof *keys);
    uint32_t start = (uint32_t)cmdgen_below(&rnd, ndocs);
    for (size_t i = 0; i < nload; i++) {
      size_t len;
      keys[i] = model_aggregate_key(aggs[(start + i * 7919u) % ndocs], &len);
    }
    t = now_s();
    sink_status_t st = store_load(store, keys, nload, count_found, &loaded, &err);
    load_s = now_s() - t;
    if (st != SINK_OK) return die("load", err.message);
    fprintf(stderr, "bench_store: store_load of %zu keys: %zu found in %.2f s\n", nload, loaded, load_s);
    if (with_in) {
      bson_t filter = BSON_INITIALIZER, id, in;
      BSON_APPEND_DOCUMENT_BEGIN(&filter, "_id", &id);
      BSON_APPEND_ARRAY_BEGIN(&id, "$in", &in);
      for (size_t i = 0; i < nload; i++) {
        char buf[16];
        const char *k;
        bson_uint32_to_string((uint32_t)i, &k, buf, sizeof buf);
        bson_append_utf8(&in, k, -1, keys[i], -1);
      }
      bson_append_array_end(&id, &in);
      bson_append_document_end(&filter, &id);
      bson_t *opts = BCON_NEW("batchSize", BCON_INT32((int32_t)nload));
      t = now_s();
      mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, &filter, opts, NULL);
      const bson_t *doc;
      while (mongoc_cursor_next(cur, &doc)) in_found++;
      in_s = now_s() - t;
      if (mongoc_cursor_error(cur, &e)) return die("$in find", e.message);
      mongoc_cursor_destroy(cur);
      bson_destroy(opts);
      bson_destroy(&filter);
      fprintf(stderr, "bench_store: one $in find of %zu keys: %zu found in %.2f s\n", nload, in_found, in_s);
    }
    free(keys);
  }

  printf("docs=%u doc_kb=%.1f fill_s=%.1f single_n=%zu single_ms_p50=%.1f single_ms_p90=%.1f single_ms_mean=%.1f "
         "bulk_n=%zu bulk_s=%.2f bulk_writes_per_s=%.0f load_keys=%zu load_found=%zu load_s=%.2f",
         ndocs, doc_bytes / 1024.0 / ndocs, fill_s, nsingle, nsingle ? lat[nsingle / 2] * 1e3 : 0,
         nsingle ? lat[nsingle * 9 / 10] * 1e3 : 0, nsingle ? single_total / nsingle * 1e3 : 0, nbulk, bulk_s,
         bulk_s > 0 ? nbulk / bulk_s : 0, nload, loaded, load_s);
  if (with_in && nload) printf(" in_found=%zu in_s=%.2f", in_found, in_s);
  if (single_failed) printf(" single_failed=%zu", single_failed);
  if (*bulk_error) printf(" bulk_error=%s", bulk_error);
  putchar('\n');

  mongoc_database_drop(db, &e);
  for (uint32_t i = 0; i < ndocs; i++) model_aggregate_destroy(aggs[i]);
  free(aggs);
  free(rev);
  free(lat);
  mongoc_collection_destroy(coll);
  mongoc_database_destroy(db);
  mongoc_client_destroy(raw);
  store_destroy(store);
  mongoc_cleanup();
  return 0;
}
