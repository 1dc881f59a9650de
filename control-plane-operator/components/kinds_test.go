package components

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/component/componenttest"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/controlplanekinds"
	"github.com/hypershift-le/hypershift/support/scheme"
)

// TestEveryRenderedKindIsListed: the CPO watches, deletes at teardown and
// may write only the kinds of controlplanekinds.All, so every kind a
// component (under every availability policy) or the PKI renders must be
// listed there as applied, every kind made from a rendered template as
// well, and every listed kind must be rendered or made.
func TestEveryRenderedKindIsListed(t *testing.T) {
	for _, problem := range kindProblems(renderedKinds(t), controlplanekinds.All) {
		t.Error(problem)
	}
}

// TestKindCheckCanFail: the check notices a kind dropped from the list,
// and a listed kind nothing renders.
func TestKindCheckCanFail(t *testing.T) {
	rendered := renderedKinds(t)
	for i, kind := range controlplanekinds.All {
		if len(kindProblems(rendered, slices.Delete(slices.Clone(controlplanekinds.All), i, i+1))) == 0 {
			t.Errorf("without %s, the list still passes", kind.GVK.Kind)
		}
	}
	unrendered := controlplanekinds.Kind{GVK: corev1.SchemeGroupVersion.WithKind("ServiceAccount"), Resource: "serviceaccounts", Applied: true}
	if len(kindProblems(rendered, append(slices.Clone(controlplanekinds.All), unrendered))) == 0 {
		t.Error("with a ServiceAccount nothing renders, the list still passes")
	}
}

// rendered says who renders (applied) or makes from a rendered template
// (made) the objects of each kind.
type rendered struct {
	applied, made map[schema.GroupVersionKind][]string
}

// renderedKinds renders every component for every policy, and the PKI.
func renderedKinds(t *testing.T) rendered {
	t.Helper()
	s := scheme.New()
	r := rendered{applied: map[schema.GroupVersionKind][]string{}, made: map[schema.GroupVersionKind][]string{}}
	add := func(by map[schema.GroupVersionKind][]string, who string, obj client.Object) {
		gvk, err := apiutil.GVKForObject(obj, s)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		if !slices.Contains(by[gvk], who) {
			by[gvk] = append(by[gvk], who)
		}
	}
	for _, c := range All() {
		for _, p := range componenttest.Policies {
			for _, obj := range componenttest.Render(t, c, componenttest.Inputs(p)) {
				add(r.applied, c.Name(), obj)
				if sts, ok := obj.(*appsv1.StatefulSet); ok {
					for i := range sts.Spec.VolumeClaimTemplates {
						add(r.made, c.Name()+"'s volumeClaimTemplates", &sts.Spec.VolumeClaimTemplates[i])
					}
				}
			}
		}
	}
	plan, err := pki.Plan(pki.Inputs{
		Namespace:         "clusters-demo",
		Labels:            map[string]string{component.ComponentLabel: "pki"},
		ClusterName:       "clusters-demo",
		EtcdServer:        pki.Names{DNSNames: []string{"etcd-client"}},
		EtcdPeer:          pki.Names{DNSNames: []string{"etcd-0"}},
		KubeAPIServer:     pki.Names{IPAddresses: []net.IP{net.ParseIP("10.96.0.20")}},
		InternalURL:       "https://10.96.0.20:6443",
		ExternalURL:       "https://127.0.0.1:30443",
		ClusterAPICluster: "demo",
	}, nil, time.Now())
	if err != nil {
		t.Fatalf("pki.Plan: %v", err)
	}
	for _, secret := range plan.Secrets {
		add(r.applied, "the PKI", secret)
	}
	return r
}

// kindProblems compares what is rendered with listed, and says what
// differs.
func kindProblems(r rendered, listed []controlplanekinds.Kind) []string {
	byGVK := map[schema.GroupVersionKind]controlplanekinds.Kind{}
	for _, kind := range listed {
		byGVK[kind.GVK] = kind
	}
	var problems []string
	for gvk, who := range r.applied {
		switch kind, ok := byGVK[gvk]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s, rendered by %s, is missing from controlplanekinds.All: the CPO would neither watch it, nor delete it, nor be allowed to apply it", gvk.Kind, strings.Join(who, ", ")))
		case !kind.Applied:
			problems = append(problems, fmt.Sprintf("%s, rendered by %s, is not Applied in controlplanekinds.All: the CPO Role would not let it apply it", gvk.Kind, strings.Join(who, ", ")))
		}
	}
	for gvk, who := range r.made {
		if _, ok := byGVK[gvk]; !ok {
			problems = append(problems, fmt.Sprintf("%s, made from %s, is missing from controlplanekinds.All: the CPO would neither watch nor read it", gvk.Kind, strings.Join(who, ", ")))
		}
	}
	for _, kind := range listed {
		if kind.Applied && r.applied[kind.GVK] == nil {
			problems = append(problems, fmt.Sprintf("controlplanekinds.All lists %s as applied, which no component nor the PKI renders", kind.GVK.Kind))
		}
		if !kind.Applied && r.made[kind.GVK] == nil {
			problems = append(problems, fmt.Sprintf("controlplanekinds.All lists %s as made from what the CPO renders, which nothing rendered makes", kind.GVK.Kind))
		}
	}
	slices.Sort(problems)
	return problems
}
