/* The files of a replay: see replay_file.h. */
#include "replay_file.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* The buffer is handed to stdio once it holds this much. */
enum { REPLAY_FILE_DRAIN_BYTES = 1 << 16 };

static void report(const replay_file_t *file) {
  const char *q = file->quote ? "'" : "";
  fprintf(stderr, "aggregator: replay: cannot write %s%s%s: %s\n", q, file->shown, q, strerror(errno));
}

bool replay_file_open(replay_file_t *file, const char *path, const char *mode) {
  file->failed = false;
  file->buf = (model_buf_t)MODEL_BUF_INIT;
  if (!strcmp(path, "-")) {
    file->f = mode[0] == 'r' ? stdin : stdout;
    return true;
  }
  file->f = fopen(path, mode);
  if (!file->f) fprintf(stderr, "aggregator: replay: cannot open '%s': %s\n", path, strerror(errno));
  return file->f != NULL;
}

bool replay_file_drain(replay_file_t *file) {
  bool ok = !file->buf.len || fwrite(file->buf.data, 1, file->buf.len, file->f) == file->buf.len;
  model_buf_clear(&file->buf);
  if (!ok) {
    file->failed = true;
    if (file->report_each) report(file);
  }
  return ok;
}

/* A piece as large as the buffer goes to stdio as it is, after what is
 * buffered: copying it first would only cost a copy. */
bool replay_file_write(replay_file_t *file, const char *data, size_t len) {
  if (len < REPLAY_FILE_DRAIN_BYTES) {
    model_buf_append(&file->buf, data, len);
    return file->buf.len < REPLAY_FILE_DRAIN_BYTES || replay_file_drain(file);
  }
  if (!replay_file_drain(file)) return false;
  if (fwrite(data, 1, len, file->f) == len) return true;
  file->failed = true;
  if (file->report_each) report(file);
  return false;
}

bool replay_file_close(replay_file_t *file) {
  if (!file->f) return true;
  bool ok = replay_file_drain(file);
  ok = !ferror(file->f) && ok;
  ok = (file->f == stdout ? fflush(file->f) == 0 : fclose(file->f) == 0) && ok;
  if (file->report_each ? !ok : !ok || file->failed) report(file);
  ok = ok && !file->failed;
  file->f = NULL;
  model_buf_destroy(&file->buf);
  return ok;
}

void replay_file_close_input(replay_file_t *file) {
  if (file->f && file->f != stdin) fclose(file->f);
  file->f = NULL;
  model_buf_destroy(&file->buf);
}

bool replay_file_same(const char *a, const char *b) {
  if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-")) return false; /* stdin vs stdout: checked apart */
  struct stat sa, sb;
  if (stat(a, &sa) || stat(b, &sb)) return !strcmp(a, b);
  return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
