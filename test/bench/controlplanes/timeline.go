package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/test/auditlog"
)

// timeline is when each step of one HostedCluster's creation completed,
// from its create request: the management API server's record of each
// request (audit log, microseconds), read once the hosted API served.
type timeline map[string]time.Duration

// servedStep is the last step: the bench's own first successful request.
const servedStep = "first successful hosted request"

// timelineOf reads the audit log for the steps of the HostedCluster name,
// created at created: the HostedCluster and its namespace, the first write
// of each workload, each component's first pod created, scheduled (bound
// to a node, after its volume was provisioned), running (every container
// started, as its kubelet reports) and Ready, the control-plane-operator's
// first Lease write (it leads), its first pass's steps (cpoReadSteps, its
// finalizer, its first Service) and its first and kubeconfig Secrets, and
// the user's kubeconfig copy.
func (b *bench) timelineOf(name string, created time.Time, served time.Duration) (timeline, error) {
	events, err := b.lc.Env.AuditEvents()
	if err != nil {
		return nil, err
	}
	ns := hyperv1.ControlPlaneNamespace(namespace, name)
	cpo := "system:serviceaccount:" + ns + ":" + hyperv1.ControlPlaneOperatorName
	t := timeline{servedStep: served}
	mark := func(step string, at time.Time) {
		if _, ok := t[step]; !ok {
			t[step] = at.Sub(created)
		}
	}
	apps := map[string]string{} // pod name -> app label
	for _, e := range auditlog.Requests(events) {
		ref := e.ObjectRef
		if ref == nil || !auditlog.Succeeded(e) {
			continue
		}
		at := e.StageTimestamp.Time
		if !auditlog.IsWrite(e) {
			if ref.Namespace == ns && e.User.Username == cpo {
				cpoReadSteps(e, mark)
			}
			continue
		}
		switch {
		case ref.Resource == "hostedclusters" && ref.Subresource == "" && ref.Namespace == namespace && ref.Name == name && e.Verb == "create":
			mark("HostedCluster created", at)
		case ref.Resource == "namespaces" && ref.Name == ns && e.Verb != "delete":
			mark("control-plane namespace created", at)
		case ref.Resource == "secrets" && ref.Namespace == namespace && ref.Name == name+"-kubeconfig":
			mark("admin kubeconfig copied for the user", at)
		case ref.Namespace != ns:
		case (ref.Resource == "deployments" || ref.Resource == "statefulsets") && ref.Subresource == "" && e.Verb != "delete":
			mark(ref.Name+": workload written", at)
		case ref.Resource == "leases" && e.User.Username == cpo:
			mark("control-plane-operator leads (first Lease write)", at)
		case ref.Resource == "hostedcontrolplanes" && ref.Subresource == "" && e.User.Username == cpo:
			mark("control-plane-operator: first pass (HostedControlPlane finalizer)", at)
		case ref.Resource == "services" && e.User.Username == cpo:
			mark("control-plane-operator: first Service written", at)
		case ref.Resource == "secrets" && e.User.Username == cpo:
			mark("control-plane-operator: first Secret (PKI)", at)
			if ref.Name == hyperv1.AdminKubeconfigSecretName {
				mark("control-plane-operator: admin kubeconfig Secret", at)
			}
		case ref.Resource == "pods":
			podSteps(e, apps, mark)
		}
	}
	return t, nil
}

// cpoReadSteps marks the control-plane-operator's first reads in its
// namespace: its caches' first list (they start once it leads), its first
// pass's read of the pull secret past the cache (the release phase, which
// comes first), and its first other Secret read past the cache (the PKI
// phase confirming what it will write).
func cpoReadSteps(e auditv1.Event, mark func(string, time.Time)) {
	ref, at := e.ObjectRef, e.StageTimestamp.Time
	switch {
	case e.Verb == "list" && ref.Resource != "leases": // its elector lists its Lease first
		mark("control-plane-operator: caches start (first list)", at)
	case e.Verb == "get" && ref.Resource == "secrets" && ref.Name == hyperv1.PullSecretName:
		mark("control-plane-operator: pull secret read (release phase)", at)
	case e.Verb == "get" && ref.Resource == "secrets":
		mark("control-plane-operator: PKI Secrets confirmed past the cache (first read)", at)
	}
}

// podSteps marks a component's first pod created, scheduled, running and
// Ready from one pod write.
func podSteps(e auditv1.Event, apps map[string]string, mark func(string, time.Time)) {
	ref, at := e.ObjectRef, e.StageTimestamp.Time
	var pod corev1.Pod
	if e.ResponseObject != nil {
		_ = json.Unmarshal(e.ResponseObject.Raw, &pod)
	}
	if app := pod.Labels["app"]; app != "" && pod.Name != "" {
		apps[pod.Name] = app
	}
	name := ref.Name
	if name == "" {
		name = pod.Name
	}
	app := apps[name]
	if app == "" {
		return
	}
	switch {
	case ref.Subresource == "" && e.Verb == "create":
		mark(app+": pod created", at)
	case ref.Subresource == "binding":
		mark(app+": pod scheduled", at)
	case ref.Subresource == "status":
		if running(pod.Status.ContainerStatuses) {
			mark(app+": containers running", at)
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				mark(app+": pod Ready", at)
			}
		}
	}
}

func running(statuses []corev1.ContainerStatus) bool {
	if len(statuses) == 0 {
		return false
	}
	for _, s := range statuses {
		if s.State.Running == nil {
			return false
		}
	}
	return true
}

// timelineMarkdown is a table of the steps, ordered by their median, with
// the median, the fastest and the slowest over the clusters measured.
func timelineMarkdown(all []timeline) string {
	if len(all) == 0 {
		return ""
	}
	by := map[string][]time.Duration{}
	for _, t := range all {
		for step, d := range t {
			by[step] = append(by[step], d)
		}
	}
	steps := make([]string, 0, len(by))
	for step := range by {
		steps = append(steps, step)
	}
	median := func(step string) time.Duration {
		s := slices.Sorted(slices.Values(by[step]))
		return s[(len(s)-1)/2]
	}
	slices.SortFunc(steps, func(a, b string) int {
		return cmp.Or(cmp.Compare(median(a), median(b)), strings.Compare(a, b))
	})
	var b strings.Builder
	fmt.Fprintf(&b, "| step (from the create request) | p50 | min | max | clusters |\n|---|---|---|---|---|\n")
	for _, step := range steps {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d |\n", step, seconds(median(step)), seconds(slices.Min(by[step])), seconds(slices.Max(by[step])), len(by[step]))
	}
	return b.String()
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%.2f s", d.Seconds())
}
