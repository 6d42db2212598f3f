/* trace_recorder.c: the trace file is PLACEMENT_TRACE.<pid> (PLACEMENT_TRACE is a path
 * prefix set by `txalloc placement`; unset, nothing is recorded).
 *
 * Each thread appends to its own buffer under the buffer's spin lock, which only the exit
 * flush ever contends for. A full buffer is written with one write() under the file lock.
 * Buffers are never unmapped: a thread that exits flushes its buffer and leaves it to the
 * next new thread, and the list of all buffers lets the exit flush reach every record.
 *
 * fork: the child stops recording (its copies of the buffers belong to the parent, which
 * writes them). A process that calls exec starts afresh and writes PLACEMENT_TRACE.<pid>
 * of its own; when the pid is the same (exec without fork), the new image's trace
 * replaces the old one. */
#include "tools/trace_recorder.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BUFFER_RECORDS 4096
#define TRACE_VARIABLE "PLACEMENT_TRACE"

struct buffer {
  struct buffer *next; /* in all_buffers; never removed */
  int lock;
  int in_use; /* held by a live thread */
  uint32_t count;
  struct trace_record records[BUFFER_RECORDS];
};

static struct buffer *all_buffers;
static int recording = 1; /* cleared without PLACEMENT_TRACE, in a forked child, at exit */
static uint64_t seq_counter;
static int trace_fd = -1;
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static bool exit_key_ready;

static __thread struct buffer *mine;
static __thread uint32_t my_tid;
static __thread bool inside; /* the recorder's own calls (pthread_setspecific may calloc) */

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

static void spin_lock(int *lock) {
  while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(lock, __ATOMIC_RELAXED)) {
    }
}

static void spin_unlock(int *lock) { __atomic_store_n(lock, 0, __ATOMIC_RELEASE); }

static bool write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* Appends the decimal digits of v to s. */
static void append_number(char *s, size_t cap, unsigned long v) {
  char digits[24];
  int n = 0;
  do digits[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  size_t len = strlen(s);
  while (n && len + 1 < cap) s[len++] = digits[--n];
  s[len] = '\0';
}

/* pre: file_lock held. */
static bool open_trace(void) {
  const char *prefix = getenv(TRACE_VARIABLE);
  static char path[4096];
  if (!prefix || strlen(prefix) + 24 > sizeof path) return false;
  strcpy(path, prefix);
  strcat(path, ".");
  append_number(path, sizeof path, (unsigned long)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    say("placement tracer: cannot create ");
    say(path);
    say("; recording stops\n");
    return false;
  }
  struct trace_header h = {.version = TRACE_VERSION,
                           .record_size = sizeof(struct trace_record),
                           .pid = (uint64_t)getpid()};
  memcpy(h.magic, TRACE_MAGIC, sizeof h.magic);
  if (!write_all(fd, &h, sizeof h)) {
    close(fd);
    return false;
  }
  trace_fd = fd;
  return true;
}

/* pre: b->lock held. */
static void flush(struct buffer *b) {
  if (b->count == 0) return;
  pthread_mutex_lock(&file_lock);
  if (trace_fd < 0 && !open_trace()) __atomic_store_n(&recording, 0, __ATOMIC_RELAXED);
  if (trace_fd >= 0 && !write_all(trace_fd, b->records, b->count * sizeof b->records[0])) {
    say("placement tracer: writing the trace failed; recording stops\n");
    __atomic_store_n(&recording, 0, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&file_lock);
  b->count = 0;
}

static struct buffer *acquire_buffer(void) {
  for (struct buffer *b = __atomic_load_n(&all_buffers, __ATOMIC_ACQUIRE); b; b = b->next) {
    int idle = 0;
    if (__atomic_compare_exchange_n(&b->in_use, &idle, 1, false, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED))
      return b;
  }
  void *m =
      mmap(NULL, sizeof(struct buffer), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  struct buffer *b = m;
  b->in_use = 1;
  b->next = __atomic_load_n(&all_buffers, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(&all_buffers, &b->next, b, true, __ATOMIC_RELEASE,
                                      __ATOMIC_RELAXED)) {
  }
  return b;
}

static void release_at_thread_exit(void *arg) {
  struct buffer *b = arg;
  spin_lock(&b->lock);
  if (__atomic_load_n(&recording, __ATOMIC_RELAXED)) flush(b);
  spin_unlock(&b->lock);
  mine = NULL;
  __atomic_store_n(&b->in_use, 0, __ATOMIC_RELEASE);
}

uint64_t trace_next_seq(void) { return __atomic_fetch_add(&seq_counter, 1, __ATOMIC_SEQ_CST); }

void trace_record(uint64_t seq, const void *addr, size_t size, enum trace_kind kind,
                  unsigned align_log2) {
  if (inside || !__atomic_load_n(&recording, __ATOMIC_RELAXED)) return;
  inside = true;
  if (!mine) {
    mine = acquire_buffer();
    if (mine && exit_key_ready) pthread_setspecific(exit_key, mine);
  }
  struct buffer *b = mine;
  if (b) {
    if (!my_tid) my_tid = (uint32_t)syscall(SYS_gettid);
    spin_lock(&b->lock);
    if (__atomic_load_n(&recording, __ATOMIC_RELAXED)) { /* the exit flush may have run */
      if (b->count == BUFFER_RECORDS) flush(b);
      b->records[b->count++] = (struct trace_record){.seq = seq,
                                                     .addr = (uint64_t)(uintptr_t)addr,
                                                     .size = size,
                                                     .tid = my_tid,
                                                     .kind = (uint16_t)kind,
                                                     .align_log2 = (uint16_t)align_log2};
    }
    spin_unlock(&b->lock);
  }
  inside = false;
}

static void stop_in_child(void) { __atomic_store_n(&recording, 0, __ATOMIC_RELAXED); }

__attribute__((constructor)) static void recorder_init(void) {
  if (!getenv(TRACE_VARIABLE)) {
    __atomic_store_n(&recording, 0, __ATOMIC_RELAXED);
    return;
  }
  exit_key_ready = pthread_key_create(&exit_key, release_at_thread_exit) == 0;
  if (exit_key_ready && mine) pthread_setspecific(exit_key, mine);
  pthread_atfork(NULL, NULL, stop_in_child);
}

/* Runs after the program's own destructors (a preloaded library is initialised first and
 * finalised last), so their frees are in the trace. */
__attribute__((destructor)) static void recorder_finish(void) {
  if (!__atomic_exchange_n(&recording, 0, __ATOMIC_SEQ_CST)) return;
  for (struct buffer *b = __atomic_load_n(&all_buffers, __ATOMIC_ACQUIRE); b; b = b->next) {
    spin_lock(&b->lock);
    flush(b);
    spin_unlock(&b->lock);
  }
  pthread_mutex_lock(&file_lock);
  if (trace_fd >= 0) close(trace_fd);
  trace_fd = -1;
  pthread_mutex_unlock(&file_lock);
}
