package nodeagent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// dialTimeout bounds a connection attempt to one endpoint.
const dialTimeout = 2 * time.Second

// portListener serves one address of a Service: it listens while there
// are backends, and forwards each connection to them in turn.
type portListener struct {
	log  logr.Logger
	addr string
	next atomic.Uint64

	mu       sync.Mutex
	ln       net.Listener
	backends []string
	conns    map[net.Conn]bool
	closed   bool
}

func newPortListener(log logr.Logger, addr string) *portListener {
	return &portListener{log: log, addr: addr, conns: map[net.Conn]bool{}}
}

// setBackends replaces the backends; it starts listening when there are
// some and stops when there are none, so that connections are refused at
// once rather than accepted and dropped. Open connections stay.
func (l *portListener) setBackends(backends []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Equal(l.backends, backends) {
		l.log.V(1).Info("Service endpoints changed", "endpoints", backends)
	}
	l.backends = backends
	switch {
	case len(backends) == 0 && l.ln != nil:
		_ = l.ln.Close()
		l.ln = nil
		l.log.V(1).Info("Stopped listening: no ready endpoint")
	case len(backends) > 0 && l.ln == nil:
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return fmt.Errorf("failed to listen on %s: %w", l.addr, err)
		}
		l.ln = ln
		l.log.V(1).Info("Listening")
		go l.accept(ln)
	}
	return nil
}

// close stops listening and closes the open connections.
func (l *portListener) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		_ = l.ln.Close()
		l.ln = nil
	}
	for c := range l.conns {
		_ = c.Close()
	}
	l.closed = true
}

func (l *portListener) accept(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go l.forward(conn)
	}
}

// forward connects conn to a backend, trying them in turn from the next
// one, and copies both ways until both sides are done. When no backend
// answers, the client's connection is reset.
func (l *portListener) forward(conn net.Conn) {
	l.mu.Lock()
	backends := l.backends
	l.mu.Unlock()
	start := l.next.Add(1)
	var upstream net.Conn
	var lastErr error
	for i := range backends {
		backend := backends[(int(start)+i)%len(backends)]
		c, err := net.DialTimeout("tcp", backend, dialTimeout)
		if err == nil {
			upstream = c
			break
		}
		lastErr = err
	}
	if upstream == nil {
		l.log.V(1).Info("No endpoint answered", "reason", fmt.Sprint(lastErr))
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.SetLinger(0)
		}
		_ = conn.Close()
		return
	}
	if !l.track(conn, upstream) {
		return
	}
	defer l.untrack(conn, upstream)
	var wg sync.WaitGroup
	wg.Go(func() { copyHalf(upstream, conn) })
	wg.Go(func() { copyHalf(conn, upstream) })
	wg.Wait()
}

// track records the pair of a forwarded connection, unless the listener
// closed meanwhile.
func (l *portListener) track(conns ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		l.conns[c] = true
	}
	return true
}

func (l *portListener) untrack(conns ...net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range conns {
		delete(l.conns, c)
		_ = c.Close()
	}
}

// copyHalf copies src to dst, then closes dst's writing side so that the
// peer sees the end of the stream.
func copyHalf(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if tcp, ok := dst.(*net.TCPConn); ok && err == nil {
		_ = tcp.CloseWrite()
		return
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		_ = dst.Close()
		_ = src.Close()
	}
}
