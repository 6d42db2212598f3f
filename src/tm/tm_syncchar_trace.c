/* The Syncchar trace file: a 64-byte header, then records of whole 8-byte words appended
 * by one write(2) each under a mutex, so that the threads' records never interleave
 * (docs/syncchar.md, "Trace format"). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "tm/tm_syncchar.h"
#include "util/message.h"

static int trace_fd = -1;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;

static void write_all(const void *data, size_t n) {
  if (!txalloc_write_all(trace_fd, data, n)) {
    txalloc_message("syncchar: writing the trace failed; recording stops");
    close(trace_fd);
    trace_fd = -1;
  }
}

bool tm_syncchar_trace_open(const char *path, unsigned unit, unsigned unit_shift,
                            unsigned stm_shift, unsigned sample, unsigned window,
                            const char *backend, uint64_t start_ns) {
  trace_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (trace_fd < 0) return false;
  struct {
    char magic[8];
    uint32_t version, header_bytes;
    uint32_t unit, unit_shift, stm_shift, sample_percent, window, pid;
    char backend[16];
    uint64_t start_ns;
  } header;
  _Static_assert(sizeof header == 64, "the header is 64 bytes");
  memset(&header, 0, sizeof header);
  memcpy(header.magic, "TXSYNCH1", 8);
  header.version = 1;
  header.header_bytes = sizeof header;
  header.unit = unit;
  header.unit_shift = unit_shift;
  header.stm_shift = stm_shift;
  header.sample_percent = sample;
  header.window = window;
  header.pid = (uint32_t)getpid();
  strncpy(header.backend, backend, sizeof header.backend - 1);
  header.start_ns = start_ns;
  pthread_mutex_lock(&trace_lock);
  write_all(&header, sizeof header);
  pthread_mutex_unlock(&trace_lock);
  return trace_fd >= 0;
}

void tm_syncchar_trace_write(const uint64_t *words, size_t n) {
  if (!n) return;
  pthread_mutex_lock(&trace_lock);
  if (trace_fd >= 0) write_all(words, n * sizeof *words);
  pthread_mutex_unlock(&trace_lock);
}

/* A MAPS record: kind, length, the text's length, then the text of /proc/self/maps (up to
 * 256 KiB), zero-padded to a whole word. */
void tm_syncchar_trace_write_maps(void) {
  static uint64_t words[(256 << 10) / 8 + 2];
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char *text = (char *)&words[2];
  size_t cap = sizeof words - 16, len = 0;
  for (;;) {
    ssize_t r = read(fd, text + len, cap - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
    if (len == cap) break;
  }
  close(fd);
  size_t nwords = 2 + (len + 7) / 8;
  memset(text + len, 0, (nwords - 2) * 8 - len);
  words[0] = TM_SC_RECORD_MAPS | (uint64_t)(nwords * 8) << 32;
  words[1] = len;
  tm_syncchar_trace_write(words, nwords);
}
