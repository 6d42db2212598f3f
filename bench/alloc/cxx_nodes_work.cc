/* The C++ half of cxx-nodes (cxx_nodes.c is the program): one thread's rounds over a
 * std::map<int, std::string>. bench/common is C only, so the two halves meet at
 * cxx_nodes_run alone. */
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace {

/* A string of `length` characters whose content the reader can recompute from its key. */
std::string value_for(long key, size_t length) { return std::string(length, char('a' + key % 26)); }

/* Whether s is value_for(key, length), without making a string to compare with. */
bool holds_value(const std::string &s, long key, size_t length) {
  return s.size() == length && s.find_first_not_of(char('a' + key % 26)) == std::string::npos;
}

} // namespace

/* Runs `rounds` rounds of `keys` entries; returns the operator new/delete pairs made, or
 * UINT64_MAX when an entry read back differs from what was stored. */
extern "C" uint64_t cxx_nodes_run(long rounds, long keys, uint64_t seed) {
  std::vector<size_t> lengths(size_t(keys), 0);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1, pairs = 0;
  bool valid = true;
  for (long r = 0; r < rounds; r++) {
    std::map<int, std::string> m;
    for (long k = 0; k < keys; k++) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      lengths[size_t(k)] = 16 + size_t(state >> 58); /* 16..79: always a heap buffer */
      m.emplace(int(k), value_for(k, lengths[size_t(k)]));
    }
    for (long k = 0; k < keys; k++) {
      auto it = m.find(int(k));
      valid &= it != m.end() && holds_value(it->second, k, lengths[size_t(k)]);
    }
    for (long k = 1; k < keys; k += 2) m.erase(int(k));
    for (long k = 1; k < keys; k += 2) m.emplace(int(k), value_for(k + 1, 16 + size_t(k % 64)));
    valid &= m.size() == size_t(keys);
    /* a node and a string buffer per entry, the odd entries made twice */
    pairs += 2 * uint64_t(keys) + 2 * uint64_t(keys / 2);
  }
  return valid ? pairs : UINT64_MAX;
}
