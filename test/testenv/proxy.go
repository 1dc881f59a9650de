package testenv

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"sync"

	"k8s.io/client-go/tools/clientcmd"
)

// Proxy forwards TCP connections to the API server. Stall holds every byte,
// in both directions, of every connection through it, until Resume
// delivers them: a client whose requests hang and may land late.
type Proxy struct {
	// Addr is host:port to dial instead of the API server.
	Addr string

	listener net.Listener
	mu       sync.Mutex
	cond     *sync.Cond
	stalled  bool
}

// StartProxy forwards to the host of serverURL.
func StartProxy(serverURL string) (*Proxy, error) {
	return StartProxyAt(serverURL, "127.0.0.1:0")
}

// StartProxyAt forwards to the host of serverURL from addr: a client given
// addr before the proxy starts finds nothing listening there until then.
func StartProxyAt(serverURL, addr string) (*Proxy, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("failed to parse %q: %w", serverURL, err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: l.Addr().String(), listener: l}
	p.cond = sync.NewCond(&p.mu)
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", u.Host)
			if err != nil {
				_ = in.Close()
				continue
			}
			go p.pipe(out, in)
			go p.pipe(in, out)
		}
	}()
	return p, nil
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.stalled {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Stall holds every byte from now on.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
}

// Resume delivers what was held and forwards again.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = false
	p.cond.Broadcast()
}

// Close resumes and stops accepting connections.
func (p *Proxy) Close() {
	p.Resume()
	_ = p.listener.Close()
}

// ProxiedKubeconfig writes a copy of kubeconfig whose clusters are reached
// through p, next to it, and returns its path.
func (p *Proxy) ProxiedKubeconfig(kubeconfig string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("failed to load %s: %w", kubeconfig, err)
	}
	for _, cluster := range cfg.Clusters {
		cluster.Server = "https://" + p.Addr
	}
	path := kubeconfig + ".proxied"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("failed to write %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return "", err
	}
	return path, nil
}
