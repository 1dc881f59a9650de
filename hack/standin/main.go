// Command standin stands in for the hosted control plane components whose
// binary the project does not ship (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) when a local cluster runs their
// Pods as plain processes. It serves nothing but health: every path answers
// 200 "ok", so /healthz, /readyz, /livez and /health all pass.
//
// It is started with the addresses to serve, then the real component's
// arguments after a "--" separator:
//
//	standin --serve=https://127.1.0.7:6443 --serve=http://127.1.0.7:2381 -- <original args...>
//
// --serve may be given several times, with the scheme http or https; https
// uses a self-signed certificate generated in memory at start. Every other
// flag and argument is ignored; the original arguments are logged once, so
// that tests can check what the component would have been given. SIGTERM or
// SIGINT stops it promptly with exit code 0.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "standin: %v\n", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, log io.Writer) error {
	s, err := start(args, log)
	if err != nil {
		return err
	}
	<-ctx.Done()
	_, _ = fmt.Fprintln(log, "standin: received a termination signal, shutting down")
	return s.stop()
}

// standin is a running stand-in: one server per --serve address.
type standin struct {
	servers []*http.Server
	// addrs are the addresses really listened on, in --serve order.
	addrs []string
	errs  chan error
}

// parseArgs splits the arguments into the addresses to serve and the
// original arguments, which follow "--". Everything else is ignored.
func parseArgs(args []string) (serve []string, original []string, err error) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			return serve, args[i+1:], nil
		case strings.HasPrefix(arg, "--serve="):
			serve = append(serve, strings.TrimPrefix(arg, "--serve="))
		case arg == "--serve":
			if i+1 >= len(args) {
				return nil, nil, errors.New("flag --serve needs a value")
			}
			i++
			serve = append(serve, args[i])
		}
	}
	return serve, nil, nil
}

// start listens on every --serve address and serves in the background.
func start(args []string, log io.Writer) (*standin, error) {
	serve, original, err := parseArgs(args)
	if err != nil {
		return nil, err
	}
	_, _ = fmt.Fprintf(log, "standin: original args: %s\n", quoteAll(original))
	s := &standin{errs: make(chan error, len(serve))}
	for _, raw := range serve {
		srv, ln, err := listen(raw)
		if err != nil {
			_ = s.stop()
			return nil, err
		}
		s.servers = append(s.servers, srv)
		s.addrs = append(s.addrs, ln.Addr().String())
		_, _ = fmt.Fprintf(log, "standin: serving %s on %s\n", raw, ln.Addr())
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.errs <- fmt.Errorf("failed to serve %s: %w", raw, err)
			}
		}()
	}
	return s, nil
}

// stop shuts the servers down, giving requests in flight a moment.
func (s *standin) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil {
			// Requests still in flight after the grace: cut them.
			_ = srv.Close()
		}
	}
	for {
		select {
		case err := <-s.errs:
			errs = append(errs, err)
		default:
			return errors.Join(errs...)
		}
	}
}

func listen(raw string) (*http.Server, net.Listener, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid --serve %q: %w", raw, err)
	}
	if u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, nil, fmt.Errorf("invalid --serve %q: want http://host:port or https://host:port", raw)
	}
	srv := &http.Server{Handler: http.HandlerFunc(ok), ReadHeaderTimeout: 10 * time.Second}
	if u.Scheme == "https" {
		cert, err := selfSigned(u.Hostname())
		if err != nil {
			return nil, nil, err
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to listen on %s: %w", u.Host, err)
	}
	if srv.TLSConfig != nil {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	return srv, ln, nil
}

func ok(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok")
}

// selfSigned returns a certificate for host, localhost and the loopback
// addresses, valid for a year.
func selfSigned(host string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("failed to generate a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("failed to generate a serial number: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "standin"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsUnspecified() {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		}
	} else if host != "" && host != "localhost" {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("failed to create a certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func quoteAll(args []string) string {
	quoted := make([]string, len(args))
	for i, arg := range args {
		quoted[i] = strconv.Quote(arg)
	}
	return strings.Join(quoted, " ")
}
