// Package auditlog is the tests' and benchmarks' one oracle of who wrote
// what: it reads the API server's JSON audit log (rotated backups
// included), turns its events into writes attributed to a user and, for a
// pod-bound ServiceAccount token, to a pod, and judges them against the
// Lease holdings the log itself shows. Every test or benchmark that proves
// "only the Lease holder wrote" asks it, so that the proof is made one way.
package auditlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/hypershift-le/hypershift/hypershift-operator/render"
)

// PodNameKey is the user extra in which the API server records the pod a
// ServiceAccount token is bound to.
const PodNameKey = render.PodNameExtra

// Read reads the JSON audit log at path and the backups the API server
// rotated out of it (<name>-<timestamp><ext> beside it, oldest first), in
// order.
func Read(path string) ([]auditv1.Event, error) {
	ext := filepath.Ext(path)
	backups, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, fmt.Errorf("failed to list the audit log's backups: %w", err)
	}
	sort.Strings(backups) // the timestamps sort in time order
	var events []auditv1.Event
	for _, file := range append(backups, path) {
		read, err := readFile(file)
		if err != nil {
			return nil, err
		}
		events = append(events, read...)
	}
	return events, nil
}

func readFile(path string) ([]auditv1.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to open the audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	var events []auditv1.Event
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		var event auditv1.Event
		if err := json.Unmarshal(scanner.Bytes(), &event); err != nil {
			return nil, fmt.Errorf("failed to decode audit event %q: %w", scanner.Text(), err)
		}
		events = append(events, event)
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("failed to read the audit log %s: %w", path, err)
	}
	return events, nil
}

// Requests returns one event per request, in the order the API server
// received them. The API server logs a long-running request (a watch) when
// its response starts and again when it completes; the last stage is kept.
func Requests(events []auditv1.Event) []auditv1.Event {
	index := map[types.UID]int{}
	var out []auditv1.Event
	for _, e := range events {
		if i, ok := index[e.AuditID]; ok {
			out[i] = e
			continue
		}
		index[e.AuditID] = len(out)
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].RequestReceivedTimestamp.Before(&out[j].RequestReceivedTimestamp)
	})
	return out
}

// Code is an audited request's response code, 0 if none was logged.
func Code(event auditv1.Event) int32 {
	if event.ResponseStatus == nil {
		return 0
	}
	return event.ResponseStatus.Code
}

// IsWrite reports whether an audit event records a mutating request.
func IsWrite(event auditv1.Event) bool {
	switch event.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// Succeeded reports whether an audited request got a 2xx response.
func Succeeded(event auditv1.Event) bool {
	return event.ResponseStatus != nil && event.ResponseStatus.Code >= 200 && event.ResponseStatus.Code < 300
}

// Write is one write request from the audit log.
type Write struct {
	// At is when the API server received it.
	At time.Time
	// User is who made it; Pod the pod its token is bound to, if any.
	User, Pod string
	Verb      string
	// Resource includes the subresource: "hostedcontrolplanes/status".
	Resource        string
	Namespace, Name string
	// Code is the response's status code (0 if none was logged).
	Code int32
}

// Lease tells a write to a Lease.
func (w Write) Lease() bool { return w.Resource == "leases" }

// Succeeded tells a write that got a 2xx response.
func (w Write) Succeeded() bool { return w.Code >= 200 && w.Code < 300 }

// What is the request without its author: "update leases ns/name".
func (w Write) What() string {
	return w.Verb + " " + w.Resource + " " + w.Namespace + "/" + w.Name
}

func (w Write) String() string {
	who := w.User
	if w.Pod != "" {
		who = w.Pod
	}
	return fmt.Sprintf("%s %s %s (%d)", w.At.Format("15:04:05.000000"), who, w.What(), w.Code)
}

// Query selects writes; its zero value selects every write.
type Query struct {
	// Users keeps the writes of these users only, when set.
	Users []string
	// Namespace keeps the writes in this namespace only, when set.
	Namespace string
	// SucceededOnly keeps the writes that got a 2xx response.
	SucceededOnly bool
}

// Writes returns the writes of events that q selects, in the order the API
// server received them.
func Writes(events []auditv1.Event, q Query) []Write {
	var out []Write
	for _, e := range events {
		if !IsWrite(e) || e.ObjectRef == nil || (q.SucceededOnly && !Succeeded(e)) ||
			(len(q.Users) > 0 && !slices.Contains(q.Users, e.User.Username)) ||
			(q.Namespace != "" && e.ObjectRef.Namespace != q.Namespace) {
			continue
		}
		out = append(out, toWrite(e))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

func toWrite(e auditv1.Event) Write {
	resource := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		resource += "/" + e.ObjectRef.Subresource
	}
	w := Write{At: e.RequestReceivedTimestamp.Time, User: e.User.Username, Verb: e.Verb, Resource: resource,
		Namespace: e.ObjectRef.Namespace, Name: e.ObjectRef.Name}
	if pods := e.User.Extra[PodNameKey]; len(pods) == 1 {
		w.Pod = pods[0]
	}
	w.Code = Code(e)
	return w
}

// ByUser and ByPod say who a write is by, for OutsideHoldings.
func ByUser(w Write) string { return w.User }

// ByPod is the pod a write's token is bound to.
func ByPod(w Write) string { return w.Pod }

// OutsideHoldings reconstructs, from successful writes alone, who held the
// Lease when (a successful Lease write by someone means they held it then,
// until someone else's successful Lease write) and returns every other
// successful write made outside its author's holding; who names the
// author (ByUser or ByPod). writes must be in time order, as Writes
// returns them, and hold one Lease's writes.
func OutsideHoldings(writes []Write, who func(Write) string) []Write {
	var violations []Write
	holderNow := ""
	for _, w := range writes {
		if !w.Succeeded() {
			continue
		}
		if w.Lease() {
			holderNow = who(w)
			continue
		}
		if who(w) != holderNow {
			violations = append(violations, w)
		}
	}
	return violations
}
