/* Secrets (redact.h): how a URI is shown, scrubbing library text of every
 * configured secret, and log lines scrubbed on their way out. Passwords hold
 * '@', ':', '%', '/', spaces and non-ASCII, raw and percent-encoded. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/redact.h"

static char *shown_uri(const char *uri) {
  model_buf_t b = MODEL_BUF_INIT;
  redact_uri(uri, &b);
  return b.data; /* caller frees */
}

START_TEST(uri_shown_without_password) {
  static const char *const cases[][2] = {
      {"mongodb://user:hunter2@db1:27017,db2/?tls=true", "mongodb://user:***@db1:27017,db2/?tls=true"},
      /* a ':' or an '@' inside the password */
      {"mongodb://user:se:cret@host/", "mongodb://user:***@host/"},
      {"mongodb://user:p@ss@host/", "mongodb://user:***@host/"},
      {"mongodb://user:pa/ss@host/db", "mongodb://user:***@host/db"},
      {"mongodb://user:pa?ss@host/db?tls=true", "mongodb://user:***@host/db?tls=true"},
      {"mongodb://user:p ss w\xc3\xb6rd@host/", "mongodb://user:***@host/"},
      {"mongodb://user:p%40s%3As%2F%25%20\xe2\x82\xac@host/", "mongodb://user:***@host/"},
      {"mongodb://user:Zq@9:x/%y \xc3\xa9\xe2\x82\xacKw@db.invalid:27017/", "mongodb://user:***@db.invalid:27017/"},
      {"mongodb+srv://u:pw-123@cluster0.example.net/db", "mongodb+srv://u:***@cluster0.example.net/db"},
      {"mongodb://user:@host/", "mongodb://user:***@host/"},
      /* no password: nothing to hide */
      {"mongodb://host/db?appname=a@b", "mongodb://host/db?appname=a@b"},
      {"mongodb://user@host/?authMechanism=MONGODB-X509", "mongodb://user@host/?authMechanism=MONGODB-X509"},
      {"mongodb://localhost:27017", "mongodb://localhost:27017"},
      /* an '@' in an option after the path does not end the user information */
      {"mongodb://user:pw-1@host/db?appname=a@b", "mongodb://user:***@host/db?appname=a@b"},
      /* credential options */
      {"mongodb://h/?tlsCertificateKeyFilePassword=k3y&authMechanismProperties=AWS_SESSION_TOKEN:t0k&w=1",
       "mongodb://h/?tlsCertificateKeyFilePassword=***&authMechanismProperties=***&w=1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *got = shown_uri(cases[i][0]);
    ck_assert_msg(!strcmp(got, cases[i][1]), "%s -> %s, want %s", cases[i][0], got, cases[i][1]);
    free(got);
  }
}
END_TEST

START_TEST(unescaped_at) {
  ck_assert(redact_uri_has_unescaped_at("mongodb://user:p@ss@host/"));
  ck_assert(redact_uri_has_unescaped_at("mongodb://us@er:pw@host/"));
  ck_assert(!redact_uri_has_unescaped_at("mongodb://user:p%40ss@host/"));
  /* After the hosts, an '@' with none before it reads to this module as
   * the end of a password and to libmongoc as part of the database or an
   * option: refused, '%40' is the same to libmongoc there. */
  ck_assert(redact_uri_has_unescaped_at("mongodb://host/db?appname=a@b"));
  ck_assert(redact_uri_has_unescaped_at("mongodb://u:12/ss@host"));
  ck_assert(redact_uri_has_unescaped_at("mongodb://ushutdh:1/?a.fetchtoken@]="));
  ck_assert(!redact_uri_has_unescaped_at("mongodb://host/db?appname=a%40b"));
  ck_assert(!redact_uri_has_unescaped_at("mongodb://user:pw@host/db?appname=a@b"));
  ck_assert(!redact_uri_has_unescaped_at("mongodb://localhost"));
}
END_TEST

static char *scrub(const redact_set_t *set, const char *s) {
  model_buf_t b = MODEL_BUF_INIT;
  redact_set_scrub(set, s, strlen(s), &b);
  return b.data;
}

#define ASSERT_SCRUB(set, in, want)                                            \
  do {                                                                         \
    char *got_ = scrub(set, in);                                               \
    ck_assert_msg(!strcmp(got_, want), "'%s' -> '%s', want '%s'", in, got_, want); \
    free(got_);                                                                \
  } while (0)

START_TEST(scrub_secrets) {
  redact_set_t *set = redact_set_new();
  ASSERT_SCRUB(set, "nothing to hide", "nothing to hide");
  redact_set_add(set, "hunter2");
  redact_set_add(set, "hunter2-long");
  redact_set_add(set, "ab");  /* too short: would match inside words */
  redact_set_add(set, NULL);
  redact_set_add(set, "");
  ASSERT_SCRUB(set, "a hunter2 b", "a *** b");
  ASSERT_SCRUB(set, "hunter2hunter2", "******");
  ASSERT_SCRUB(set, "x hunter2-long y", "x *** y"); /* the longest match, not "***-long" */
  ASSERT_SCRUB(set, "about a table", "about a table");
  /* a message cut inside a secret */
  ASSERT_SCRUB(set, "Password \"hunt", "Password \"***");
  ASSERT_SCRUB(set, "ends with hu", "ends with hu"); /* two bytes prove nothing */
  /* percent-decoded forms */
  redact_set_add(set, "p%40ss%3Aw%2F%25rd");
  ASSERT_SCRUB(set, "auth failed for p@ss:w/%rd!", "auth failed for ***!");
  ASSERT_SCRUB(set, "uri p%40ss%3Aw%2F%25rd", "uri ***");
  /* as libbson's JSON quotes it */
  redact_set_add(set, "q\"uo\\te");
  ASSERT_SCRUB(set, "{\"pwd\": \"q\\\"uo\\\\te\"}", "{\"pwd\": \"***\"}");
  redact_set_clear(set);
  ASSERT_SCRUB(set, "a hunter2 b", "a hunter2 b");
  redact_set_destroy(set);
  redact_set_destroy(NULL);
  ASSERT_SCRUB(NULL, "a hunter2 b", "a hunter2 b");
}
END_TEST

/* Text a library writes about a configured secret, scrubbed: the secrets
 * of a case go into one set (URIs through redact_set_add_uri, others
 * through redact_set_add), then every (text, want) pair is checked. */
typedef struct {
  const char *uris[2], *secrets[2];
  const char *scrubs[4][2]; /* text, want; up to an empty pair */
} scrub_case_t;

static const scrub_case_t scrub_cases[] = {
    /* a raw password: libmongoc quotes what it read up to the first '@' */
    {.uris = {"mongodb://user:Zq@9:x/%y \xc3\xa9\xe2\x82\xacKw@db.invalid:27017/"},
     .scrubs = {{"Password \"Zq\" must not", "Password \"Zq\" must not"}, /* 2 bytes: kept */
                {"failed for user Zq@9:x/%y \xc3\xa9\xe2\x82\xacKw.", "failed for user ***."}}},
    /* the same password percent-encoded */
    {.uris = {"mongodb://user:Zq%409%3Ax%2F%25y%20\xc3\xa9\xe2\x82\xacKw@db.invalid:27017/"},
     .scrubs = {{"failed for user Zq@9:x/%y \xc3\xa9\xe2\x82\xacKw.", "failed for user ***."}}},
    /* an unescaped ':' in the password, and a credential option */
    {.uris = {"mongodb://user:se:cret@host/", "mongodb://h/?authMechanismProperties=AWS_SESSION_TOKEN:t0k3n&x=1"},
     .scrubs = {{"Password \"se:cret\" must not have unescaped chars",
                 "Password \"***\" must not have unescaped chars"},
                {"bad value AWS_SESSION_TOKEN:t0k3n", "bad value ***"}}},
    /* What librdkafka logs for a sasl.oauthbearer.config it cannot parse:
     * the rest of the value from the word it stops at, or one value. */
    {.secrets = {"principal=admin bad! extension_token=S3CRETVALUE"},
     .scrubs = {{"Unrecognized sasl.oauthbearer.config beginning at: bad! extension_token=S3CRETVALUE",
                 "Unrecognized sasl.oauthbearer.config beginning at: ***"},
                {"Invalid sasl.oauthbearer.config: empty 'extension_token=S3CRETVALUE' x",
                 "Invalid sasl.oauthbearer.config: empty '***' x"},
                {"token S3CRETVALUE", "token ***"}}},
    {.secrets = {"principal=a lifeSeconds=12345x\textension_k=v"},
     .scrubs = {{"non-integral 'lifeSeconds=': 12345x", "non-integral 'lifeSeconds=': ***"},
                {"at: extension_k=v", "at: ***"}}},
    /* A password whose %-decoded form holds a NUL ("%00"): a library
     * printing the decoded form as a C string shows what comes before the
     * NUL. */
    {.uris = {"mongodb://user:s3cr3t%00-the-rest-of-it@db.invalid/"},
     .scrubs = {{"auth failed for s3cr3t, a long message after it", "auth failed for ***, a long message after it"},
                {"as given: s3cr3t%00-the-rest-of-it.", "as given: ***."}}},
};

START_TEST(scrub_library_text) {
  const scrub_case_t *c = &scrub_cases[_i];
  redact_set_t *set = redact_set_new();
  for (size_t i = 0; i < 2; i++) {
    if (c->uris[i]) redact_set_add_uri(set, c->uris[i]);
    if (c->secrets[i]) redact_set_add(set, c->secrets[i]);
  }
  for (size_t i = 0; i < 4 && c->scrubs[i][0]; i++) ASSERT_SCRUB(set, c->scrubs[i][0], c->scrubs[i][1]);
  redact_set_destroy(set);
}
END_TEST

/* Every log line is scrubbed against redact_global(): the message and every
 * string field, in both formats. */
START_TEST(log_lines_scrubbed) {
  char path[] = "/tmp/test_redact.XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  redact_set_add(redact_global(), "s3cr3t-\xc3\xa9 x");
  log_setup(LOG_LEVEL_DEBUG, LOG_FORMAT_JSON);
  log_error("auth failed for s3cr3t-\xc3\xa9 x", "detail", LOG_STR, "payload \\0user\\0s3cr3t-\xc3\xa9 x", "n",
            LOG_INT, (int64_t)1);
  log_setup(LOG_LEVEL_DEBUG, LOG_FORMAT_TEXT);
  log_warn("text s3cr3t-\xc3\xa9 x", "detail", LOG_STR, "s3cr3t-\xc3\xa9 x");
  /* a message that ends inside the secret (truncated by a library) */
  log_info("cut s3cr3t-");
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  redact_set_clear(redact_global());
  log_setup(LOG_LEVEL_INFO, LOG_FORMAT_JSON);
  char out[4096];
  ssize_t n = pread(fd, out, sizeof out - 1, 0);
  close(fd);
  unlink(path);
  ck_assert_int_gt(n, 0);
  out[n] = '\0';
  ck_assert_msg(!strstr(out, "s3cr3t") && !strstr(out, "cr3t"), "secret in log:\n%s", out);
  ck_assert_msg(strstr(out, "\"msg\":\"auth failed for ***\""), "%s", out);
  ck_assert_msg(strstr(out, "\"detail\":\"payload \\\\0user\\\\0***\""), "%s", out);
  ck_assert_msg(strstr(out, "text *** detail=***"), "%s", out);
  ck_assert_msg(strstr(out, "cut ***"), "%s", out);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("redact");
  TCase *tc = tcase_create("redact");
  tcase_add_test(tc, uri_shown_without_password);
  tcase_add_test(tc, unescaped_at);
  tcase_add_test(tc, scrub_secrets);
  tcase_add_loop_test(tc, scrub_library_text, 0, (int)(sizeof scrub_cases / sizeof scrub_cases[0]));
  tcase_add_test(tc, log_lines_scrubbed);
  suite_add_tcase(s, tc);
  return s;
}
