// nugo::net and nugo::io over the network poller (netpoll.hpp); Go's internal/poll.FD and
// net's fd_unix.go, sock_posix.go and tcpsock_posix.go in one place.
//
// Every I/O call follows Go's pattern: try the system call on the non-blocking descriptor;
// on EAGAIN park in poll_wait until the poller reports readiness (or the deadline passes,
// or the socket is closed), then try again. The descriptor is registered edge-triggered
// once, when the socket is made.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "futex.hpp"
#include "../sched/link.hpp"
#include "nugo/io.hpp"
#include "nugo/net.hpp"
#include "nugo/sync.hpp"
#include "errno.hpp"
#include "fd_loop.hpp"

namespace nugo {
namespace io {
namespace {

class Category : public std::error_category {
 public:
  const char* name() const noexcept override { return "nugo.io"; }
  std::string message(int e) const override {
    switch (static_cast<Errc>(e)) {
      case Errc::eof: return "end of stream";
      case Errc::closed: return "use of closed descriptor";
      case Errc::timeout: return "i/o timeout (deadline passed)";
      case Errc::unexpected_eof: return "unexpected end of stream";
      case Errc::bad_address: return "not a numeric IP address";
      case Errc::too_long: return "line too long (more than the reader's max_line)";
    }
    return "unknown nugo.io error";
  }
};

}  // namespace

const std::error_category& category() noexcept {
  static const Category c;
  return c;
}

}  // namespace io

namespace {

using detail::PollDesc;
using detail::PollResult;

std::error_code errno_code(int e) { return {e, std::system_category()}; }
// errno read through a call the compiler cannot hoist: after a wait the goroutine may be on
// another thread, whose errno is elsewhere (errno.hpp).
int last_errno() { return nugo::detail::thread_errno(); }
std::error_code last_error() { return errno_code(last_errno()); }

std::int64_t deadline_ns(io::Deadline d) {
  if (d == io::no_deadline) return 0;
  std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d.time_since_epoch()).count();
  return ns > 0 ? ns : -1;  // the clock's epoch: long past
}

std::error_code poll_error(PollResult r) {
  switch (r) {
    case PollResult::ready: return {};
    case PollResult::closing: return io::Errc::closed;
    case PollResult::timeout: return io::Errc::timeout;
    case PollResult::busy: return std::make_error_code(std::errc::device_or_resource_busy);
  }
  return {};
}

// A plain thread (not a goroutine) waits in poll(2), honouring pd's deadline for mode.
std::error_code wait_on_thread(int fd, int mode, std::int64_t deadline) {
  for (;;) {
    int ms = -1;
    if (deadline < 0) return io::Errc::timeout;
    if (deadline > 0) {
      std::int64_t left = deadline - detail::nanotime();
      if (left <= 0) return io::Errc::timeout;
      ms = static_cast<int>(std::min<std::int64_t>((left + 999'999) / 1'000'000, 1 << 30));
    }
    pollfd p{fd, static_cast<short>(mode == 'r' ? POLLIN : POLLOUT), 0};
    int n = ::poll(&p, 1, ms);
    if (n > 0) return {};
    if (n < 0 && last_errno() != EINTR) return last_error();
  }
}

}  // namespace

namespace net::detail {

// A socket and its poller registration (Go's poll.FD). One state word counts the calls in
// progress, each holding a reference, and carries three bits:
//   closed:     close() was called. Waiters are woken, new calls fail, and whoever drops the
//               last reference closes the descriptor, never under a call still using it
//               (its number could be reused meanwhile).
//   sysclosed:  that descriptor is closed (set after sysclose, by the one who did it).
//   owner_gone: the Socket was destroyed. The object is freed once it is gone and the
//               descriptor closed, by whoever completes that pair, so a goroutine woken by
//               the close can still unwind its call, and the close of the descriptor by the
//               last call's decref is never raced by the owner's free. (TSan found that race:
//               the owner saw no calls left and freed the object while that decref was still
//               in sysclose.)
// (Go's fdMutex, whose read and write locks are rmu and wmu here.)
class NetFD {
 public:
  NetFD(int fd, PollDesc* pd) : fd_(fd), pd_(pd) {}

  // The Socket's destructor.
  void release() {
    close();
    // Listed as an orphan until freed: if the runtime stops before the calls still counted
    // return, their goroutines are abandoned, and the runtime frees it (free_orphans).
    add_orphan(this);
    std::uint64_t s = state_.fetch_or(kOwnerGone, std::memory_order_acq_rel);
    if ((s & kCalls) == 0 && (s & kSysclosed)) {
      remove_orphan(this);
      delete this;
    } else if ((s & kCalls) == 0) {
      // The last call's decref is closing the descriptor; it frees the object after.
    } else if (nugo::detail::tearing_down) {
      // The runtime is freeing what its abandoned goroutines own: the calls still counted
      // belong to such goroutines (their closures own this socket) and will never return.
      remove_orphan(this);
      sysclose();
      delete this;
    }
  }

  // At runtime stop: sockets whose owner is gone and whose remaining calls were abandoned.
  static void free_orphans() {
    nugo::detail::NoPreempt np;
    orphans_lock.lock();
    std::vector<NetFD*> all(orphans().begin(), orphans().end());
    orphans().clear();
    orphans_lock.unlock();
    for (NetFD* fd : all) {
      if (!(fd->state_.load(std::memory_order_acquire) & kSysclosed)) fd->sysclose();
      delete fd;
    }
  }

  int fd() const { return fd_; }
  PollDesc* pd() const { return pd_; }
  bool closed() const { return state_.load(std::memory_order_acquire) & kClosed; }

  bool incref() {
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    do {
      if (s & kClosed) return false;
    } while (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire));
    return true;
  }
  void decref() {
    std::uint64_t s = state_.fetch_sub(1, std::memory_order_acq_rel) - 1;
    if ((s & kCalls) != 0) return;
    if (!(s & kClosed)) return;  // the owner (release) closes, and frees, later
    // After close(), the count reaches 0 once: this is the last call. Close the descriptor,
    // then say so; if the owner was gone by then, it left the object to us.
    sysclose();
    s = state_.fetch_or(kSysclosed, std::memory_order_acq_rel);
    if (s & kOwnerGone) {
      remove_orphan(this);
      delete this;
    }
  }
  // False if already closed.
  bool close() {
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    do {  // closed, holding a reference of our own until the waiters are woken
      if (s & kClosed) return false;
    } while (!state_.compare_exchange_weak(s, (s | kClosed) + 1, std::memory_order_acq_rel));
    nugo::detail::poll_unblock(pd_);
    decref();
    return true;
  }

  // Go's I/O loop: fails at once if the socket is closing or the deadline for mode ('r' or
  // 'w') has passed; else runs op (a system call: >= 0, or -1 and errno) until it succeeds or
  // fails with more than EINTR, waiting for mode after each EAGAIN. The caller holds a
  // reference and the direction's lock.
  template <class Op>
  IoResult io(int mode, Op op) {
    if (std::error_code e = poll_error(nugo::detail::poll_prepare(pd_, mode))) return {0, e};
    return nugo::detail::fd_loop(op, [&] { return wait(mode); });
  }

  // Waits for mode ('r' or 'w'); an error (closed, timeout) ends the call.
  std::error_code wait(int mode) {
    if (nugo::detail::getg()) return poll_error(nugo::detail::poll_wait(pd_, mode));
    if (closed()) return io::Errc::closed;
    return wait_on_thread(fd_, mode, nugo::detail::poll_deadline(pd_, mode));
  }

  Mutex rmu, wmu;  // one reader at a time, one writer at a time

 private:
  void sysclose() {
    nugo::detail::poll_close(pd_);
    ::close(fd_);
  }
  static std::unordered_set<NetFD*>& orphans() {
    static auto* set = new std::unordered_set<NetFD*>;  // outlives every runtime instance
    return *set;
  }
  static void add_orphan(NetFD* fd) {
    nugo::detail::NoPreempt np;
    orphans_lock.lock();
    orphans().insert(fd);
    orphans_lock.unlock();
  }
  static void remove_orphan(NetFD* fd) {
    nugo::detail::NoPreempt np;
    orphans_lock.lock();
    orphans().erase(fd);
    orphans_lock.unlock();
  }
  static inline nugo::detail::Lock orphans_lock;
  static constexpr std::uint64_t kClosed = 1ull << 63, kOwnerGone = 1ull << 62,
                                 kSysclosed = 1ull << 61;
  static constexpr std::uint64_t kCalls = kSysclosed - 1;
  std::atomic<std::uint64_t> state_{0};
  int fd_;
  PollDesc* pd_;
};

namespace {

// A reference for the duration of one call; false if the socket is closed.
class Ref {
 public:
  explicit Ref(NetFD* fd) : fd_(fd && fd->incref() ? fd : nullptr) {}
  ~Ref() {
    if (fd_) fd_->decref();
  }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  explicit operator bool() const { return fd_ != nullptr; }

 private:
  NetFD* fd_;
};

// Registers a fresh non-blocking descriptor with the poller; closes it on failure.
Result<NetFD*> newfd(int fd) {
  int err = 0;
  PollDesc* pd = nugo::detail::poll_open(fd, &err);
  if (!pd) {
    ::close(fd);
    return errno_code(err);
  }
  return new NetFD(fd, pd);
}

Result<int> new_socket(int family, int type) {
  int fd = ::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return last_error();
  return fd;
}

}  // namespace
}  // namespace net::detail

namespace net {

using detail::NetFD;
using detail::Ref;

// ---- Endpoint ----

Result<Endpoint> Endpoint::resolve(std::string_view address, std::uint16_t port) {
  Endpoint e;
  std::string a(address);
  if (a.size() >= 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
  if (a == "localhost") a = "127.0.0.1";
  if (a.empty()) a = "0.0.0.0";
  sockaddr_in v4{};
  sockaddr_in6 v6{};
  if (inet_pton(AF_INET, a.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    std::memcpy(&e.storage_, &v4, sizeof v4);
    e.len_ = sizeof v4;
  } else if (inet_pton(AF_INET6, a.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(port);
    std::memcpy(&e.storage_, &v6, sizeof v6);
    e.len_ = sizeof v6;
  } else {
    return io::Errc::bad_address;
  }
  return e;
}

std::string Endpoint::address() const {
  char buf[INET6_ADDRSTRLEN] = "";
  if (storage_.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf, sizeof buf);
  else if (storage_.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, buf, sizeof buf);
  return buf;
}

std::uint16_t Endpoint::port() const {
  if (storage_.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (storage_.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

std::string Endpoint::to_string() const {
  std::string a = address();
  if (storage_.ss_family == AF_INET6) a = "[" + a + "]";
  return a + ":" + std::to_string(port());
}

// ---- Socket ----

Socket::Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, nullptr)) {}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_) fd_->release();
    fd_ = std::exchange(other.fd_, nullptr);
  }
  return *this;
}

Socket::~Socket() {
  if (fd_) fd_->release();
}

std::error_code Socket::close() {
  if (!fd_ || !fd_->close()) return io::Errc::closed;
  return {};
}

bool Socket::is_open() const { return fd_ && !fd_->closed(); }
int Socket::fd() const { return is_open() ? fd_->fd() : -1; }

Endpoint Socket::local_endpoint() const {
  Endpoint e;
  Ref ref(fd_);
  if (!ref) return e;
  socklen_t len = sizeof(sockaddr_storage);
  if (::getsockname(fd_->fd(), e.mutable_data(), &len) == 0) e.set_size(len);
  return e;
}

void Socket::set_deadline(Deadline d) {
  Ref ref(fd_);
  if (ref) nugo::detail::poll_set_deadline(fd_->pd(), deadline_ns(d), 'r' + 'w');
}
void Socket::set_read_deadline(Deadline d) {
  Ref ref(fd_);
  if (ref) nugo::detail::poll_set_deadline(fd_->pd(), deadline_ns(d), 'r');
}
void Socket::set_write_deadline(Deadline d) {
  Ref ref(fd_);
  if (ref) nugo::detail::poll_set_deadline(fd_->pd(), deadline_ns(d), 'w');
}

// ---- Conn ----

IoResult Conn::read(void* buf, std::size_t len) {
  Ref ref(fd_);
  if (!ref) return {0, io::Errc::closed};
  std::lock_guard lock(fd_->rmu);
  if (len == 0) return {};
  IoResult r = fd_->io('r', [&] { return ::read(fd_->fd(), buf, len); });
  if (!r.err && r.n == 0) r.err = io::Errc::eof;
  return r;
}

IoResult Conn::read_full(void* buf, std::size_t len) {
  std::size_t done = 0;
  while (done < len) {
    IoResult r = read(static_cast<char*>(buf) + done, len - done);
    done += r.n;
    if (r.err) {
      if (r.err == io::Errc::eof && done > 0) r.err = io::Errc::unexpected_eof;
      return {done, r.err};
    }
  }
  return {done, {}};
}

namespace {

// One write(2) (send with MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE), waiting
// while the socket buffer is full. The caller holds the write lock.
IoResult write_some(NetFD* fd, const void* buf, std::size_t len) {
  return fd->io('w', [&] { return ::send(fd->fd(), buf, len, MSG_NOSIGNAL); });
}

}  // namespace

IoResult Conn::write(const void* buf, std::size_t len) {
  Ref ref(fd_);
  if (!ref) return {0, io::Errc::closed};
  std::lock_guard lock(fd_->wmu);
  if (len == 0) return {};
  return write_some(fd_, buf, len);
}

IoResult Conn::write_all(const void* buf, std::size_t len) {
  Ref ref(fd_);
  if (!ref) return {0, io::Errc::closed};
  std::lock_guard lock(fd_->wmu);  // held throughout: concurrent write_alls never interleave
  std::size_t done = 0;
  while (done < len) {
    IoResult r = write_some(fd_, static_cast<const char*>(buf) + done, len - done);
    done += r.n;
    if (r.err) return {done, r.err};
  }
  return {done, {}};
}

std::error_code Conn::shutdown_write() {
  Ref ref(fd_);
  if (!ref) return io::Errc::closed;
  if (::shutdown(fd_->fd(), SHUT_WR) != 0) return last_error();
  return {};
}

Endpoint Conn::remote_endpoint() const {
  Endpoint e;
  Ref ref(fd_);
  if (!ref) return e;
  socklen_t len = sizeof(sockaddr_storage);
  if (::getpeername(fd_->fd(), e.mutable_data(), &len) == 0) e.set_size(len);
  return e;
}

// ---- Listener, listen, dial ----

Result<Conn> Listener::accept() {
  Ref ref(fd_);
  if (!ref) return io::Errc::closed;
  std::lock_guard lock(fd_->rmu);
  if (std::error_code e = poll_error(nugo::detail::poll_prepare(fd_->pd(), 'r'))) return e;
  for (;;) {
    int c = ::accept4(fd_->fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c >= 0) {
      int one = 1;
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // Go's default
      Result<NetFD*> fd = detail::newfd(c);
      if (!fd) return fd.error();
      return Conn(*fd);
    }
    // A connection that died in the queue, or a signal: take the next one.
    int e = last_errno();
    if (e == EINTR || e == ECONNABORTED) continue;
    if (e != EAGAIN) return errno_code(e);
    if (std::error_code e = fd_->wait('r')) return e;
  }
}

Result<Listener> listen(std::string_view address, std::uint16_t port, int backlog) {
  nugo::detail::NoPreempt np;
  Result<Endpoint> ep = Endpoint::resolve(address, port);
  if (!ep) return ep.error();
  Result<int> s = detail::new_socket(ep->family(), SOCK_STREAM);
  if (!s) return s.error();
  int fd = *s;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, ep->data(), ep->size()) != 0 || ::listen(fd, backlog) != 0) {
    std::error_code e = last_error();
    ::close(fd);
    return e;
  }
  Result<NetFD*> nfd = detail::newfd(fd);
  if (!nfd) return nfd.error();
  return Listener(*nfd);
}

Result<Conn> dial(std::string_view address, std::uint16_t port, std::chrono::nanoseconds timeout) {
  Result<Endpoint> ep = Endpoint::resolve(address, port);
  if (!ep) return ep.error();
  Result<int> s = detail::new_socket(ep->family(), SOCK_STREAM);
  if (!s) return s.error();
  int one = 1;
  ::setsockopt(*s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  Result<NetFD*> nfd = detail::newfd(*s);
  if (!nfd) return nfd.error();
  Conn conn(*nfd);
  NetFD* fd = *nfd;
  int rc;
  do rc = ::connect(fd->fd(), ep->data(), ep->size());
  while (rc != 0 && last_errno() == EINTR);
  if (rc == 0) return conn;
  if (int e = last_errno(); e != EINPROGRESS) return errno_code(e);  // conn's destructor closes the socket
  // Connecting: writable once it is done, one way or the other (Go's connect in fd_unix.go).
  if (timeout.count() > 0) conn.set_write_deadline(io::Clock::now() + timeout);
  for (;;) {
    if (std::error_code e = fd->wait('w')) return e;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd->fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) return last_error();
    if (err == 0) break;
    if (err != EINPROGRESS && err != EALREADY && err != EINTR) return errno_code(err);
  }
  if (timeout.count() > 0) conn.set_write_deadline(no_deadline);
  return conn;
}

// ---- UDP ----

IoResult UdpConn::read_from(void* buf, std::size_t len, Endpoint* from) {
  Ref ref(fd_);
  if (!ref) return {0, io::Errc::closed};
  std::lock_guard lock(fd_->rmu);
  Endpoint sender;
  IoResult r = fd_->io('r', [&] {
    socklen_t salen = sizeof(sockaddr_storage);
    ssize_t n = ::recvfrom(fd_->fd(), buf, len, 0, sender.mutable_data(), &salen);
    sender.set_size(salen);
    return n;
  });
  if (!r.err && from) *from = sender;
  return r;
}

IoResult UdpConn::write_to(const void* buf, std::size_t len, const Endpoint& to) {
  Ref ref(fd_);
  if (!ref) return {0, io::Errc::closed};
  std::lock_guard lock(fd_->wmu);
  return fd_->io('w', [&] { return ::sendto(fd_->fd(), buf, len, MSG_NOSIGNAL, to.data(), to.size()); });
}

Result<UdpConn> listen_udp(std::string_view address, std::uint16_t port) {
  Result<Endpoint> ep = Endpoint::resolve(address, port);
  if (!ep) return ep.error();
  Result<int> s = detail::new_socket(ep->family(), SOCK_DGRAM);
  if (!s) return s.error();
  if (::bind(*s, ep->data(), ep->size()) != 0) {
    std::error_code e = last_error();
    ::close(*s);
    return e;
  }
  Result<NetFD*> nfd = detail::newfd(*s);
  if (!nfd) return nfd.error();
  return UdpConn(*nfd);
}

}  // namespace net

namespace {
// After a runtime instance has stopped: close and free the sockets whose owners are gone but
// whose last calls belonged to goroutines the instance abandoned.
[[maybe_unused]] const bool free_orphans_at_stop =
    (detail::add_stop_hook(detail::StopPhase::freed, net::detail::NetFD::free_orphans), true);
}  // namespace

// ---- io::wait_readable, wait_writable, evict: descriptors the user owns ----

namespace io {
namespace {

// The user's descriptors the poller knows of, by number. A UserDesc lives while its number
// is in the table or a wait on it is in progress: evict() takes the number out and unblocks
// the waits, and whichever comes last, evict or the last wait's release, closes the PollDesc.
// When an instance stops, the waits still counted belonged to goroutines it abandoned, which
// never release them: forget_abandoned_waits drops those references and closes what was
// evicted meanwhile.
struct UserDesc {
  PollDesc* pd;
  int refs = 0;          // waits in progress (under table_lock)
  bool evicted = false;  // out of the table (under table_lock)
};
nugo::detail::Lock table_lock;
std::unordered_map<int, UserDesc*>& table() {
  static auto* t = new std::unordered_map<int, UserDesc*>;  // outlives every runtime instance
  return *t;
}
// Evicted, with waits still in progress (under table_lock).
std::unordered_set<UserDesc*>& evicted_in_use() {
  static auto* s = new std::unordered_set<UserDesc*>;
  return *s;
}

void close_user(UserDesc* u) {
  nugo::detail::poll_close(u->pd);
  delete u;
}

void release_user(UserDesc* u) {
  nugo::detail::NoPreempt np;
  table_lock.lock();
  bool last = --u->refs == 0 && u->evicted;
  if (last) evicted_in_use().erase(u);
  table_lock.unlock();
  if (last) close_user(u);
}

// The stop hook (StopPhase::freed): every goroutine is gone, and with them every wait.
void forget_abandoned_waits() {
  nugo::detail::NoPreempt np;
  table_lock.lock();
  for (auto& [fd, u] : table()) u->refs = 0;
  std::vector<UserDesc*> gone(evicted_in_use().begin(), evicted_in_use().end());
  evicted_in_use().clear();
  table_lock.unlock();
  for (UserDesc* u : gone) close_user(u);
}

[[maybe_unused]] const bool forget_abandoned_waits_at_stop =
    (nugo::detail::add_stop_hook(nugo::detail::StopPhase::freed, forget_abandoned_waits), true);

std::error_code wait_user(int fd, int mode, Deadline deadline) {
  if (fd < 0) return std::make_error_code(std::errc::bad_file_descriptor);
  std::int64_t when = deadline_ns(deadline);
  if (!nugo::detail::getg()) return wait_on_thread(fd, mode, when);
  nugo::detail::NoPreempt np;
  table_lock.lock();
  UserDesc*& slot = table()[fd];
  if (!slot) slot = new UserDesc{nugo::detail::poll_open_user(fd)};
  UserDesc* u = slot;
  ++u->refs;
  table_lock.unlock();
  PollDesc* pd = u->pd;
  if (int err = nugo::detail::poll_arm_user(pd, mode)) {
    release_user(u);
    return err == ECANCELED ? std::error_code(Errc::closed) : errno_code(err);
  }
  if (when != 0) nugo::detail::poll_set_deadline(pd, when, mode);
  PollResult r = nugo::detail::poll_wait(pd, mode);
  if (when != 0) nugo::detail::poll_set_deadline(pd, 0, mode);
  nugo::detail::poll_disarm_user(pd, mode);
  release_user(u);
  return poll_error(r);
}

}  // namespace

std::error_code wait_readable(int fd, Deadline deadline) { return wait_user(fd, 'r', deadline); }
std::error_code wait_writable(int fd, Deadline deadline) { return wait_user(fd, 'w', deadline); }

void evict(int fd) {
  nugo::detail::NoPreempt np;
  table_lock.lock();
  auto it = table().find(fd);
  if (it == table().end()) {
    table_lock.unlock();
    return;
  }
  UserDesc* u = it->second;
  table().erase(it);
  nugo::detail::poll_unblock(u->pd);  // also deregisters: the number may be reused next
  u->evicted = true;
  bool unused = u->refs == 0;
  if (!unused) evicted_in_use().insert(u);
  table_lock.unlock();
  if (unused) close_user(u);
}

}  // namespace io
}  // namespace nugo
