/* The JSON scanner's string kernels (scalar, SSE2, AVX2) against each other
 * and against the scanner before the kernels, through scan_diff.h: every
 * seed of the fuzz corpus, and inputs built to put each kind of byte the
 * kernels stop at ('"', '\', control bytes, UTF-8 sequences valid, invalid
 * and cut short) at every offset of a 16- and 32-byte block and at the very
 * end of the buffer. test_command.c runs every one of its inputs through the
 * same check. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/corpus.h"
#include "../fuzz/scan_diff.h"
#include "json/json_simd.h"

#define MAXB (1u << 20)

static void diff_ok(const void *data, size_t n, const char *ctx) {
  const char *d = scan_diff(data, n, MAXB);
  ck_assert_msg(d == NULL, "%s: %s", ctx, d ? d : "");
}

START_TEST(test_kernels_available) {
  ck_assert(model_json_kernel_available(MODEL_JSON_KERNEL_SCALAR));
#if defined(__x86_64__)
  ck_assert(model_json_kernel_available(MODEL_JSON_KERNEL_SSE2));
#endif
  ck_assert(model_json_force_kernel(MODEL_JSON_KERNEL_SCALAR));
  ck_assert_int_eq(model_json_kernel(), MODEL_JSON_KERNEL_SCALAR);
  ck_assert(model_json_force_kernel(MODEL_JSON_KERNEL_AUTO));
  ck_assert_int_ne(model_json_kernel(), MODEL_JSON_KERNEL_AUTO);
}
END_TEST

static void corpus_file_ok(const char *name, const char *data, size_t n, void *ctx) {
  (void)ctx;
  diff_ok(data, n, name);
  /* every prefix too: each one ends the buffer at another byte */
  for (size_t k = 0; k < n && k < 400; k++) diff_ok(data, k, name);
}

START_TEST(test_corpus) { ck_assert_uint_gt(corpus_each("fuzz_command", corpus_file_ok, NULL), 0); }
END_TEST

/* A valid command whose id is `pad` bytes of 'x' then `piece`, then more
 * padding: the piece lands at every offset of a block. */
START_TEST(test_every_offset) {
  static const char *const pieces[] = {
      "\"",           "\\\"",        "\\\\",          "\\u0041",       "\\u0000",     "\\ud83d\\ude00",
      "\\ud83d",      "\\ude00",     "\\x",           "\\u12",         "\x01",        "\x1f",
      "\x7f",         "\xc3\xa9",    "\xe2\x82\xac",  "\xf0\x9f\x98\x80", "\xc3",     "\xe2\x82",
      "\xf0\x9f\x98", "\x80",        "\xc0\xaf",      "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff",
      "\xe0\x80\x80", "\xf0\x80\x80\x80", " ",        "\t",
  };
  char json[512], ctx[64];
  for (size_t pi = 0; pi < sizeof pieces / sizeof pieces[0]; pi++)
    for (int pad = 0; pad < 40; pad++)
      for (int tail = 0; tail < 40; tail += 13) {
        int n = snprintf(json, sizeof json,
                         "{\"id\":\"%.*s%s%.*s\",\"type\":\"roster.assigned\",\"tenant\":\"t\","
                         "\"assignment\":\"a\",\"student\":\"s\",\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\"}",
                         pad, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                         pieces[pi], tail, "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy");
        snprintf(ctx, sizeof ctx, "piece %zu pad %d tail %d", pi, pad, tail);
        diff_ok(json, (size_t)n, ctx);
        /* the same string cut off at the end of the buffer, at every length */
        for (int cut = 6; tail == 0 && cut < 6 + pad + (int)strlen(pieces[pi]) + 2 && cut <= n; cut++)
          diff_ok(json, (size_t)cut, ctx);
      }
}
END_TEST

/* Keys: matched names written plainly and with escapes, repeated, unknown
 * keys repeated, and objects past the small-object limit. */
START_TEST(test_keys) {
  static const char *const docs[] = {
      "{\"id\":\"a\",\"i\\u0064\":\"b\"}",
      "{\"data\":{\"title\":1,\"t\\u0069tle\":2}}",
      "{\"x\":1,\"y\":2,\"x\":3}",
      "{\"\":1,\"\":2}",
      "{\"data\":{\"\":1,\"class\":2,\"\\u0063lass\":3}}",
      "{\"submittedAtX\":1,\"submittedAt\":2,\"data\":{\"submittedAt\":1,\"submittedAtX\":2,\"submittedAt\":3}}",
      "{\"a\":{\"id\":1,\"id\":2},\"id\":3}",
      "{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":9,\"ka\":10,"
      "\"kb\":11,\"kc\":12,\"kd\":13,\"ke\":14,\"kf\":15,\"kg\":16,\"id\":1,\"k3\":3,\"id\":2}",
      "{\"id\":1,\"type\":2,\"tenant\":3,\"assignment\":4,\"student\":5,\"version\":6,\"ts\":7,\"data\":8,"
      "\"k8\":8,\"k9\":9,\"ka\":10,\"kb\":11,\"kc\":12,\"kd\":13,\"ke\":14,\"kf\":15,\"kg\":16,\"ts\":1}",
      "{\"abcdefghijklmnopq\":1,\"abcdefghijklmnopq\":2}",
      "{\"abcdefghijklmnop\":1,\"abcdefghijklmnop\":2}",
      "{\"data\":{\"x\":\"\\u0000\"},\"data\":1}",
      "{\"a\\u0000\":1,\"x\":[1,2,{\"y\":\"\\u0000\"}]}",
  };
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
    size_t n = strlen(docs[i]);
    for (size_t cut = 0; cut <= n; cut++) diff_ok(docs[i], cut, docs[i]);
  }
}
END_TEST

/* Texts at the edges of the scanner's plain path: the plain shape itself
 * (schema keys in and out of order, every kind of value, the sub object,
 * whitespace where JSON allows it) and each way out of it (a name repeated
 * in order or out of order, before or after a key out of order; an unknown
 * key, an escape, a control byte, bad UTF-8, a key too long for one
 * compare, a nested array or object, a bad number or literal, trailing
 * bytes), every prefix of each. */
START_TEST(test_plain_shapes) {
  static const char *const docs[] = {
      "{\"id\":\"a\",\"type\":\"roster.assigned\",\"tenant\":\"t\",\"assignment\":\"a\",\"student\":\"s\","
      "\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\"}",
      "{\"ts\":\"2026-01-01T00:00:00Z\",\"version\":12,\"student\":\"s\",\"assignment\":\"a\",\"tenant\":\"t\","
      "\"type\":\"roster.assigned\",\"id\":\"a\"}",
      " \t{ \"id\" : \"a\" , \"type\":\"grade.updated\",\r\n\"data\": { \"points\" : 1.5e1 , \"feedback\":null } } \n",
      "{\"id\":\"a\",\"data\":{\"class\":\"c\",\"title\":\"caf\xc3\xa9 \xe2\x82\xac\",\"status\":\"draft\","
      "\"dueAt\":null,\"points\":-0}}",
      "{\"id\":\"a\",\"data\":{}}",
      "{\"id\":\"a\",\"data\":{ }}",
      "{\"data\":{\"points\":0},\"id\":\"a\"}",
      "{\"data\":{\"points\":true,\"title\":false,\"class\":null}}",
      "{\"data\":{\"submittedAt\":\"x\",\"returnedAt\":\"y\",\"feedback\":\"z\"}}",
      "{\"data\":1}",
      "{\"data\":\"x\",\"id\":[]}",
      "{\"data\":{\"class\":{}}}",
      "{\"data\":{\"class\":[1]}}",
      "{\"id\":{}}",
      "{\"id\":\"a\",\"id\":\"b\"}",
      "{\"id\":\"a\",\"type\":\"x\",\"id\":\"b\"}",
      "{\"data\":{\"title\":\"a\",\"title\":\"b\"}}",
      "{\"data\":{},\"data\":{}}",
      "{\"type\":\"x\",\"id\":\"a\",\"type\":\"y\"}",
      "{\"tenant\":\"t\",\"id\":\"a\",\"type\":\"r\",\"tenant\":\"u\"}",
      "{\"id\":\"a\",\"type\":\"b\",\"tenant\":\"c\",\"id\":\"d\"}",
      "{\"ts\":\"a\",\"data\":{},\"id\":\"b\",\"type\":\"c\",\"tenant\":\"d\",\"assignment\":\"e\","
      "\"student\":\"f\",\"version\":1,\"ts\":\"g\"}",
      "{\"data\":{\"points\":1,\"class\":\"c\",\"title\":\"t\",\"status\":\"s\",\"dueAt\":null,"
      "\"points\":2}}",
      "{\"id\":\"a\",\"x\":1}",
      "{\"x\":1,\"id\":\"a\"}",
      "{\"id\":\"a\\u0062\"}",
      "{\"id\":\"a\\u0000\"}",
      "{\"i\\u0064\":\"a\",\"id\":\"b\"}",
      "{\"id\":\"a\x01\"}",
      "{\"id\":\"a\xc3\"}",
      "{\"id\":\"a\xed\xa0\x80\"}",
      "{\"id\":\"a\"\"type\":\"b\"}",
      "{\"id\":\"a\",}",
      "{\"id\":\"a\",\"type\"}",
      "{\"id\" \"a\"}",
      "{\"id\":01}",
      "{\"id\":-}",
      "{\"id\":1.}",
      "{\"id\":1e}",
      "{\"id\":1e+}",
      "{\"id\":tru}",
      "{\"id\":nul,\"ts\":1}",
      "{\"id\":\"a\"}x",
      "{\"id\":\"a\"} {}",
      "{\"id\":\"a\"",
      "{}",
      "[]",
      "\"id\"",
      "{\"submittedAt\":1,\"data\":{\"submittedAt\":1,\"returnedAt\":2}}",
      "{\"data\":{\"submittedAt\":\"2026-01-01T00:00:00Z\",\"returnedAt\":\"2026-01-01T00:00:00Z\","
      "\"status\":\"returned\"},\"id\":\"x\"}",
      /* other producers' shapes: key orders, json.dumps spacing, UUID ids */
      "{\"id\": \"e1\", \"tenant\": \"t\", \"assignment\": \"a\", \"version\": 3, \"ts\": \"2026-01-01T00:00:00Z\", "
      "\"type\": \"grade.updated\", \"student\": \"s\", \"data\": {\"points\": 50.5, \"feedback\": null}}",
      "{\"assignment\":\"a\",\"data\":{\"class\":\"c\",\"dueAt\":null,\"points\":10,\"status\":\"draft\","
      "\"title\":\"T\"},\"id\":\"3f2b9c1e-0d4a-4e8b-9c7d-000000000001\",\"tenant\":\"t\",\"ts\":\"2026-01-01T00:00:00Z\","
      "\"type\":\"assignment.upserted\",\"version\":1}",
      "{ \"id\" :\"a\"}",
      "{\"id\":  \"a\"  ,  \"type\":\t\"b\"\n}",
      "{\"id\": \"a\",\n \"data\": {\n  \"title\": \"x\"\n }\n}\n",
      "{\"id\": \"a\", \"id\": \"b\"}",
      "{\"data\": {\"title\": \"a\", \"title\": \"b\"}, \"id\": \"x\"}",
      "{\"id\": \"a\",}",
      "{\"id\": \"a\" \"type\": \"b\"}",
      "{\"id\": \"a\"\x01}",
      "{\"id\":\x01\"a\"}",
      "{\"id\": 12 }",
      "{\"id\": {} , \"data\": { } }",
      "{\"data\": {\"points\": 1}}}",
      "{\"id\":\"a\"}}",
      "{\"id\":\"a\"]",
      "{\"ty\":1,\"id\":2,\"i\":3,\"t\":4,\"\":5}",
      "{\"id\":\"a\"} \t\r\n",
      /* whitespace around a key's ':' (found with a mask of the key's 16
       * bytes, then tried as the last separator found): the same after
       * every key, another one, one that breaks the grammar after the
       * first was learned, runs to and past the 16 bytes, a key near the
       * end of the text */
      "{\t\"id\"\t:\t\"a\",\t\"type\"\t:\t\"b\",\t\"tenant\"\t:\t\"c\"}",
      "{\"id\"\t:\t\"a\",\"type\" : \"b\",\"tenant\"\r\n:\n\"c\",\"student\"\t:\t\"d\"}",
      "{\"id\"\t:\t\"a\",\"type\"\tx\t\"b\"}",
      "{\"id\"\t:\t\"a\",\"type\"\t:\t:\"b\"}",
      "{\"id\"\t:\t\"a\",\"type\"\t\t\"b\"}",
      "{\"id\"\t:\t\"a\",\"type\"\t;\t\"b\"}",
      "{\"id\" : \"a\",\"type\" :\"b\",\"ts\": \"c\",\"tenant\" : 1}",
      "{\"id\"              :              \"a\",\"type\"              :\"b\"}",
      "{\"assignment\"   :   \"a\",\"assignment\"   :   \"b\"}",
      "{\"assignment\"\t:\t\"a\",\"version\"\t:\t1,\"ts\"\t:\t2}",
      "{\"data\"\t:\t{\t\t\"class\"\t:\t\"c\",\t\t\"points\"\t:\t30\t}}",
      "{\"id\"\t:\t\"a\",\"x\"\t:\t1}",
      "{\"id\"\t:\t\"a\",\"id\"\t:\t\"b\"}",
      "{\"ts\" :",
      "{\"ts\" : 1}",
      "{\"ts\"\x0b:1}",
      "{\"ts\" \x1f: 1}",
  };
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
    size_t n = strlen(docs[i]);
    for (size_t cut = 0; cut <= n; cut++) diff_ok(docs[i], cut, docs[i]);
  }
}
END_TEST

/* A list of 32 names, many of them sharing a slot (model_json_slots): the
 * plain path, which compares every name of a shared slot in turn, gives
 * the full scan's result on texts holding each name in place, repeated,
 * misspelt and unknown. */
START_TEST(test_shared_slots) {
  static char names[32][MODEL_JSON_KEY_MAX];
  static uint8_t lens[32];
  for (int i = 0; i < 32; i++) {
    /* "a", "b", ..., then two-letter names that differ only after their
     * first two bytes, so that their slots collide */
    int n = i < 16 ? snprintf(names[i], sizeof names[i], "%c", 'a' + i)
                   : snprintf(names[i], sizeof names[i], "ab%c", 'a' + i - 16);
    lens[i] = (uint8_t)n;
  }
  model_json_slots_t slots;
  model_json_slots(names, lens, 32, 0, &slots);
  int shared = 0;
  for (int h = 0; h < MODEL_JSON_SLOTS; h++) shared += slots.count[h] > 1;
  ck_assert_int_gt(shared, 0);
  model_json_schema_t plain = {names, lens, 32, -1, names, lens, 0, &slots, NULL};
  model_json_schema_t full = plain;
  full.root_slots = NULL;
  static const char *const docs[] = {
      "{\"a\":1,\"p\":\"x\",\"abq\":2,\"abz\":null,\"abf\":true}",
      "{\"abq\": 1, \"abr\": 2, \"ab\": 3}",
      "{\"abq\":1,\"abq\":2}",
      "{\"abqq\":1}",
      "{\"ab\":1}",
      "{\"b\":1,\"c\":2,\"abp\":3,\"abu\":4,\"abv\":[1]}",
  };
  for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++) {
    model_json_value_t a[32], b[32], sa[1], sb[1];
    model_json_result_t ra, rb;
    size_t n = strlen(docs[d]);
    bool oka = model_json_scan(docs[d], n, &plain, a, sa, &ra), okb = model_json_scan(docs[d], n, &full, b, sb, &rb);
    ck_assert_msg(oka == okb && ra.status == rb.status && strcmp(ra.detail, rb.detail) == 0, "%s", docs[d]);
    for (int i = 0; oka && i < 32; i++)
      ck_assert_msg(a[i].type == b[i].type &&
                        (a[i].type == MODEL_JSON_ABSENT || (a[i].start == b[i].start && a[i].len == b[i].len)),
                    "%s: name %d", docs[d], i);
  }
}
END_TEST

/* The ident flag (model_json_value_t): the plain path sets it on exactly
 * the string values of the names marked as ids that are 1..16 id bytes,
 * anywhere in the text (a value in its last 16 bytes too), whatever the
 * whitespace around them, on every kernel; never on another name, a longer
 * or empty value, other bytes or escapes, or a text the full scan decides. */
START_TEST(test_ident) {
  static model_json_slots_t root_slots, sub_slots;
  model_json_slots(scan_diff_root, scan_diff_root_l, 8, 1u << 2 | 1u << 3 | 1u << 4, &root_slots);
  model_json_slots(scan_diff_sub, scan_diff_sub_l, 8, 1u << 0, &sub_slots);
  model_json_schema_t schema = {scan_diff_root, scan_diff_root_l, 8, 7, scan_diff_sub, scan_diff_sub_l, 8,
                                &root_slots, &sub_slots};
  static const struct {
    const char *doc;
    int ident; /* bits: tenant 1, assignment 2, student 4, type 8, data.class 16 */
  } cases[] = {
      {"{\"tenant\":\"t-1_X\",\"assignment\":\"0123456789abcdef\",\"student\":\"0123456789abcdef0\"}", 1 | 2},
      {"{\"student\":\"s\",\"tenant\":\"a.b\",\"assignment\":\"\"}", 4},
      {"{\"tenant\":\"abc\"}", 1},
      {"{ \"tenant\" : \"abc\" }", 1},
      {"{\t\"tenant\"\r\n:\t\"abc\" ,\"student\" :\"a\\/b\"\n}", 1},
      {"{\"tenant\": \"ABCDEFGHIJKLMNOP\", \"type\": \"abc\"}", 1},
      {"{\"tenant\":\"\xc3\xa9\",\"student\":\"a b\"}", 0},
      {"{\"tenant\":\"x\",\"assignment\":\"a\\\"\"}", 1},
      {"{\"tenant\":\"a\\u0041\",\"student\":\"s\"}", 4},
      {"{\"ten\\u0061nt\":\"abc\"}", 0}, /* an escaped key: the full scan decides */
      {"{\"data\":{\"class\":\"c-1\",\"title\":\"t\"},\"tenant\":\"zz\"}", 16 | 1},
      {"{\"tenant\":\"zz\",\"x\":1}", 0},
  };
  static const model_json_kernel_t kernels[] = {MODEL_JSON_KERNEL_SCALAR, MODEL_JSON_KERNEL_SSE2,
                                                MODEL_JSON_KERNEL_AVX2};
  for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
    if (!model_json_force_kernel(kernels[k])) continue;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      model_json_value_t root[8], sub[8];
      model_json_result_t res;
      ck_assert_msg(model_json_scan(cases[i].doc, strlen(cases[i].doc), &schema, root, sub, &res), "%s",
                    cases[i].doc);
      const model_json_value_t *v[5] = {&root[2], &root[3], &root[4], &root[1], &sub[0]};
      int got = 0;
      for (int j = 0; j < 5; j++) got |= (v[j]->type == MODEL_JSON_STRING && v[j]->ident) << j;
      ck_assert_msg(got == cases[i].ident, "%s on %s: ident %d, expected %d", cases[i].doc,
                    model_json_kernel_name(kernels[k]), got, cases[i].ident);
    }
  }
  model_json_force_kernel(MODEL_JSON_KERNEL_AUTO);
}
END_TEST

/* The AVX2 scan's count of id characters (a byte shuffle) against the
 * SSE2 and scalar one (model_json_id_len16) and the rule itself: every byte
 * value at every position of 16 id bytes, and after every count of them. */
START_TEST(test_id_len) {
  static const char ids[] = "azAZ09-_mM5qQ-_z";
  for (unsigned at = 0; at < 16; at++)
    for (unsigned b = 0; b < 256; b++) {
      unsigned char block[16];
      memcpy(block, ids, 16);
      block[at] = (unsigned char)b;
      bool id = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '-' || b == '_';
      unsigned want = id ? 16 : at;
      ck_assert_uint_eq(model_json_id_len16(block), want);
#ifdef MODEL_JSON_HAVE_SSE2
      if (model_json_kernel_available(MODEL_JSON_KERNEL_AVX2))
        ck_assert_msg(model_json_id_len16_avx2(block) == want, "byte 0x%02x at %u: %u, expected %u", b, at,
                      model_json_id_len16_avx2(block), want);
#endif
    }
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("scan_kernels");
  TCase *tc = tcase_create("scan_kernels");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_kernels_available);
  tcase_add_test(tc, test_corpus);
  tcase_add_test(tc, test_every_offset);
  tcase_add_test(tc, test_keys);
  tcase_add_test(tc, test_plain_shapes);
  tcase_add_test(tc, test_shared_slots);
  tcase_add_test(tc, test_ident);
  tcase_add_test(tc, test_id_len);
  suite_add_tcase(s, tc);
  return s;
}
