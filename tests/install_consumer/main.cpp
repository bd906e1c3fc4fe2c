#include <atomic>
#include <cstdio>
#include <nugo/nugo.hpp>

int main() {
  return nugo::run([] {
    std::atomic<int> sum{0};
    nugo::WaitGroup wg;
    wg.add(100);
    for (int i = 1; i <= 100; ++i)
      nugo::go([&, i] {
        sum += i;
        wg.done();
      });
    wg.wait();
    std::printf("sum=%d\n", sum.load());
    return sum.load() == 5050 ? 0 : 1;
  });
}
