package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/test/nodes"
)

// servicePoller asks the web Service for an answer every 100 ms, through
// its node port on the nodes that take traffic (Ready, not cordoned, and
// with a healthy kube-proxy for healthyFor), as a load balancer in front of
// the nodes does, and counts the answers and the failures.
type servicePoller struct {
	stop       chan struct{}
	done       sync.WaitGroup
	mu         sync.Mutex
	ok, failed int
	failures   []string
}

// healthyFor is how long a node passes the health check before the
// poller sends to it, as a cloud load balancer's healthy threshold does
// (two or three checks some seconds apart): a node's first seconds of
// health are not taken on trust. The nodes healthy when the poller starts
// were in service before it.
const healthyFor = 5 * time.Second

func pollService(t *testing.T, hc client.Client, nodePort int32) *servicePoller {
	p := &servicePoller{stop: make(chan struct{})}
	var targets []servingNode
	var refreshed time.Time
	healthySince := map[string]time.Time{}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if time.Since(refreshed) > 500*time.Millisecond {
				if healthy, err := servingNodes(t, hc); err == nil {
					now := time.Now()
					seen := map[string]time.Time{}
					targets = targets[:0]
					for _, n := range healthy {
						since, ok := healthySince[n.name]
						if !ok {
							since = now
							if refreshed.IsZero() {
								since = now.Add(-healthyFor)
							}
						}
						seen[n.name] = since
						if now.Sub(since) >= healthyFor {
							n.since = since
							targets = append(targets, n)
						}
					}
					healthySince, refreshed = seen, now
				}
			}
			if len(targets) == 0 {
				continue
			}
			node := targets[i%len(targets)]
			err := ask(net.JoinHostPort(node.address, strconv.Itoa(int(nodePort))))
			p.mu.Lock()
			if err != nil {
				p.failed++
				p.failures = append(p.failures, fmt.Sprintf("%s through node %s (healthy for %s): %v",
					time.Now().Format("15:04:05.000"), node.name, time.Since(node.since).Round(100*time.Millisecond), err))
			} else {
				p.ok++
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// servingNodes are the addresses of the nodes a load balancer sends to:
// Ready, schedulable, and whose kube-proxy says it serves Services (its
// /healthz, which cloud load balancers probe: it fails until kube-proxy
// has programmed the node, and once the node is being deleted).
func servingNodes(t *testing.T, hc client.Client) ([]servingNode, error) {
	list := &corev1.NodeList{}
	if err := hc.List(t.Context(), list); err != nil {
		return nil, err
	}
	var out []servingNode
	for _, n := range list.Items {
		if n.Spec.Unschedulable || !n.DeletionTimestamp.IsZero() || !nodes.Ready(&n) {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && kubeProxyHealthy(a.Address) {
				out = append(out, servingNode{name: n.Name, address: a.Address})
			}
		}
	}
	return out, nil
}

// servingNode is a node a load balancer sends to, by name and address.
type servingNode struct {
	name, address string
	since         time.Time // healthy since
}

// kubeProxyHealthy probes the kube-proxy of the node at address, on its
// default health port: healthy, and past its first sync of the rules
// (its /healthz is also 200 while it starts, with lastUpdated zero).
func kubeProxyHealthy(address string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + net.JoinHostPort(address, "10256") + "/healthz")
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	var health struct {
		LastUpdated time.Time `json:"lastUpdated"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&health) != nil {
		return false
	}
	return !health.LastUpdated.IsZero()
}

// ask reads one answer of the server at address.
func ask(address string) error {
	conn, err := net.DialTimeout("tcp", address, time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	answer, err := io.ReadAll(conn)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(answer), "echo from web-") {
		return fmt.Errorf("answer %q", answer)
	}
	return nil
}

// finish stops the poller and returns its counts.
func (p *servicePoller) finish() (ok, failed int, failures []string) {
	close(p.stop)
	p.done.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ok, p.failed, p.failures
}
