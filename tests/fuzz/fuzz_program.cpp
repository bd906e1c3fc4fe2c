// libFuzzer target: the fuzzer's bytes are a random program (tests/program.hpp), run on a
// runtime with one P. Each byte (or two, for wide choices) picks the next operation or its
// argument, the first byte of a child goroutine's share says how many bytes it gets, and a
// program ends when its bytes do. A program that breaks an invariant aborts with the broken
// invariant named, so libFuzzer saves the input; a hang is libFuzzer's -timeout.
//
// Built by scripts/dev/fuzz.sh (clang, -fsanitize=fuzzer plus ASan and UBSan), which also runs it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "../program.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  nugo::Config cfg;
  cfg.procs = 1;
  cfg.topology = "synthetic:pack:1 core:1 pu:1";  // one P whatever the machine
  program::Outcome out = program::run_bytes(data, size, cfg);
  if (!out.ok) {
    std::fprintf(stderr, "fuzz_program: the program broke an invariant: %s (%d goroutines)\n",
                 out.failure.c_str(), out.goroutines);
    std::abort();
  }
  return 0;
}
