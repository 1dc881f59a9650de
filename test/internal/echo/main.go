// Command echo is what the real nodes' tests run in pods to check the
// network and volumes: `echo serve ADDRESS` answers every connection with
// "echo from HOSTNAME" (on SIGTERM it goes on answering for a while, 3s or
// $ECHO_SHUTDOWN_DELAY, while the endpoint's removal reaches every node's
// kube-proxy, then exits, as a server that loses no request when its pod
// is evicted does); `echo connect ADDRESS` prints the answer of the
// server there (ADDRESS may name a Service: the pod's DNS resolves it),
// retrying for up to 30 seconds, and fails when none came; `echo dial
// ADDRESS,...` tries one TCP connection to each (3 s at most) and prints
// "ADDRESS: connected" or "ADDRESS: " and the error; `echo append
// FILE` appends "written by HOSTNAME" to FILE and prints what FILE holds.
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: echo serve|connect ADDRESS | echo dial ADDRESS,... | echo append FILE")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		serve(os.Args[2])
	case "connect":
		connect(os.Args[2])
	case "dial":
		dial(strings.Split(os.Args[2], ","))
	case "append":
		appendTo(os.Args[2])
	default:
		fmt.Fprintln(os.Stderr, "usage: echo serve|connect ADDRESS | echo dial ADDRESS,... | echo append FILE")
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
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		time.Sleep(shutdownDelay())
		os.Exit(0)
	}()
	for {
		conn, err := l.Accept()
		if err != nil {
			continue
		}
		_, _ = fmt.Fprintf(conn, "echo from %s\n", host)
		_ = conn.Close()
	}
}

// shutdownDelay is how long a server answers after SIGTERM: 3s, or
// $ECHO_SHUTDOWN_DELAY (a Go duration) when set.
func shutdownDelay() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("ECHO_SHUTDOWN_DELAY")); err == nil && d >= 0 {
		return d
	}
	return 3 * time.Second
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

func dial(addresses []string) {
	for _, address := range addresses {
		conn, err := net.DialTimeout("tcp", address, 3*time.Second)
		if err != nil {
			fmt.Printf("%s: %v\n", address, err)
			continue
		}
		_ = conn.Close()
		fmt.Printf("%s: connected\n", address)
	}
}

func appendTo(path string) {
	host, _ := os.Hostname()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		_, err = fmt.Fprintf(f, "written by %s\n", host)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Print(string(data))
}
