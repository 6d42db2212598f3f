# Drop-in: gcc compiling a small C project under LD_PRELOAD=libtxalloc.so produces the same
# object files (byte for byte) and the same program as with glibc malloc, and txalloc's
# statistics show it served the compiler (cc1 allocates heavily).
#
# Workload: a generated project of 6 source files (a hash table, a sort, a string builder,
# generated functions) compiled at -O2 with warnings, linked, and run; the objects of the
# two builds are compared with cmp and the two programs' outputs must be equal.
set -euo pipefail
source "$(dirname "$0")/support/dropin_common.sh"
command -v gcc >/dev/null || { echo "gcc missing" >&2; exit 2; }

FUNCS=$(dropin_scaled 300 60)
src="$DROPIN_TMP/src"
mkdir -p "$src"
cat >"$src/table.h" <<'C'
#include <stddef.h>
typedef struct table table;
table *table_new(size_t buckets);
void table_put(table *t, const char *key, long value);
long table_get(const table *t, const char *key, long missing);
void table_free(table *t);
void sort_longs(long *v, size_t n);
char *build_string(int n);
long generated_sum(int x);
C
cat >"$src/table.c" <<'C'
#include <stdlib.h>
#include <string.h>
#include "table.h"
typedef struct entry { char *key; long value; struct entry *next; } entry;
struct table { size_t n; entry **b; };
static size_t hash(const char *s) { size_t h = 5381; while (*s) h = h * 33 + (unsigned char)*s++; return h; }
table *table_new(size_t n) { table *t = malloc(sizeof *t); t->n = n; t->b = calloc(n, sizeof *t->b); return t; }
void table_put(table *t, const char *k, long v) {
  entry **e = &t->b[hash(k) % t->n];
  for (; *e; e = &(*e)->next) if (!strcmp((*e)->key, k)) { (*e)->value = v; return; }
  *e = malloc(sizeof **e); (*e)->key = strdup(k); (*e)->value = v; (*e)->next = NULL;
}
long table_get(const table *t, const char *k, long missing) {
  for (entry *e = t->b[hash(k) % t->n]; e; e = e->next) if (!strcmp(e->key, k)) return e->value;
  return missing;
}
void table_free(table *t) {
  for (size_t i = 0; i < t->n; i++) for (entry *e = t->b[i], *n; e; e = n) { n = e->next; free(e->key); free(e); }
  free(t->b); free(t);
}
C
cat >"$src/sort.c" <<'C'
#include "table.h"
static void merge(long *v, long *tmp, size_t lo, size_t mid, size_t hi) {
  size_t i = lo, j = mid, k = lo;
  while (i < mid && j < hi) tmp[k++] = v[i] <= v[j] ? v[i++] : v[j++];
  while (i < mid) tmp[k++] = v[i++];
  while (j < hi) tmp[k++] = v[j++];
  for (k = lo; k < hi; k++) v[k] = tmp[k];
}
#include <stdlib.h>
void sort_longs(long *v, size_t n) {
  long *tmp = malloc(n * sizeof *tmp);
  for (size_t w = 1; w < n; w *= 2)
    for (size_t lo = 0; lo + w < n; lo += 2 * w) merge(v, tmp, lo, lo + w, lo + 2 * w < n ? lo + 2 * w : n);
  free(tmp);
}
C
cat >"$src/strings.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "table.h"
char *build_string(int n) {
  size_t cap = 16, len = 0; char *s = malloc(cap);
  for (int i = 0; i < n; i++) {
    char part[32]; int k = snprintf(part, sizeof part, "%d,", i * i % 97);
    if (len + (size_t)k + 1 > cap) { cap *= 2; s = realloc(s, cap); }
    memcpy(s + len, part, (size_t)k); len += (size_t)k;
  }
  s[len] = 0; return s;
}
C
{
  echo '#include "table.h"'
  for i in $(seq 1 "$FUNCS"); do
    echo "static long f$i(int x) { long a = x; for (int i = 0; i < $((i % 13 + 1)); i++) a = a * $((i % 7 + 2)) + (a >> $((i % 5 + 1))) - $i; return a % 1000003; }"
  done
  echo "long generated_sum(int x) { long s = 0;"
  for i in $(seq 1 "$FUNCS"); do echo "  s += f$i(x + $i);"; done
  echo "  return s; }"
} >"$src/generated.c"
cat >"$src/main.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "table.h"
int main(void) {
  table *t = table_new(1024); char key[32];
  for (int i = 0; i < 20000; i++) { snprintf(key, sizeof key, "k%d", i % 5000); table_put(t, key, table_get(t, key, 0) + i); }
  long v[5000]; for (int i = 0; i < 5000; i++) { snprintf(key, sizeof key, "k%d", i); v[i] = table_get(t, key, -1); }
  sort_longs(v, 5000); char *s = build_string(3000);
  printf("%ld %ld %zu %ld\n", v[0], v[4999], strlen(s), generated_sum(7));
  free(s); table_free(t); return 0;
}
C

build() { # dir
  mkdir -p "$1"
  for f in table sort strings generated main; do
    gcc -std=gnu11 -O2 -Wall -Wextra -c "$src/$f.c" -o "$1/$f.o"
  done
  gcc -o "$1/prog" "$1"/*.o
  "$1/prog"
}
cd "$DROPIN_TMP"
export -f build
export src
dropin_compare gcc_build 20000 bash -c 'build "$0"' "$DROPIN_TMP/plain_build"
# The run above built into plain_build twice (plain, then preloaded over it); build the
# preloaded objects into their own directory to compare them byte for byte.
env -u LD_PRELOAD bash -c 'build "$0"' "$DROPIN_TMP/ref" >/dev/null
env LD_PRELOAD="$TXALLOC_LIB" bash -c 'build "$0"' "$DROPIN_TMP/tx" >/dev/null
for f in table sort strings generated main; do
  cmp -s "$DROPIN_TMP/ref/$f.o" "$DROPIN_TMP/tx/$f.o" || dropin_fail "gcc: $f.o differs when gcc runs on txalloc"
done
dropin_finish
