/* The files of a replay: see replay_file.h. */
#include "replay_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "oom.h"

/* The buffer is handed to stdio once it holds this much. */
enum { REPLAY_FILE_DRAIN_BYTES = 1 << 16 };

static void report(const replay_file_t *file, const char *what, int err) {
  log_error(what, "file", LOG_STR, file->shown ? file->shown : "", "error", LOG_STR, strerror(err));
}

/* --- opening an output ------------------------------------------------------- */

/* The path a commit renames to: path, or what a symbolic link at path
 * names (the link stays a link). */
static char *target_of(const char *path) {
  struct stat st;
  if (!lstat(path, &st) && S_ISLNK(st.st_mode)) {
    char *real = realpath(path, NULL);
    if (real) return real;
  }
  return oom_strdup(path);
}

/* Creates the file beside target that the output is written to; -1 with
 * errno set. */
static int create_temp(const char *target, const struct stat *existing, char **temp) {
  static unsigned counter;
  const char *slash = strrchr(target, '/');
  size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
  for (int tries = 0; tries < 100; tries++) {
    model_buf_t b = MODEL_BUF_INIT;
    model_buf_printf(&b, "%.*s.%s.tmp-%ld-%u", (int)dirlen, target, target + dirlen, (long)getpid(), counter++);
    int fd = open(b.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      /* The target's own permissions, as writing it in place would keep. */
      if (existing) (void)fchmod(fd, existing->st_mode & 07777);
      *temp = oom_strdup(b.data);
      model_buf_destroy(&b);
      return fd;
    }
    int e = errno;
    model_buf_destroy(&b);
    if (e != EEXIST) {
      errno = e;
      return -1;
    }
  }
  errno = EEXIST;
  return -1;
}

static bool open_output(replay_file_t *file, const char *path) {
  char *target = target_of(path);
  struct stat st;
  bool exists = !stat(target, &st);
  if (exists && S_ISDIR(st.st_mode)) {
    free(target);
    errno = EISDIR;
    return false;
  }
  if (exists && !S_ISREG(st.st_mode)) { /* a device or a pipe: a stream */
    free(target);
    file->f = fopen(path, "w");
    return file->f != NULL;
  }
  int fd = create_temp(target, exists ? &st : NULL, &file->temp);
  if (fd < 0) {
    free(target);
    return false;
  }
  file->f = fdopen(fd, "w");
  if (!file->f) {
    int e = errno;
    close(fd);
    unlink(file->temp);
    free(file->temp);
    file->temp = NULL;
    free(target);
    errno = e;
    return false;
  }
  file->target = target;
  return true;
}

bool replay_file_open(replay_file_t *file, const char *path, const char *mode) {
  file->failed = false;
  file->error = 0;
  file->buf = (model_buf_t)MODEL_BUF_INIT;
  file->target = file->temp = NULL;
  if (!strcmp(path, "-")) {
    file->f = mode[0] == 'r' ? stdin : stdout;
    return true;
  }
  bool ok = mode[0] == 'r' ? (file->f = fopen(path, mode)) != NULL : open_output(file, path);
  if (!ok) {
    replay_file_t named = {.shown = path};
    report(&named, "replay: cannot open", errno);
  }
  return ok;
}

/* --- writing ----------------------------------------------------------------- */

static void failed(replay_file_t *file) {
  if (!file->failed) file->error = errno ? errno : EIO;
  file->failed = true;
  if (file->report_each) report(file, "replay: cannot write", file->error);
}

bool replay_file_drain(replay_file_t *file) {
  bool ok = !file->buf.len || fwrite(file->buf.data, 1, file->buf.len, file->f) == file->buf.len;
  model_buf_clear(&file->buf);
  if (!ok) failed(file);
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
  failed(file);
  return false;
}

/* --- closing ----------------------------------------------------------------- */

static void forget(replay_file_t *file) {
  file->f = NULL;
  model_buf_destroy(&file->buf);
  free(file->target);
  free(file->temp);
  file->target = file->temp = NULL;
}

bool replay_file_commit(replay_file_t *file) {
  if (!file->f) return true;
  errno = 0;
  bool ok = replay_file_drain(file);
  ok = fflush(file->f) == 0 && !ferror(file->f) && ok;
  /* Durable before it is renamed: a crash leaves the old target or the
   * whole new one, never a name on a file whose data is not on disk. */
  if (ok && file->temp) ok = fsync(fileno(file->f)) == 0;
  int e = file->failed ? file->error : errno;
  ok = (file->f == stdout ? true : fclose(file->f) == 0) && ok;
  if (!e) e = errno;
  file->f = NULL;
  if (ok && file->temp && rename(file->temp, file->target) != 0) {
    ok = false;
    e = errno;
  }
  if (!ok || file->failed) {
    if (!file->report_each || !file->failed) report(file, "replay: cannot write", e ? e : EIO);
    if (file->temp) unlink(file->temp);
    ok = false;
  }
  forget(file);
  return ok;
}

void replay_file_close(replay_file_t *file) {
  if (file->f) {
    file->report_each = false;
    if (!file->temp) (void)replay_file_drain(file); /* in place: a stream keeps what it was given */
    if (file->f == stdout)
      fflush(stdout);
    else
      fclose(file->f);
    if (file->temp) unlink(file->temp);
  }
  forget(file);
}

void replay_file_close_input(replay_file_t *file) {
  if (file->f && file->f != stdin) fclose(file->f);
  forget(file);
}

bool replay_file_same(const char *a, const char *b) {
  if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-")) return false; /* stdin vs stdout: checked apart */
  struct stat sa, sb;
  if (stat(a, &sa) || stat(b, &sb)) return !strcmp(a, b);
  return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
