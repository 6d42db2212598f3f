# Drop-in: more real programs under LD_PRELOAD=libtxalloc.so give the same output as with
# glibc malloc, and txalloc's statistics show it served them.
#
# Workload: multithreaded compressors (xz -T4, zstd -T4: buffers allocated by one thread
# and freed by another) round-tripping a generated 3 MB text; sqlite3 building, indexing
# and aggregating a 100000-row table in memory; node (V8) building and serialising 200000
# objects; and a C++ program (std::thread, std::map, std::string, std::vector) compiled by
# g++ — the compiler runs preloaded, then the program runs preloaded. A tool that is not
# installed is skipped with a note.
set -euo pipefail
source "$(dirname "$0")/support/dropin_common.sh"
cd "$DROPIN_TMP"

ROWS=$(dropin_scaled 100000 20000)
awk 'BEGIN { srand(3); for (i = 0; i < 60000; i++) printf "%d %s %.5f\n", i, \
  substr("lorem ipsum dolor sit amet consectetur", 1 + int(rand() * 30), 8), rand() }' >text.txt

have() { command -v "$1" >/dev/null || { echo "note: $1 not installed, skipped" >&2; return 1; }; }

if have xz; then
  dropin_compare xz_compress 20 xz -T4 -6 -c text.txt
  xz -T4 -c text.txt >text.xz
  dropin_compare xz_decompress 10 xz -T4 -d -c text.xz
fi
if have zstd; then
  dropin_compare zstd_compress 20 zstd -T4 -q -c text.txt
  zstd -q -c text.txt >text.zst
  dropin_compare zstd_decompress 5 zstd -q -d -c text.zst
fi
if have sqlite3; then
  cat >q.sql <<SQL
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $ROWS)
INSERT INTO t SELECT i, 'key' || (i * 7919 % 1000), (i * 31 % 977) / 7.0 FROM n;
CREATE INDEX tk ON t(k);
SELECT k, count(*), printf('%.3f', sum(v)) FROM t GROUP BY k ORDER BY k LIMIT 20;
SELECT count(DISTINCT k), printf('%.3f', avg(v)) FROM t WHERE k > 'key5';
SQL
  dropin_compare sqlite3 10000 sqlite3 :memory: ".read q.sql"
fi
if have node; then
  dropin_compare node 10000 node -e 'let a = []; for (let i = 0; i < 200000; i++) a.push({k: "x" + i, v: [i, i * 2]}); const m = new Map(a.map(o => [o.k, o.v[1]])); console.log(a.length, JSON.stringify(a).length, m.get("x777"))'
fi
if have g++; then
  cat >prog.cc <<'CC'
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
int main() {
  std::map<std::string, long> totals;
  std::mutex m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; t++)
    threads.emplace_back([&, t] {
      std::map<std::string, long> local;
      for (int i = 0; i < 50000; i++) local["k" + std::to_string((i * 7 + t) % 3000)] += i;
      std::lock_guard<std::mutex> g(m);
      for (auto &kv : local) totals[kv.first] += kv.second;  // nodes freed by this thread
    });
  for (auto &th : threads) th.join();
  long sum = 0;
  for (auto &kv : totals) sum += kv.second * (long)kv.first.size();
  std::printf("%zu %ld\n", totals.size(), sum);
}
CC
  dropin_compare gxx_compile 20000 g++ -O1 -pthread -o prog prog.cc
  dropin_compare cxx_program 10000 ./prog
fi
dropin_finish
