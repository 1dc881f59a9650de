// The fencebindings part: what the fencing design costs the management
// API server on every namespaced write, by the number of control-plane
// namespaces.
//
// The API server's ValidatingAdmissionPolicy plugin matches every binding
// of a policy whose constraints a request meets against that request, one
// after another, and parses each binding's namespaceSelector again each
// time. With one binding per control-plane namespace (what earlier versions
// applied, render.NamespaceFencingBinding), every namespaced write in a control-plane namespace, by
// anyone, pays for as many bindings as there are hosted clusters; writes in
// other namespaces do not, as the policy's own constraints select
// control-plane namespaces only. The part measures both against two anchors
// in the same run, on the same API server and namespaces: no binding at
// all, and one binding that selects every control-plane namespace by a
// label, with the same policy and param (the request's namespace's Lease).

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/test/bench/report"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var fbFlags struct {
	sizes   string
	window  time.Duration
	clients int
}

func init() {
	flag.StringVar(&fbFlags.sizes, "fencebindings-namespaces", "1000,10000", "Comma-separated numbers of control-plane namespaces the fencebindings part measures, in increasing order.")
	flag.DurationVar(&fbFlags.window, "fencebindings-window", 30*time.Second, "How long the fencebindings part writes in each configuration (after a warm-up of a sixth of it).")
	flag.IntVar(&fbFlags.clients, "fencebindings-clients", 16, "How many clients write at once in the fencebindings part.")
}

const (
	// fbTargets is how many namespaces hold a ConfigMap the part updates.
	fbTargets = 100
)

// fbDesign is one configuration of bindings.
type fbDesign struct {
	name     string
	bindings func(namespaces []string) []client.Object
}

var fbDesigns = []fbDesign{
	{name: "no binding (anchor)", bindings: func([]string) []client.Object { return nil }},
	{name: "one binding for every namespace, by label (today's design)", bindings: func([]string) []client.Object { return []client.Object{fbShared()} }},
	{name: "one binding per namespace (earlier versions)", bindings: func(namespaces []string) []client.Object {
		out := make([]client.Object, 0, len(namespaces))
		for _, ns := range namespaces {
			out = append(out, render.NamespaceFencingBinding(ns, "bench/"+ns))
		}
		return out
	}},
}

// fbShared is the fencing policy bound once, to every namespace labelled
// as fenced, as the hypershift-operator binds it.
func fbShared() client.Object { return render.FencingBinding() }

// fbRow is one measured configuration.
type fbRow struct {
	namespaces, bindings int
	design               string
	// elsewhere marks writes in namespaces that are not control-plane
	// namespaces, which the policy's constraints leave out.
	elsewhere bool
	writes    int
	cpu       time.Duration
	window    time.Duration
}

func (r fbRow) cpuPerWrite() time.Duration { return r.cpu / time.Duration(max(r.writes, 1)) }

func fenceBindings(ctx context.Context, env *testenv.Env) (string, error) {
	sizes, err := fbSizes(fbFlags.sizes)
	if err != nil {
		return "", err
	}
	apiserver, err := env.Process("kube-apiserver")
	if err != nil {
		return "", err
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return "", err
	}
	if err := fbPrepare(ctx, c); err != nil {
		return "", err
	}
	// Namespaces that are not control-plane namespaces, for the writes
	// elsewhere.
	var others []string
	for i := range fbTargets {
		others = append(others, fmt.Sprintf("fencebench-other-%03d", i))
	}
	if err := fbEnsureNamespaces(ctx, c, others, nil); err != nil {
		return "", err
	}
	var rows []fbRow
	var namespaces []string
	for _, size := range sizes {
		for i := len(namespaces); i < size; i++ {
			namespaces = append(namespaces, fmt.Sprintf("fencebench-%05d", i))
		}
		if err := fbEnsureNamespaces(ctx, c, namespaces, map[string]string{render.LeaderFencingLabel: "true", hyperv1.HostedControlPlaneLabel: "true"}); err != nil {
			return fbMarkdown(rows), err
		}
		for _, d := range fbDesigns {
			objs := d.bindings(namespaces)
			fmt.Printf("fencebindings: %d namespaces, %s: creating %d bindings\n", size, d.name, len(objs))
			if err := fbEach(ctx, objs, func(ctx context.Context, o client.Object) error { return c.Create(ctx, o) }); err != nil {
				return fbMarkdown(rows), fmt.Errorf("failed to create the bindings: %w", err)
			}
			for _, elsewhere := range []bool{false, true} {
				if elsewhere && len(objs) < 2 {
					continue
				}
				targets := namespaces[:min(fbTargets, len(namespaces))]
				if elsewhere {
					targets = others
				}
				row, err := fbMeasure(ctx, c, apiserver.Pid, targets)
				row.namespaces, row.bindings, row.design, row.elsewhere = size, len(objs), d.name, elsewhere
				if err != nil {
					return fbMarkdown(rows), err
				}
				fmt.Printf("fencebindings: %d namespaces, %s, elsewhere %t: %d writes in %s, API server CPU %s per write\n",
					size, d.name, elsewhere, row.writes, row.window.Round(time.Second), row.cpuPerWrite().Round(10*time.Microsecond))
				rows = append(rows, row)
			}
			if err := fbEach(ctx, objs, func(ctx context.Context, o client.Object) error { return client.IgnoreNotFound(c.Delete(ctx, o)) }); err != nil {
				return fbMarkdown(rows), fmt.Errorf("failed to delete the bindings: %w", err)
			}
		}
	}
	return fbMarkdown(rows), nil
}

func fbSizes(list string) ([]int, error) {
	var sizes []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || (len(sizes) > 0 && n <= sizes[len(sizes)-1]) {
			return nil, fmt.Errorf("-fencebindings-namespaces=%q: want positive numbers in increasing order", list)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// fbPrepare creates the fencing policy when no earlier part did, and
// deletes the fencing bindings earlier parts left (the hostedclusters part
// leaves the shared one), so that the anchor has none.
func fbPrepare(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, render.FencingPolicy()); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create the fencing policy: %w", err)
	}
	var list admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	if err := c.List(ctx, &list); err != nil {
		return err
	}
	var left []client.Object
	for i := range list.Items {
		if list.Items[i].Spec.PolicyName == render.FencingPolicyName {
			left = append(left, &list.Items[i])
		}
	}
	if len(left) > 0 {
		fmt.Printf("fencebindings: deleting the %d fencing bindings earlier parts left\n", len(left))
	}
	return fbEach(ctx, left, func(ctx context.Context, o client.Object) error { return client.IgnoreNotFound(c.Delete(ctx, o)) })
}

// fbEnsureNamespaces creates the namespaces, with labels, that do not
// exist yet, and the ConfigMap the writes update in the first fbTargets.
func fbEnsureNamespaces(ctx context.Context, c client.Client, namespaces []string, labels map[string]string) error {
	objs := make([]client.Object, 0, len(namespaces))
	for _, ns := range namespaces {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}})
	}
	for _, ns := range namespaces[:min(fbTargets, len(namespaces))] {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fencebench"}})
	}
	return fbEach(ctx, objs, func(ctx context.Context, o client.Object) error {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

// fbEach runs f over objs with the part's clients.
func fbEach(ctx context.Context, objs []client.Object, f func(context.Context, client.Object) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, fbFlags.clients)
	for w := range fbFlags.clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(objs) || ctx.Err() != nil {
					return
				}
				if err := f(ctx, objs[i]); err != nil {
					errs[w] = fmt.Errorf("%s: %w", objs[i].GetName(), err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// fbMeasure waits until the API server is idle (the bindings compiled),
// warms up, then updates the targets' ConfigMaps with every client for the
// window, and reads the API server's CPU time around it.
func fbMeasure(ctx context.Context, c client.Client, pid int, targets []string) (fbRow, error) {
	if err := fbSettle(ctx, pid); err != nil {
		return fbRow{}, err
	}
	if _, err := fbWrite(ctx, c, targets, fbFlags.window/6); err != nil {
		return fbRow{}, err
	}
	before, err := report.ProcCPUTime(pid)
	if err != nil {
		return fbRow{}, err
	}
	start := time.Now()
	writes, err := fbWrite(ctx, c, targets, fbFlags.window)
	window := time.Since(start)
	after, cpuErr := report.ProcCPUTime(pid)
	if err == nil {
		err = cpuErr
	}
	return fbRow{writes: writes, cpu: after - before, window: window}, err
}

// fbWrite updates the targets' ConfigMaps round-robin with every client
// for d, and returns how many writes succeeded.
func fbWrite(ctx context.Context, c client.Client, targets []string, d time.Duration) (int, error) {
	deadline := time.Now().Add(d)
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, fbFlags.clients)
	for w := range fbFlags.clients {
		wg.Go(func() {
			for i := w; time.Now().Before(deadline) && ctx.Err() == nil; i += fbFlags.clients {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: targets[i%len(targets)], Name: "fencebench"}}
				patch := fmt.Appendf(nil, `{"data":{"n":"%d"}}`, i)
				if err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
					errs[w] = err
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return int(n.Load()), fmt.Errorf("failed to update a ConfigMap: %w", err)
		}
	}
	return int(n.Load()), ctx.Err()
}

// fbSettle waits until the API server used less than 5% of a CPU over two
// seconds in a row, at most 3 minutes.
func fbSettle(ctx context.Context, pid int) error {
	deadline := time.Now().Add(3 * time.Minute)
	quiet := 0
	last, err := report.ProcCPUTime(pid)
	if err != nil {
		return err
	}
	for quiet < 2 {
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "fencebindings: the API server did not go idle within 3m; measuring anyway")
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := report.ProcCPUTime(pid)
		if err != nil {
			return err
		}
		if now-last < 50*time.Millisecond {
			quiet++
		} else {
			quiet = 0
		}
		last = now
	}
	return nil
}

func fbMarkdown(rows []fbRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The fencing policy as the hypershift-operator installs it (render.FencingPolicy), bound three ways in turn on the same API server and namespaces: "+
		"no binding (the anchor), one binding that selects every fenced control-plane namespace by a label, as the operator applies it today (render.FencingBinding), and one binding per namespace, as earlier versions applied them (render.NamespaceFencingBinding). "+
		"In each, %d clients update ConfigMaps in %d of the namespaces (labelled as control-plane namespaces, which the policy's constraints select) and, with one binding per namespace, also in %d namespaces that are not control-plane namespaces, "+
		"as a cluster admin (whom the policy's match condition lets through, as it does every writer but a control-plane-operator) for %s after a warm-up, once the API server is idle; "+
		"the API server's CPU time (user and system, /proc) over the window, per write.\n\n", fbFlags.clients, fbTargets, fbTargets, fbFlags.window)
	b.WriteString("| namespaces | bindings | design | written in | writes/s | API server CPU per write | against no binding |\n|---|---|---|---|---|---|---|\n")
	anchor := map[int]fbRow{}
	for _, r := range rows {
		if r.bindings == 0 {
			anchor[r.namespaces] = r
		}
		ratio := "1.00"
		if a, ok := anchor[r.namespaces]; ok && a.cpuPerWrite() > 0 {
			ratio = fmt.Sprintf("%.2f", float64(r.cpuPerWrite())/float64(a.cpuPerWrite()))
		}
		where := "control-plane namespaces"
		if r.elsewhere {
			where = "other namespaces"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f | %.2f ms | %s |\n", thousands(r.namespaces), thousands(r.bindings), r.design, where,
			float64(r.writes)/r.window.Seconds(), float64(r.cpuPerWrite())/float64(time.Millisecond), ratio)
	}
	b.WriteString(fbPerBinding(rows))
	return b.String()
}

// fbPerBinding says, for each number of namespaces, what each binding of
// the per-namespace design adds to a write beyond the shared design, which
// evaluates the same policy once.
func fbPerBinding(rows []fbRow) string {
	shared := map[int]fbRow{}
	var lines []string
	for _, r := range rows {
		switch {
		case r.bindings == 1:
			shared[r.namespaces] = r
		case r.bindings > 1 && !r.elsewhere:
			s, ok := shared[r.namespaces]
			if !ok {
				continue
			}
			extra := r.cpuPerWrite() - s.cpuPerWrite()
			lines = append(lines, fmt.Sprintf("with %s namespaces, one binding per namespace costs %.2f times the shared binding per write: %.1f µs more per binding",
				thousands(r.namespaces), float64(r.cpuPerWrite())/float64(max(s.cpuPerWrite(), 1)), float64(extra)/float64(time.Microsecond)/float64(r.bindings-1)))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "\nEvery namespaced write in a control-plane namespace, by anyone, pays this: " + strings.Join(lines, "; ") + ".\n"
}
