/* A C program run with LD_PRELOAD=libtxalloc.so: libstdc++ is not mapped at start (the
 * library needs none), then local_runtime_module.so is dlopen'd with RTLD_LOCAL, bringing
 * libstdc++ into its own scope only, and runs its checks of operator new there
 * (bad_alloc, nothrow, a new_handler). Usage: dlopen_host MODULE_PATH. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int mapped(const char *name) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, name)) found = 1;
  if (f) fclose(f);
  return found;
}

static int (*owner_of)(const void *);
static int owned(const void *p) { return owner_of(p) != 0; }

int main(int argc, char **argv) {
  if (argc != 2 || strcmp(argv[1], "--help") == 0) {
    int help = argc == 2;
    fprintf(help ? stdout : stderr,
            "usage: %s MODULE_PATH\nRun with LD_PRELOAD=libtxalloc.so: dlopens the C++ "
            "module with RTLD_LOCAL and runs its operator new checks.\n",
            argv[0]);
    return help ? 0 : 2;
  }
  owner_of = (int (*)(const void *))dlsym(RTLD_DEFAULT, "txalloc_owner_of");
  if (!owner_of) {
    fprintf(stderr, "dlopen_host: libtxalloc.so is not preloaded\n");
    return 1;
  }
  int failures = 0;
  if (mapped("libstdc++")) {
    fprintf(stderr, "dlopen_host: FAIL: libstdc++ mapped before the module\n");
    failures++;
  }
  void *module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    fprintf(stderr, "dlopen_host: %s\n", dlerror());
    return 1;
  }
  if (dlsym(RTLD_DEFAULT, "_ZSt15get_new_handlerv")) {
    fprintf(stderr, "dlopen_host: FAIL: the C++ runtime is in the global scope\n");
    failures++;
  }
  int (*check)(int (*)(const void *)) =
      (int (*)(int (*)(const void *)))dlsym(module, "local_runtime_check");
  if (!check) {
    fprintf(stderr, "dlopen_host: %s\n", dlerror());
    return 1;
  }
  failures += check(owned);
  dlclose(module);
  fprintf(stderr, "dlopen_host: %d failures\n", failures);
  return failures ? 1 : 0;
}
