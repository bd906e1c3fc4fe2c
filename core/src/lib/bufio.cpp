// nugo::bufio (nugo/bufio.hpp): Go's bufio.Reader and bufio.Writer over a Conn or a
// descriptor.
//
// The Reader keeps what it has read in one buffer, [begin_, end_), and consumes bytes only
// in the call that returns them: a line cut short by a timeout stays buffered, and the next
// call finds it whole. A line longer than the buffer grows it, up to max_line, which bounds
// what a peer that never sends a newline can make us hold.
//
// The Writer is Go's Write and Flush (bufio.go), step for step, including the sticky error.
#include "nugo/bufio.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "nugo/syscall.hpp"
#include "fd_loop.hpp"

namespace nugo::bufio {
namespace {

std::size_t or_default(std::size_t size) { return size == 0 ? default_size : size; }

// At least Go's minimum for a read buffer: a smaller one would cost a read every few bytes.
std::size_t read_size(std::size_t size) { return std::max<std::size_t>(or_default(size), 16); }

bool passed(Deadline d) { return d != no_deadline && io::Clock::now() >= d; }

// The I/O loop (fd_loop.hpp) with a deadline: one already passed fails at once, as Go's
// pollDesc.prepare does, and so does one that passes while the call waits.
template <class Op, class Wait>
IoResult fd_loop(Deadline deadline, Op op, Wait wait) {
  if (passed(deadline)) return {0, io::Errc::timeout};
  return nugo::detail::fd_loop(op, [&]() -> std::error_code {
    if (std::error_code w = wait()) return w;
    return passed(deadline) ? make_error_code(io::Errc::timeout) : std::error_code{};
  });
}

// A line without "\n" or "\r\n"; the last line of a stream may have neither, or a lone
// "\r", which goes too (Go's dropCR).
std::string strip_line_end(std::string line) {
  if (!line.empty() && line.back() == '\n') line.pop_back();
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

// ---- Stream ----

namespace detail {

// How to treat the descriptor is decided once, here: a program that changes O_NONBLOCK
// afterwards should make a new Reader or Writer.
Stream::Stream(int fd) : fd_(fd) {
  int flags = ::fcntl(fd, F_GETFL);
  nonblocking_ = flags != -1 && (flags & O_NONBLOCK);
  struct stat st {};
  socket_ = ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

IoResult Stream::read(void* buf, std::size_t len) {
  if (conn_) return conn_->read(buf, len);
  IoResult r = fd_loop(read_deadline_, [&] { return sys_read(buf, len); },
                       [&] { return io::wait_readable(fd_, read_deadline_); });
  if (!r.err && r.n == 0) r.err = io::Errc::eof;
  return r;
}

IoResult Stream::write_all(const void* buf, std::size_t len) {
  if (conn_) return conn_->write_all(buf, len);
  const char* p = static_cast<const char*>(buf);
  std::size_t done = 0;
  while (done < len) {
    IoResult r = write_some(p + done, len - done);
    done += r.n;
    if (r.err) return {done, r.err};
    // write(2) never returns 0 for a pipe or a socket; should a device do it, stop rather
    // than spin (Go's io.ErrShortWrite).
    if (r.n == 0) return {done, std::make_error_code(std::errc::io_error)};
  }
  return {done, {}};
}

IoResult Stream::write_some(const void* buf, std::size_t len) {
  return fd_loop(write_deadline_, [&] { return sys_write(buf, len); },
                 [&] { return io::wait_writable(fd_, write_deadline_); });
}

// A non-blocking descriptor is called directly (the call cannot block); a blocking one as a
// system call, so that the P moves on while the thread waits in the kernel.
ssize_t Stream::sys_read(void* buf, std::size_t len) {
  return nonblocking_ ? ::read(fd_, buf, len) : sys::read(fd_, buf, len);
}

// As sys_read. A socket is sent to with MSG_NOSIGNAL: a closed peer is EPIPE, not SIGPIPE.
ssize_t Stream::sys_write(const void* buf, std::size_t len) {
  auto send = [&] { return ::send(fd_, buf, len, MSG_NOSIGNAL); };
  if (socket_) return nonblocking_ ? send() : nugo::syscall(send);
  return nonblocking_ ? ::write(fd_, buf, len) : sys::write(fd_, buf, len);
}

void Stream::set_read_deadline(Deadline d) {
  if (conn_)
    conn_->set_read_deadline(d);
  else
    read_deadline_ = d;
}

void Stream::set_write_deadline(Deadline d) {
  if (conn_)
    conn_->set_write_deadline(d);
  else
    write_deadline_ = d;
}

}  // namespace detail

// ---- Reader ----

Reader::Reader(net::Conn& conn, std::size_t size, std::size_t max_line)
    : stream_(conn), buf_(read_size(size)), max_line_(std::max<std::size_t>(max_line, 1)) {}

Reader::Reader(int fd, std::size_t size, std::size_t max_line)
    : stream_(fd), buf_(read_size(size)), max_line_(std::max<std::size_t>(max_line, 1)) {}

IoResult Reader::read(void* buf, std::size_t len) {
  if (len == 0) return {};
  if (buffered() == 0) {
    // A large read with nothing buffered goes straight into the caller's buffer (Go).
    if (len >= buf_.size()) return stream_.read(buf, len);
    if (IoResult got = fill(); got.err) return {0, got.err};
  }
  std::size_t n = std::min(len, buffered());
  std::memcpy(buf, data(), n);
  begin_ += n;
  return {n, {}};
}

Result<char> Reader::read_byte() {
  if (buffered() == 0) {
    if (IoResult got = fill(); got.err) return got.err;
  }
  return buf_[begin_++];
}

Result<std::string> Reader::read_until(char delim) {
  return scan(delim).transform([this](std::size_t n) { return take(n); });
}

Result<std::string> Reader::read_line() { return read_until('\n').transform(strip_line_end); }

// The length of the next token: up to and including delim, or, where the stream ends inside
// it, what is left. Reads more as needed and consumes nothing, so that an error leaves the
// partial token buffered for the next call.
Result<std::size_t> Reader::scan(char delim) {
  std::size_t searched = 0;
  for (;;) {
    std::size_t window = std::min(buffered(), max_line_);
    if (const void* hit = std::memchr(data() + searched, delim, window - searched))
      return static_cast<std::size_t>(static_cast<const char*>(hit) - data()) + 1;
    if (buffered() >= max_line_) return io::Errc::too_long;
    searched = window;
    IoResult got = fill();
    if (got.err == io::Errc::eof && buffered() > 0) return buffered();
    if (got.err) return got.err;
  }
}

// One read of the stream into the space after the buffered bytes, which move to the front
// first. A full buffer grows: scan calls this only with fewer than max_line bytes buffered,
// and read and read_byte only with none, so there is always room after growing.
IoResult Reader::fill() {
  if (begin_ > 0) {
    std::memmove(buf_.data(), data(), buffered());
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buf_.size()) buf_.resize(std::min(buf_.size() * 2, max_line_));
  IoResult got = stream_.read(buf_.data() + end_, buf_.size() - end_);
  end_ += got.n;
  return got;
}

std::string Reader::take(std::size_t n) {
  std::string token(data(), n);
  begin_ += n;
  return token;
}

// ---- Writer ----

Writer::Writer(net::Conn& conn, std::size_t size) : stream_(conn), buf_(or_default(size)) {}

Writer::Writer(int fd, std::size_t size) : stream_(fd), buf_(or_default(size)) {}

// Go's Write: while more is left than fits, either fill the buffer and flush it, or, with
// nothing buffered, write the rest straight from the caller's bytes; then buffer what fits.
IoResult Writer::write(const void* buf, std::size_t len) {
  const char* p = static_cast<const char*>(buf);
  std::size_t done = 0;
  while (len - done > available() && !err_) {
    if (used_ == 0) {
      IoResult r = stream_.write_all(p + done, len - done);
      done += r.n;
      err_ = r.err;
    } else {
      done += copy_in(p + done, len - done);
      (void)flush();  // sets err_ if it fails
    }
  }
  if (err_) return {done, err_};
  done += copy_in(p + done, len - done);
  return {done, {}};
}

// What went out leaves the buffer; what did not stays at its front, behind the sticky error.
std::error_code Writer::flush() {
  if (err_ || used_ == 0) return err_;
  IoResult r = stream_.write_all(buf_.data(), used_);
  std::memmove(buf_.data(), buf_.data() + r.n, used_ - r.n);
  used_ -= r.n;
  err_ = r.err;
  return err_;
}

std::size_t Writer::copy_in(const char* p, std::size_t len) {
  std::size_t n = std::min(len, available());
  if (n > 0) std::memcpy(buf_.data() + used_, p, n);  // p may be null when len is 0
  used_ += n;
  return n;
}

}  // namespace nugo::bufio
