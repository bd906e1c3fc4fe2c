// The Go twin of experiments/apps/http.cpp, on net/http: /echo returns "hello", /sleep
// blocks 1 s in nanosleep(2) (syscall.Nanosleep, a real system call holding the thread), as
// in the well-known scheduler article. Thread counts: run with GODEBUG=schedtrace=1000.
//
//	http [--addr A] [--port P]
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1", "address")
	port := flag.Int("port", 8080, "port")
	flag.Parse()
	http.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	})
	http.HandleFunc("/sleep", func(w http.ResponseWriter, r *http.Request) {
		ts := syscall.Timespec{Sec: 1}
		for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		}
		io.WriteString(w, "slept")
	})
	ln, err := net.Listen("tcp", net.JoinHostPort(*addr, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "http:", err)
		os.Exit(1)
	}
	fmt.Println("listening on", ln.Addr())
	fmt.Fprintln(os.Stderr, http.Serve(ln, nil))
	os.Exit(1)
}
