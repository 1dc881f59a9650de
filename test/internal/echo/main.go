// Command echo is what the nodes' tests run in pods to check the network:
// `echo serve ADDRESS` answers every connection with "echo from HOSTNAME";
// `echo connect ADDRESS` prints the answer of the server there, retrying
// for up to 30 seconds, and fails when none came.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: echo serve|connect ADDRESS")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		serve(os.Args[2])
	case "connect":
		connect(os.Args[2])
	default:
		fmt.Fprintln(os.Stderr, "usage: echo serve|connect ADDRESS")
		os.Exit(2)
	}
}

func serve(address string) {
	l, err := net.Listen("tcp", address)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	host, _ := os.Hostname()
	for {
		conn, err := l.Accept()
		if err != nil {
			continue
		}
		_, _ = fmt.Fprintf(conn, "echo from %s\n", host)
		_ = conn.Close()
	}
}

func connect(address string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", address, 2*time.Second)
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			answer, err := io.ReadAll(conn)
			_ = conn.Close()
			if err == nil && len(answer) > 0 {
				fmt.Print(string(answer))
				return
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "no answer from %s: %v\n", address, err)
			os.Exit(1)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
