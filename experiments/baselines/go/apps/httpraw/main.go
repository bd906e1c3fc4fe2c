// The like-for-like Go twin of experiments/apps/http.cpp: the same minimal HTTP/1.1 parser
// over package net, in the same code shape (one goroutine per connection, a byte buffer of
// what has arrived, every complete request in it answered into one output buffer, one write,
// then one read of up to 8 KiB), so that a comparison measures the runtimes rather than
// net/http's extra work (the other twin, apps/http, is net/http).
//
//	GET /echo   200 "hello"
//	GET /sleep  blocks 1 s in nanosleep(2), a real system call holding the thread
//	otherwise   404
//
// Keep-alive (HTTP/1.1 by default, HTTP/1.0 with "Connection: keep-alive"), pipelining,
// request bodies by Content-Length (read and dropped); no chunked requests (501). The
// response headers are net/http's for the same handler: Date, Content-Length, Content-Type.
//
//	httpraw [--addr A] [--port P]
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

// dateCache: the Date header, formatted once per second per connection.
type dateCache struct {
	at  int64
	buf []byte
}

func (d *dateCache) get() []byte {
	now := time.Now()
	if s := now.Unix(); s != d.at {
		d.at = s
		d.buf = now.UTC().AppendFormat(d.buf[:0], "Mon, 02 Jan 2006 15:04:05 GMT")
	}
	return d.buf
}

func respond(out []byte, date *dateCache, status int, body string, keepAlive bool) []byte {
	switch status {
	case 200:
		out = append(out, "HTTP/1.1 200 OK\r\n"...)
	case 404:
		out = append(out, "HTTP/1.1 404 Not Found\r\n"...)
	case 400:
		out = append(out, "HTTP/1.1 400 Bad Request\r\n"...)
	default:
		out = append(out, "HTTP/1.1 501 Not Implemented\r\n"...)
	}
	out = append(out, "Date: "...)
	out = append(out, date.get()...)
	out = append(out, "\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\nContent-Type: text/plain; charset=utf-8\r\n"...)
	if !keepAlive {
		out = append(out, "Connection: close\r\n"...)
	}
	out = append(out, "\r\n"...)
	return append(out, body...)
}

// headerIs: whether line is the header name (any case), and its value without blanks.
func headerIs(line []byte, name string) ([]byte, bool) {
	if len(line) <= len(name) || line[len(name)] != ':' || !bytes.EqualFold(line[:len(name)], []byte(name)) {
		return nil, false
	}
	return bytes.Trim(line[len(name)+1:], " \t"), true
}

var crlf, crlfcrlf = []byte("\r\n"), []byte("\r\n\r\n")

func serve(conn net.Conn) {
	defer conn.Close()
	const maxHeader = 64 * 1024
	var in, out []byte
	var date dateCache
	buf := make([]byte, 8192)
	for {
		// Handle every complete request in the buffer, then send their responses together.
		closeAfter := false
		for !closeAfter {
			end := bytes.Index(in, crlfcrlf)
			if end < 0 {
				break
			}
			head := in[:end]
			eol := bytes.Index(head, crlf)
			if eol < 0 {
				eol = len(head)
			}
			request := head[:eol]
			sp1, sp2 := bytes.IndexByte(request, ' '), bytes.LastIndexByte(request, ' ')
			if sp1 < 0 || sp2 == sp1 {
				out = respond(out, &date, 400, "bad request line\n", false)
				closeAfter = true
				break
			}
			method, path := string(request[:sp1]), string(request[sp1+1:sp2])
			keepAlive := string(request[sp2+1:]) == "HTTP/1.1"
			body, chunked := 0, false
			for pos := eol; pos < len(head); {
				next := bytes.Index(head[pos+2:], crlf)
				var line []byte
				if next < 0 {
					line, next = head[pos+2:], len(head)
				} else {
					next += pos + 2
					line = head[pos+2 : next]
				}
				if v, ok := headerIs(line, "Connection"); ok {
					if bytes.EqualFold(v, []byte("close")) {
						keepAlive = false
					} else if bytes.EqualFold(v, []byte("keep-alive")) {
						keepAlive = true
					}
				} else if v, ok := headerIs(line, "Content-Length"); ok {
					if n, err := strconv.Atoi(string(v)); err == nil && n >= 0 {
						body = n
					}
				} else if _, ok := headerIs(line, "Transfer-Encoding"); ok {
					chunked = true
				}
				pos = next
			}
			if chunked {
				out = respond(out, &date, 501, "chunked requests are not supported\n", false)
				closeAfter = true
				break
			}
			if len(in) < end+4+body {
				break // the body is still on its way
			}
			switch {
			case method != "GET" && method != "HEAD" && method != "POST":
				out = respond(out, &date, 501, "method not implemented\n", keepAlive)
			case path == "/echo":
				out = respond(out, &date, 200, "hello", keepAlive)
			case path == "/sleep":
				ts := syscall.Timespec{Sec: 1}
				for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
				}
				out = respond(out, &date, 200, "slept", keepAlive)
			default:
				out = respond(out, &date, 404, "404 page not found\n", keepAlive)
			}
			in = in[:copy(in, in[end+4+body:])]
			closeAfter = !keepAlive
		}
		if len(out) > 0 {
			if _, err := conn.Write(out); err != nil {
				return
			}
			out = out[:0]
		}
		if closeAfter {
			return
		}
		if len(in) > maxHeader {
			conn.Write(respond(out, &date, 400, "request header too large\n", false))
			return
		}
		n, err := conn.Read(buf)
		if err != nil {
			return // EOF, reset, closed
		}
		in = append(in, buf[:n]...)
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1", "address")
	port := flag.Int("port", 8080, "port")
	flag.Parse()
	ln, err := net.Listen("tcp", net.JoinHostPort(*addr, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpraw:", err)
		os.Exit(1)
	}
	fmt.Println("listening on", ln.Addr())
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, syscall.EMFILE) { // back off, as net/http's server does
				time.Sleep(5 * time.Millisecond)
				continue
			}
			fmt.Fprintln(os.Stderr, "httpraw: accept:", err)
			os.Exit(1)
		}
		go serve(conn)
	}
}
