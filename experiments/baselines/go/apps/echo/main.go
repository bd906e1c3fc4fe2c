// The Go twin of experiments/apps/echo.cpp: a TCP echo server and a load-generating client
// on package net, with the same flags and output.
//
//	echo server [--addr A] [--port P]
//	echo client --port P [--addr A] [--conns N] [--msgs M] [--size S]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "server" && os.Args[1] != "client") {
		fmt.Fprintln(os.Stderr, "usage: echo server|client [flags]")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1", "address")
	port := fs.Int("port", 0, "port")
	conns := fs.Int("conns", 100, "connections")
	msgs := fs.Int("msgs", 1000, "messages per connection")
	size := fs.Int("size", 64, "message size")
	fs.Parse(os.Args[2:])
	hostport := net.JoinHostPort(*addr, strconv.Itoa(*port))
	if mode == "server" {
		ln, err := net.Listen("tcp", hostport)
		if err != nil {
			fmt.Fprintln(os.Stderr, "echo:", err)
			os.Exit(1)
		}
		fmt.Println("listening on", ln.Addr())
		for {
			c, err := ln.Accept()
			if err != nil {
				fmt.Fprintln(os.Stderr, "echo: accept:", err)
				os.Exit(1)
			}
			go func(c net.Conn) {
				defer c.Close()
				buf := make([]byte, 16384)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
			}(c)
		}
	}
	var failures int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", hostport, 10*time.Second)
			if err != nil {
				fmt.Fprintln(os.Stderr, "echo: dial:", err)
				atomic.AddInt64(&failures, 1)
				return
			}
			defer c.Close()
			out, in := make([]byte, *size), make([]byte, *size)
			for m := 0; m < *msgs; m++ {
				for k := range out {
					out[k] = byte(i + m + k)
				}
				if _, err := c.Write(out); err != nil {
					atomic.AddInt64(&failures, 1)
					return
				}
				if _, err := io.ReadFull(c, in); err != nil || !bytes.Equal(in, out) {
					atomic.AddInt64(&failures, 1)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	if failures > 0 {
		fmt.Fprintf(os.Stderr, "echo: %d connections failed\n", failures)
		os.Exit(1)
	}
	fmt.Printf("rtt/s: %.0f\n", float64(*conns**msgs)/time.Since(t0).Seconds())
}
