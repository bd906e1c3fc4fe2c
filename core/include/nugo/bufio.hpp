// Buffered I/O (Go's bufio): a Reader that reads lines and delimited tokens, and a Writer
// that gathers small writes into few system calls, over a nugo::net::Conn or a descriptor
// the caller owns.
//
//   nugo::bufio::Reader in(conn);
//   nugo::bufio::Writer out(conn);
//   for (auto line = in.read_line(); line; line = in.read_line()) {
//     (void)out.write("echo: " + *line + "\n");
//     if (auto err = out.flush()) break;
//   }
//
// Over a Conn, the Conn's deadlines, locks and errors apply (set_deadline here sets the
// Conn's read or write deadline). Over a descriptor, a non-blocking one (O_NONBLOCK when the
// Reader or Writer is made) waits in the network poller on EAGAIN, holding no thread; a
// blocking one is read and written through nugo::sys::read / write (nugo/syscall.hpp), which
// let the P go while the thread waits in the kernel. A deadline (set_deadline) fails a call
// with io::Errc::timeout once passed; on a blocking descriptor it is checked before each
// system call but cannot end one already waiting in the kernel. A socket descriptor is
// written with MSG_NOSIGNAL; writing to a pipe whose reader is gone raises SIGPIPE, as
// write(2) does, unless the program ignores it.
//
// The Conn or descriptor must outlive the Reader or Writer, which never closes it. Neither
// is safe for concurrent use (Go's are not either): one goroutine at a time. Both move; a
// moved-from one may only be assigned to or destroyed.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "nugo/io.hpp"
#include "nugo/net.hpp"

namespace nugo::bufio {

using io::Deadline;
using io::IoResult;
using io::no_deadline;
using io::Result;

inline constexpr std::size_t default_size = 4096;
inline constexpr std::size_t default_max_line = 64 * 1024;

namespace detail {

// Where a Reader's bytes come from and a Writer's go: a Conn, or a descriptor.
class Stream {
 public:
  explicit Stream(net::Conn& conn) : conn_(&conn) {}
  explicit Stream(int fd);

  // At least one byte, or an error (io::Errc::eof at the end of the stream).
  IoResult read(void* buf, std::size_t len);
  // All of buf, across partial writes; n says how much went out if it fails.
  IoResult write_all(const void* buf, std::size_t len);
  void set_read_deadline(Deadline d);
  void set_write_deadline(Deadline d);

 private:
  IoResult write_some(const void* buf, std::size_t len);
  ssize_t sys_read(void* buf, std::size_t len);
  ssize_t sys_write(const void* buf, std::size_t len);

  net::Conn* conn_ = nullptr;
  int fd_ = -1;
  bool nonblocking_ = false;
  bool socket_ = false;
  Deadline read_deadline_ = no_deadline;
  Deadline write_deadline_ = no_deadline;
};

}  // namespace detail

// Reads ahead into a buffer of `size` bytes (0: default_size) and hands it out in lines,
// tokens, bytes or spans.
//
// End of stream: Go returns the last partial token together with io.EOF; a Result carries
// one or the other, so a token that the stream ends inside is returned alone (without its
// delimiter), and the next call returns io::Errc::eof.
//
// Lines are at most max_line bytes, counting the delimiter: a peer that never sends one
// cannot grow the buffer past that. A longer line fails read_line and read_until with
// io::Errc::too_long, again at every call, while its bytes stay buffered; read() still hands
// them out, for a caller that wants to skip the line or close the connection.
//
// Any other error (a timeout, a reset) also leaves the buffered bytes in place: after a
// timeout, set a later deadline and call again, and the line continues where it stopped.
class Reader {
 public:
  explicit Reader(net::Conn& conn, std::size_t size = default_size,
                  std::size_t max_line = default_max_line);
  explicit Reader(int fd, std::size_t size = default_size, std::size_t max_line = default_max_line);
  Reader(Reader&&) = default;
  Reader& operator=(Reader&&) = default;

  // Go's Read: what is buffered (up to len), else the result of one read of the stream
  // (straight into buf when len is at least the buffer's size). io::Errc::eof at the end.
  IoResult read(void* buf, std::size_t len);
  Result<char> read_byte();
  // Go's ReadString(delim): up to and including delim.
  Result<std::string> read_until(char delim);
  // A line without its "\n" or "\r\n" (Go's bufio.Scanner lines); the last line may lack
  // the newline.
  Result<std::string> read_line();

  std::size_t buffered() const { return end_ - begin_; }
  // For a descriptor: the deadline of the reads to come. For a Conn: its read deadline.
  void set_deadline(Deadline d) { stream_.set_read_deadline(d); }

 private:
  Result<std::size_t> scan(char delim);
  IoResult fill();
  std::string take(std::size_t n);
  const char* data() const { return buf_.data() + begin_; }

  detail::Stream stream_;
  std::vector<char> buf_;  // grows up to max_line for a long line
  std::size_t begin_ = 0;  // buffered bytes: [begin_, end_)
  std::size_t end_ = 0;
  std::size_t max_line_;
};

// Gathers writes in a buffer of `size` bytes (0: default_size) and writes it out when it is
// full or on flush(). A write larger than the free space fills the buffer and flushes it;
// what still does not fit goes straight to the stream from the caller's bytes, as in Go.
//
// Errors are sticky, as in Go: once a flush fails, the bytes it did not write stay buffered
// (buffered() counts them) and every later write and flush returns the same error without
// touching the stream. Go has no way back; clear_error() is ours, for a timeout: set a later
// deadline, clear_error(), flush() again, and the kept bytes go out first.
//
// The destructor does not flush: a flush can block and can fail, and a destructor could
// neither wait sensibly nor report the error. Call flush() before dropping a Writer; what is
// still buffered then is discarded.
class Writer {
 public:
  explicit Writer(net::Conn& conn, std::size_t size = default_size);
  explicit Writer(int fd, std::size_t size = default_size);
  Writer(Writer&&) = default;
  Writer& operator=(Writer&&) = default;

  // n is what the Writer took (buffered or written); err is the sticky error, if any.
  IoResult write(const void* buf, std::size_t len);
  IoResult write(std::string_view s) { return write(s.data(), s.size()); }
  // Writes out what is buffered.
  std::error_code flush();

  std::size_t buffered() const { return used_; }
  std::size_t available() const { return buf_.size() - used_; }
  std::error_code error() const { return err_; }
  void clear_error() { err_.clear(); }
  // For a descriptor: the deadline of the writes to come. For a Conn: its write deadline.
  void set_deadline(Deadline d) { stream_.set_write_deadline(d); }

 private:
  std::size_t copy_in(const char* p, std::size_t len);

  detail::Stream stream_;
  std::vector<char> buf_;
  std::size_t used_ = 0;  // buffered bytes: [0, used_)
  std::error_code err_;
};

}  // namespace nugo::bufio
