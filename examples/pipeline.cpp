// A pipeline: count the words of many files with three stages connected by channels.
//
//   list files  ->  paths  ->  4 readers (bufio over each file)  ->  lines
//               ->  4 counters (a map each)  ->  partial counts  ->  merge
//
// Each stage closes its output when its input is drained, so the end of the input flows
// down the pipeline as closed channels (Go's "pipelines and cancellation" pattern). The
// program writes its own input (200 files in a temporary directory), knows how many times
// each word must appear, and checks the merged counts against that: exit status 0 and
// "pipeline: ok" only if every count is right.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nugo/nugo.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using Counts = std::map<std::string, long>;

namespace {

const std::vector<std::string> kWords = {"goroutine", "channel", "select", "mutex", "numa"};
constexpr int kFiles = 200;
constexpr int kLinesPerFile = 50;

// Writes the input and returns the counts the pipeline must find.
Counts write_input(const fs::path& dir) {
  Counts expected;
  for (int f = 0; f < kFiles; ++f) {
    std::ofstream out(dir / ("part-" + std::to_string(f) + ".txt"));
    for (int l = 0; l < kLinesPerFile; ++l) {
      for (int w = 0; w <= (f + l) % 4; ++w) {
        const std::string& word = kWords[(f * 7 + l * 3 + w) % kWords.size()];
        out << (w ? " " : "") << word;
        ++expected[word];
      }
      out << (l % 5 == 0 ? "\r\n" : "\n");  // some lines end the Windows way
    }
  }
  return expected;
}

// Stage 2: reads each file line by line. Opening and reading a file may block in the kernel;
// nugo::syscall and bufio (through nugo::sys::read) let this goroutine's P run others then.
void read_files(const nugo::Chan<std::string>& paths, const nugo::Chan<std::string>& lines) {
  for (const std::string& path : paths) {
    int fd = nugo::syscall([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
    if (fd < 0) {
      std::perror(path.c_str());
      std::exit(1);
    }
    nugo::bufio::Reader in(fd);
    for (auto line = in.read_line(); line; line = in.read_line()) lines.send(std::move(*line));
    ::close(fd);
  }
}

// Stage 3: counts the words of the lines it receives, then hands its counts on.
void count_words(const nugo::Chan<std::string>& lines, const nugo::Chan<Counts>& partials) {
  Counts counts;
  for (const std::string& line : lines) {
    std::istringstream words(line);
    for (std::string w; words >> w;) ++counts[w];
  }
  partials.send(std::move(counts));
}

// Starts n goroutines running stage(args...), and one more that closes `out` after them.
template <class Out, class F>
void fan_out(int n, const nugo::Chan<Out>& out, F stage) {
  auto wg = std::make_shared<nugo::WaitGroup>();
  wg->add(n);
  for (int i = 0; i < n; ++i)
    nugo::go([=] {
      stage();
      wg->done();
    });
  nugo::go([=] {
    wg->wait();
    out.close();
  });
}

}  // namespace

int main() {
  return nugo::run([] {
    fs::path dir = fs::temp_directory_path() / ("nugo-pipeline-" + std::to_string(getpid()));
    // Writing the input blocks this thread in the kernel: as a system call, the P goes on.
    Counts expected = nugo::blocking_syscall([&] {
      fs::create_directories(dir);
      return write_input(dir);
    });

    nugo::Chan<std::string> paths(16), lines(256);
    nugo::Chan<Counts> partials;
    nugo::go([=] {  // stage 1
      for (const auto& entry : fs::directory_iterator(dir)) paths.send(entry.path().string());
      paths.close();
    });
    fan_out(4, lines, [=] { read_files(paths, lines); });
    fan_out(4, partials, [=] { count_words(lines, partials); });

    Counts total;
    for (const Counts& part : partials)
      for (const auto& [word, n] : part) total[word] += n;
    nugo::syscall([&] { fs::remove_all(dir); });

    long words = 0;
    for (const auto& [word, n] : total) {
      words += n;
      std::printf("%-10s %ld\n", word.c_str(), n);
    }
    if (total != expected) {
      std::puts("pipeline: FAILED: the counts differ from the input's");
      return 1;
    }
    std::printf("pipeline: ok, %ld words in %d files\n", words, kFiles);
    return 0;
  });
}
