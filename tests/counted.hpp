// Goroutines joined on a WaitGroup after everything they captured is gone (hostile.cpp,
// program.cpp).
//
// counted(wg, f) wraps f so that wg.done() runs in the closure's destructor, after
// everything f captured has been destroyed. So once wg.wait() returns, no goroutine still
// owns anything: run() abandons goroutines wherever they are when main returns, and a channel
// a goroutine had not let go of yet would be reported as a leak by LeakSanitizer. The closure
// must be stored inside the G (a heap-allocated one is freed after its destructor has run),
// which the static_assert checks.
#pragma once

#include <nugo/nugo.hpp>
#include <type_traits>
#include <utility>

namespace testing_counted {

class DoneOnDestroy {
 public:
  explicit DoneOnDestroy(nugo::WaitGroup* wg) : wg_(wg) { wg_->add(1); }
  DoneOnDestroy(DoneOnDestroy&& o) noexcept : wg_(std::exchange(o.wg_, nullptr)) {}
  ~DoneOnDestroy() {
    if (wg_) wg_->done();
  }

 private:
  nugo::WaitGroup* wg_;
};

template <class F>
struct Counted {
  DoneOnDestroy done;  // declared first, destroyed last
  F f;
  void operator()() { f(); }
};

template <class F>
Counted<F> counted(nugo::WaitGroup& wg, F f) {
  static_assert(sizeof(Counted<F>) <= nugo::detail::Closure::kInline &&
                    std::is_nothrow_move_constructible_v<F>,
                "must be stored inside the G");
  return Counted<F>{DoneOnDestroy(&wg), std::move(f)};
}

}  // namespace testing_counted
