/* placement_target.c: a program with known placement for the analyser's tests
 * (python/tests/test_placement_trace.py): page-aligned objects, so that every one of them
 * starts on L1 set 0 of any geometry whose sets x line size divides 4096.
 *
 *   main thread:   MAIN_OBJECTS objects of 1500 bytes (posix_memalign, 4096)
 *   second thread: SECOND_OBJECTS objects of 3000 bytes (aligned_alloc, 4096), then
 *                  realloc of one of them to 3100 bytes (same class, new object)
 *   peak:          all of them live
 *   then:          the main thread frees every other 1500-byte object, the 3000-byte ones
 *                  stay live to the end
 * No stdio: nothing else of the program allocates. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAIN_OBJECTS 40
#define SECOND_OBJECTS 24

static void *second_objects[SECOND_OBJECTS];

static void *second_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < SECOND_OBJECTS; i++) {
    second_objects[i] = aligned_alloc(4096, 3000);
    if (!second_objects[i]) abort();
    memset(second_objects[i], 1, 3000);
  }
  void *moved = realloc(second_objects[0], 3100);
  if (!moved) abort();
  second_objects[0] = moved;
  return NULL;
}

int main(void) {
  static void *main_objects[MAIN_OBJECTS];
  for (int i = 0; i < MAIN_OBJECTS; i++) {
    if (posix_memalign(&main_objects[i], 4096, 1500) != 0) abort();
    memset(main_objects[i], 2, 1500);
  }
  pthread_t t;
  if (pthread_create(&t, NULL, second_thread, NULL) != 0 || pthread_join(t, NULL) != 0) abort();
  for (int i = 0; i < MAIN_OBJECTS; i += 2) free(main_objects[i]);
  return 0;
}
