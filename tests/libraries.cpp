// Real C++ libraries in goroutines under hostile preemption, run by tests/CMakeLists.txt at 2
// and 8 Ps and 20-50 us slices, under glibc's malloc, jemalloc, tcmalloc and mimalloc
// (LD_PRELOAD and linked) and in a -static-libstdc++ build (core/README.md, "What is
// preemptible"). Every goroutine checks what it computed against values made outside the
// runtime, or against a known final state; the program prints what it checked and exits 0
// when everything held, 1 when something did not. A crash or a hang is the test's failure too.
//
//   nugo_libraries [WORKLOAD...]   malloc, string, sqlite, zstd, sha256, leveldb (default: all
//                                  that this build has; leveldb needs the shared libstdc++)
//
// Eight goroutines per P run the workloads side by side, each for kRounds rounds, so that a
// slice of 20 us ends inside them thousands of times and goroutines move between threads
// between their library calls.
#include <openssl/err.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <zstd.h>

#include <atomic>
#include <cxxabi.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <nugo/nugo.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#if NUGO_HAVE_LEVELDB
#include <leveldb/db.h>
#include <leveldb/write_batch.h>
#include <unistd.h>
#endif

namespace {

constexpr int kRounds = 40;
std::atomic<int> failures{0};

void fail(const char* workload, int g, const std::string& what) {
  if (failures.fetch_add(1) < 20) std::fprintf(stderr, "FAIL %s goroutine %d: %s\n", workload, g, what.c_str());
}

// A small deterministic generator (splitmix64), seeded per goroutine and round.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

// ---- malloc/free churn: blocks of every size class, each filled with a pattern of its own and
// checked before it is freed, a window of them alive at once.
void malloc_churn(int g) {
  Rng rng{static_cast<std::uint64_t>(g) * 7919};
  struct Block {
    unsigned char* p;
    std::size_t n;
    unsigned char tag;
  };
  std::vector<Block> live;
  for (int round = 0; round < kRounds * 50; ++round) {
    std::size_t n = 1 + rng.next() % (rng.next() % 8 == 0 ? 65536 : 512);
    auto tag = static_cast<unsigned char>(rng.next());
    auto* p = static_cast<unsigned char*>(std::malloc(n));
    if (!p) return fail("malloc", g, "malloc returned null");
    std::memset(p, tag, n);
    live.push_back({p, n, tag});
    if (live.size() > 64 || rng.next() % 3 == 0) {
      std::size_t i = rng.next() % live.size();
      Block b = live[i];
      for (std::size_t k = 0; k < b.n; ++k)
        if (b.p[k] != b.tag) {
          fail("malloc", g, "a block's contents changed while it was alive");
          break;
        }
      if (rng.next() % 4 == 0) {  // realloc keeps the contents
        auto* q = static_cast<unsigned char*>(std::realloc(b.p, b.n * 2));
        if (!q) return fail("malloc", g, "realloc returned null");
        for (std::size_t k = 0; k < b.n; ++k)
          if (q[k] != b.tag) {
            fail("malloc", g, "realloc lost a block's contents");
            break;
          }
        b.p = q;
      }
      std::free(b.p);
      live[i] = live.back();
      live.pop_back();
    }
  }
  for (Block& b : live) std::free(b.p);
}

// ---- std::string and containers: built, copied and compared.
void strings(int g) {
  for (int round = 0; round < kRounds * 5; ++round) {
    std::map<std::string, std::string> m;
    std::string all;
    for (int i = 0; i < 200; ++i) {
      std::string key = "key-" + std::to_string(g) + "-" + std::to_string(i);
      std::string value(static_cast<std::size_t>(i % 97 + 1), static_cast<char>('a' + i % 26));
      all += value;
      m.emplace(std::move(key), std::move(value));
    }
    std::string again;
    for (int i = 0; i < 200; ++i) again += m.at("key-" + std::to_string(g) + "-" + std::to_string(i));
    if (again != all || m.size() != 200) return fail("string", g, "a map of strings lost or changed an entry");
  }
}

// ---- SQLite: an in-memory database per goroutine, rows inserted and summed by queries.
void sqlite(int g) {
  for (int round = 0; round < kRounds / 4; ++round) {
    sqlite3* db = nullptr;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) return fail("sqlite", g, "sqlite3_open");
    char* err = nullptr;
    auto exec = [&](const char* sql) {
      if (sqlite3_exec(db, sql, nullptr, nullptr, &err) == SQLITE_OK) return true;
      fail("sqlite", g, std::string(sql) + ": " + (err ? err : "?"));
      sqlite3_free(err);
      return false;
    };
    bool ok = exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER, s TEXT)") && exec("BEGIN");
    sqlite3_stmt* ins = nullptr;
    ok = ok && sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?, ?, ?)", -1, &ins, nullptr) == SQLITE_OK;
    constexpr int kRows = 2000;
    for (int i = 0; ok && i < kRows; ++i) {
      std::string s = "row " + std::to_string(i * g);
      sqlite3_bind_int(ins, 1, i);
      sqlite3_bind_int64(ins, 2, static_cast<sqlite3_int64>(i) * (g + 1));
      sqlite3_bind_text(ins, 3, s.c_str(), -1, SQLITE_TRANSIENT);
      ok = sqlite3_step(ins) == SQLITE_DONE && sqlite3_reset(ins) == SQLITE_OK;
    }
    sqlite3_finalize(ins);
    ok = ok && exec("COMMIT");
    sqlite3_stmt* q = nullptr;
    if (ok && sqlite3_prepare_v2(db, "SELECT count(*), sum(v), sum(length(s)) FROM t WHERE k % 3 = 0", -1, &q,
                                 nullptr) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW) {
      std::int64_t count = 0, sum = 0, len = 0;
      for (int i = 0; i < kRows; i += 3) {
        ++count;
        sum += static_cast<std::int64_t>(i) * (g + 1);
        len += static_cast<std::int64_t>(("row " + std::to_string(i * g)).size());
      }
      if (sqlite3_column_int64(q, 0) != count || sqlite3_column_int64(q, 1) != sum ||
          sqlite3_column_int64(q, 2) != len)
        fail("sqlite", g, "a query's count or sums differ from the rows inserted");
    } else if (ok) {
      fail("sqlite", g, std::string("query: ") + sqlite3_errmsg(db));
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    if (!ok) return;
  }
}

// ---- zstd: round trips of compressible buffers through a context of the goroutine's own.
void zstd(int g) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  Rng rng{static_cast<std::uint64_t>(g) * 104729};
  for (int round = 0; round < kRounds; ++round) {
    std::string in;
    while (in.size() < 64 * 1024) in += "word" + std::to_string(rng.next() % 500) + ' ';
    std::vector<char> packed(ZSTD_compressBound(in.size()));
    std::size_t n = ZSTD_compressCCtx(cctx.get(), packed.data(), packed.size(), in.data(), in.size(), 3);
    if (ZSTD_isError(n)) return fail("zstd", g, ZSTD_getErrorName(n));
    std::string out(in.size(), '\0');
    std::size_t m = ZSTD_decompressDCtx(dctx.get(), out.data(), out.size(), packed.data(), n);
    if (ZSTD_isError(m) || m != in.size() || out != in) return fail("zstd", g, "a round trip changed the data");
  }
}

// ---- OpenSSL: SHA-256 through EVP, against digests computed on a plain thread before run().
constexpr int kDigestInputs = 16;
std::string digest_input(int i) { return std::string(static_cast<std::size_t>(1000 + 4099 * i), static_cast<char>('A' + i)); }

std::string sha256(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return {};
  for (std::size_t off = 0; off < data.size(); off += 1000)  // many calls, not one
    if (EVP_DigestUpdate(ctx.get(), data.data() + off, std::min<std::size_t>(1000, data.size() - off)) != 1) return {};
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) return {};
  return std::string(reinterpret_cast<char*>(md), len);
}

std::vector<std::string> expected_digests;

void digests(int g) {
  for (int round = 0; round < kRounds; ++round) {
    int i = (g + round) % kDigestInputs;
    if (sha256(digest_input(i)) != expected_digests[static_cast<std::size_t>(i)])
      return fail("sha256", g, "a digest differs from the one computed outside the runtime");
    if (unsigned long e = ERR_get_error())
      return fail("sha256", g, "OpenSSL's error queue holds an error: " + std::to_string(e));
  }
}

#if NUGO_HAVE_LEVELDB
// ---- LevelDB: one store shared by every goroutine; each writes, overwrites and deletes keys
// of its own, reading its writes back; the final contents are checked against the known state.
leveldb::DB* store = nullptr;

std::string ldb_key(int g, int i) { return "g" + std::to_string(g) + "/k" + std::to_string(i); }
std::string ldb_value(int g, int i, int round) { return std::to_string(g * 1000003 + i * 31 + round); }
constexpr int kLevelKeys = 50;

void level(int g) {
  for (int round = 0; round < kRounds / 4; ++round) {
    leveldb::WriteBatch batch;
    for (int i = 0; i < kLevelKeys; ++i) batch.Put(ldb_key(g, i), ldb_value(g, i, round));
    batch.Delete(ldb_key(g, round % kLevelKeys));
    leveldb::Status st = store->Write(leveldb::WriteOptions(), &batch);
    if (!st.ok()) return fail("leveldb", g, st.ToString());
    std::string v;
    int i = (round + 1) % kLevelKeys;
    st = store->Get(leveldb::ReadOptions(), ldb_key(g, i), &v);
    if (!st.ok() || v != ldb_value(g, i, round)) return fail("leveldb", g, "a key read back differs from its write");
  }
}

// What the store must hold after every goroutine's last round.
bool level_final_state(int goroutines) {
  std::map<std::string, std::string> want;
  const int last = kRounds / 4 - 1;
  for (int g = 0; g < goroutines; ++g)
    for (int i = 0; i < kLevelKeys; ++i)
      if (i != last % kLevelKeys) want[ldb_key(g, i)] = ldb_value(g, i, last);
  std::map<std::string, std::string> have;
  std::unique_ptr<leveldb::Iterator> it(store->NewIterator(leveldb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) have[it->key().ToString()] = it->value().ToString();
  return it->status().ok() && have == want;
}
#endif

struct Workload {
  const char* name;
  void (*run)(int);
};

const Workload kWorkloads[] = {
    {"malloc", malloc_churn}, {"string", strings}, {"sqlite", sqlite}, {"zstd", zstd}, {"sha256", digests},
#if NUGO_HAVE_LEVELDB
    {"leveldb", level},
#endif
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<const Workload*> chosen;
  for (int i = 1; i < argc; ++i) {
    const Workload* w = nullptr;
    for (const Workload& k : kWorkloads)
      if (std::strcmp(k.name, argv[i]) == 0) w = &k;
    if (!w) {
      std::fprintf(stderr, "nugo_libraries: unknown workload '%s' (this build has:", argv[i]);
      for (const Workload& k : kWorkloads) std::fprintf(stderr, " %s", k.name);
      std::fprintf(stderr, ")\n");
      return 2;
    }
    chosen.push_back(w);
  }
  if (chosen.empty())
    for (const Workload& k : kWorkloads) chosen.push_back(&k);

  // The reference digests, outside the runtime.
  std::thread([] {
    for (int i = 0; i < kDigestInputs; ++i) expected_digests.push_back(sha256(digest_input(i)));
  }).join();

  nugo::Config cfg = nugo::Config::from_env_or_exit();
  const int procs = cfg.procs > 0 ? cfg.procs : 2;
  cfg.procs = procs;
  const int goroutines = 8 * procs;
#if NUGO_HAVE_LEVELDB
  char dir[] = "/tmp/nugo-leveldb-XXXXXX";
  if (!mkdtemp(dir)) {
    std::perror("nugo_libraries: mkdtemp");
    return 2;
  }
  leveldb::Options options;
  options.create_if_missing = true;
  options.write_buffer_size = 64 * 1024;  // small: compactions run while goroutines write
  if (leveldb::Status st = leveldb::DB::Open(options, dir, &store); !st.ok()) {
    std::fprintf(stderr, "nugo_libraries: leveldb: %s\n", st.ToString().c_str());
    return 2;
  }
#endif
  const bool vouched = !cfg.preemptible_libraries.empty();  // the planted fault (libraries_fault.sh)
  int code = nugo::run(
      [&] {
        // The rule itself: the program's code is preemptible, the C++ runtime (shared, or
        // inside this executable with -static-libstdc++) and the allocator are not.
        auto at = [](auto* f) { return nugo::preemptible_code(reinterpret_cast<const void*>(f)); };
        if (!at(&malloc_churn)) fail("rule", 0, "the program's own code is not preemptible");
        if (at(&abi::__cxa_demangle)) fail("rule", 0, "the C++ runtime's code is preemptible");
        if (!vouched && (at(&malloc) || at(&free))) fail("rule", 0, "the allocator's code is preemptible");
        nugo::WaitGroup wg;
        for (const Workload* w : chosen) {
          wg.add(goroutines);
          for (int g = 0; g < goroutines; ++g)
            nugo::go([&wg, w, g] {
              w->run(g);
              wg.done();
            });
        }
        wg.wait();
      },
      cfg);
  bool level_ok = true;
#if NUGO_HAVE_LEVELDB
  bool level_chosen = false;
  for (const Workload* w : chosen) level_chosen = level_chosen || std::strcmp(w->name, "leveldb") == 0;
  if (level_chosen && !level_final_state(goroutines)) {
    level_ok = false;
    std::fprintf(stderr, "FAIL leveldb: the store's final contents differ from the known state\n");
  }
  delete store;
  leveldb::DestroyDB(dir, leveldb::Options());
  rmdir(dir);
#endif
  std::printf("nugo_libraries: %d Ps, %d goroutines per workload:", procs, goroutines);
  for (const Workload* w : chosen) std::printf(" %s", w->name);
  std::printf("; %d failures\n", failures.load() + (level_ok ? 0 : 1));
  return code != 0 ? code : (failures.load() == 0 && level_ok ? 0 : 1);
}
