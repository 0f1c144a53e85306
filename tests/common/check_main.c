/* The one main() of every Check suite (unit and integration): each suite
 * file defines test_suite() and links this runner. libmongoc's own log
 * handler is silenced (the suites assert on the errors they provoke instead
 * of printing them), and its global state is made first and released at
 * the end, so that valgrind and ASan see no leak of it. */
#include <check.h>
#include <mongoc/mongoc.h>
#include <stdlib.h>

Suite *test_suite(void);

int main(void) {
  mongoc_init();
  mongoc_log_set_handler(NULL, NULL);
  SRunner *sr = srunner_create(test_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  mongoc_cleanup();
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
