package kubeapiserver

import (
	"errors"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	apiserveraudit "k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/component/componenttest"
	"github.com/hypershift-le/hypershift/support/testutil"
)

var profiles = []configv1.AuditProfileType{
	configv1.DefaultAuditProfileType, configv1.WriteRequestBodiesAuditProfileType,
	configv1.AllRequestBodiesAuditProfileType, configv1.NoneAuditProfileType,
}

// withAudit returns fixed inputs whose HostedControlPlane asks for audit;
// a nil audit leaves spec.configuration out.
func withAudit(audit *configv1.Audit) component.Inputs {
	in := componenttest.Inputs(hyperv1.SingleReplica)
	if audit != nil {
		in.HostedControlPlane.Spec.Configuration = &hyperv1.ClusterConfiguration{APIServer: &configv1.APIServerSpec{Audit: *audit}}
	}
	return in
}

// render renders the kube-apiserver's Deployment and audit ConfigMap.
func render(t *testing.T, in component.Inputs) (*appsv1.Deployment, *corev1.ConfigMap) {
	t.Helper()
	w, err := Component{}.Workload(in)
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	for _, obj := range w.Extras {
		if c, ok := obj.(*corev1.ConfigMap); ok && c.Name == AuditConfigMap {
			cm = c
		}
	}
	if cm == nil {
		t.Fatalf("no ConfigMap %s among %d extras", AuditConfigMap, len(w.Extras))
	}
	return w.Object.(*appsv1.Deployment), cm
}

func TestAuditPolicyGolden(t *testing.T) {
	cases := map[string]configv1.Audit{}
	for _, p := range profiles {
		cases[strings.ToLower(string(p))] = configv1.Audit{Profile: p}
	}
	cases["customrules"] = configv1.Audit{Profile: configv1.DefaultAuditProfileType, CustomRules: []configv1.AuditCustomRule{
		{Group: "system:authenticated:oauth", Profile: configv1.WriteRequestBodiesAuditProfileType},
		{Group: "system:serviceaccounts", Profile: configv1.NoneAuditProfileType},
	}}
	for name, audit := range cases {
		t.Run(name, func(t *testing.T) {
			_, cm := render(t, withAudit(&audit))
			testutil.CompareBytesWithGolden(t, "auditpolicy/"+name+".yaml", []byte(cm.Data[AuditPolicyKey]))
			if cm.Data[AuditProfileKey] != string(audit.Profile) {
				t.Errorf("profile key %q, want %q", cm.Data[AuditProfileKey], audit.Profile)
			}
		})
	}
}

// request is what the API server's policy evaluator judges.
type request struct {
	name     string
	groups   []string
	verb     string
	group    string
	resource string
	sub      string
	path     string
}

func (r request) attributes() authorizer.Attributes {
	groups := append([]string{"system:authenticated"}, r.groups...)
	attrs := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice", Groups: groups}, Verb: r.verb}
	if r.path != "" {
		attrs.Path = r.path
		return attrs
	}
	attrs.ResourceRequest, attrs.APIGroup, attrs.APIVersion, attrs.Resource, attrs.Subresource = true, r.group, "v1", r.resource, r.sub
	attrs.Namespace, attrs.Name = "default", "x"
	return attrs
}

// TestAuditPolicyLevels judges requests with the API server's own policy
// evaluator, on the policy the ConfigMap holds (which the API server's
// loader must accept): bodies are logged as the profile says, and never
// those of Secrets, ConfigMaps, token requests and token reviews.
func TestAuditPolicyLevels(t *testing.T) {
	const none, meta, body = auditinternal.LevelNone, auditinternal.LevelMetadata, auditinternal.LevelRequestResponse
	tests := []struct {
		req  request
		want map[configv1.AuditProfileType]auditinternal.Level
	}{
		{request{name: "create a service account", verb: "create", resource: "serviceaccounts"}, levels(meta, body, body)},
		{request{name: "patch a deployment", verb: "patch", group: "apps", resource: "deployments"}, levels(meta, body, body)},
		{request{name: "delete a role", verb: "delete", group: "rbac.authorization.k8s.io", resource: "roles"}, levels(meta, body, body)},
		{request{name: "get a service account", verb: "get", resource: "serviceaccounts"}, levels(meta, meta, body)},
		{request{name: "list pods", verb: "list", resource: "pods"}, levels(meta, meta, body)},
		{request{name: "create a secret", verb: "create", resource: "secrets"}, levels(meta, meta, meta)},
		{request{name: "get a secret", verb: "get", resource: "secrets"}, levels(meta, meta, meta)},
		{request{name: "update a config map", verb: "update", resource: "configmaps"}, levels(meta, meta, meta)},
		{request{name: "request a token", verb: "create", resource: "serviceaccounts", sub: "token"}, levels(meta, meta, meta)},
		{request{name: "review a token", verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"}, levels(meta, meta, meta)},
		{request{name: "create an event", verb: "create", resource: "events"}, levels(meta, none, none)},
		{request{name: "check health", verb: "get", path: "/readyz"}, levels(none, none, none)},
		{request{name: "discover the API", verb: "get", path: "/apis/apps/v1"}, levels(none, none, none)},
		{request{name: "read metrics", verb: "get", path: "/metrics"}, levels(meta, meta, body)},
	}
	for _, profile := range profiles {
		evaluator := evaluator(t, configv1.Audit{Profile: profile})
		for _, tt := range tests {
			t.Run(string(profile)+"/"+tt.req.name, func(t *testing.T) {
				if got := evaluator.EvaluatePolicyRule(tt.req.attributes()).Level; got != tt.want[profile] {
					t.Errorf("level %s, want %s", got, tt.want[profile])
				}
			})
		}
	}
}

// levels are the levels of Default, WriteRequestBodies and
// AllRequestBodies; None logs nothing.
func levels(def, write, all auditinternal.Level) map[configv1.AuditProfileType]auditinternal.Level {
	return map[configv1.AuditProfileType]auditinternal.Level{
		configv1.DefaultAuditProfileType: def, configv1.WriteRequestBodiesAuditProfileType: write,
		configv1.AllRequestBodiesAuditProfileType: all, configv1.NoneAuditProfileType: auditinternal.LevelNone,
	}
}

func evaluator(t *testing.T, audit configv1.Audit) apiserveraudit.PolicyRuleEvaluator {
	t.Helper()
	_, cm := render(t, withAudit(&audit))
	p, err := policy.LoadPolicyFromBytes([]byte(cm.Data[AuditPolicyKey]))
	if err != nil {
		t.Fatalf("the API server refuses the policy: %v", err)
	}
	return policy.NewPolicyRuleEvaluator(p)
}

// TestAuditCustomRulesApplyToTheirGroupFirst: the first custom rule whose
// group the user is in decides; everyone else gets the top-level profile.
func TestAuditCustomRulesApplyToTheirGroupFirst(t *testing.T) {
	e := evaluator(t, configv1.Audit{Profile: configv1.DefaultAuditProfileType, CustomRules: []configv1.AuditCustomRule{
		{Group: "auditors", Profile: configv1.AllRequestBodiesAuditProfileType},
		{Group: "system:serviceaccounts", Profile: configv1.NoneAuditProfileType},
		{Group: "auditors-too", Profile: configv1.WriteRequestBodiesAuditProfileType},
	}})
	tests := []struct {
		req  request
		want auditinternal.Level
	}{
		{request{name: "an auditor's read", groups: []string{"auditors"}, verb: "get", resource: "pods"}, auditinternal.LevelRequestResponse},
		{request{name: "an auditor's read of a secret", groups: []string{"auditors"}, verb: "get", resource: "secrets"}, auditinternal.LevelMetadata},
		{request{name: "a service account's write", groups: []string{"system:serviceaccounts"}, verb: "create", resource: "pods"}, auditinternal.LevelNone},
		{request{name: "a member of both, first rule wins", groups: []string{"system:serviceaccounts", "auditors"}, verb: "get", resource: "pods"}, auditinternal.LevelRequestResponse},
		{request{name: "a later rule's member", groups: []string{"auditors-too"}, verb: "get", resource: "pods"}, auditinternal.LevelMetadata},
		{request{name: "anyone else's write", verb: "create", resource: "pods"}, auditinternal.LevelMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.req.name, func(t *testing.T) {
			if got := e.EvaluatePolicyRule(tt.req.attributes()).Level; got != tt.want {
				t.Errorf("level %s, want %s", got, tt.want)
			}
		})
	}
}

// TestAuditLogIsWrittenUnlessTheProfileIsNone: with a profile, the
// kube-apiserver gets the audit flags, the policy and a volume for the
// log, which the audit-logs container reads; with None, none of that.
// Without spec.configuration, the profile is Default.
func TestAuditLogIsWrittenUnlessTheProfileIsNone(t *testing.T) {
	for _, profile := range append(profiles, "") {
		t.Run("profile "+string(profile), func(t *testing.T) {
			in := withAudit(&configv1.Audit{Profile: profile})
			if profile == "" {
				in = withAudit(nil)
			}
			d, _ := render(t, in)
			pod := d.Spec.Template.Spec
			args := pod.Containers[0].Args
			hasFlag := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--audit-") })
			hasSidecar := slices.ContainsFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == AuditLogsContainer })
			hasVolume := slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "audit-logs" })
			want := profile != configv1.NoneAuditProfileType
			if hasFlag != want || hasSidecar != want || hasVolume != want {
				t.Fatalf("audit flags %t, audit-logs container %t, log volume %t; want %t", hasFlag, hasSidecar, hasVolume, want)
			}
			if !want {
				return
			}
			for _, flag := range []string{
				"--audit-policy-file=/etc/kubernetes/audit/policy.yaml",
				"--audit-log-path=/var/log/kube-apiserver/audit.log",
				"--audit-log-maxsize=100",
				"--audit-log-maxbackup=1",
			} {
				if !slices.Contains(args, flag) {
					t.Errorf("args lack %s", flag)
				}
			}
			if sidecar := pod.Containers[1]; !slices.Contains(sidecar.Args, "--path="+AuditLogPath) || sidecar.VolumeMounts[0].MountPath != AuditLogDir {
				t.Errorf("the audit-logs container does not read %s: %v %v", AuditLogPath, sidecar.Args, sidecar.VolumeMounts)
			}
		})
	}
}

// TestAProfileChangeRollsThePods: the kube-apiserver reads its policy at
// start only, so the pod template changes with the profile.
func TestAProfileChangeRollsThePods(t *testing.T) {
	seen := map[string]configv1.AuditProfileType{}
	for _, profile := range profiles {
		d, _ := render(t, withAudit(&configv1.Audit{Profile: profile}))
		hash := d.Spec.Template.Annotations[component.ConfigHashAnnotation]
		if hash == "" {
			t.Fatalf("%s: no %s annotation", profile, component.ConfigHashAnnotation)
		}
		if other, ok := seen[hash]; ok {
			t.Errorf("%s and %s give the same pod template hash", other, profile)
		}
		seen[hash] = profile
	}
	custom := configv1.Audit{Profile: configv1.DefaultAuditProfileType, CustomRules: []configv1.AuditCustomRule{{Group: "auditors", Profile: configv1.AllRequestBodiesAuditProfileType}}}
	d, _ := render(t, withAudit(&custom))
	if _, ok := seen[d.Spec.Template.Annotations[component.ConfigHashAnnotation]]; ok {
		t.Error("a custom rule leaves the pod template hash unchanged")
	}
}

// TestAuditLogsNeedTheHypershiftImage: a payload without the image of the
// audit-logs container stops the rollout with a clear error, unless the
// profile is None.
func TestAuditLogsNeedTheHypershiftImage(t *testing.T) {
	in := withAudit(nil)
	delete(in.Release.ComponentImages, AuditLogsImageTag)
	var missing *component.MissingImageError
	if _, err := (Component{}).Workload(in); !errors.As(err, &missing) {
		t.Fatalf("error = %v, want a MissingImageError", err)
	}
	in = withAudit(&configv1.Audit{Profile: configv1.NoneAuditProfileType})
	delete(in.Release.ComponentImages, AuditLogsImageTag)
	if _, err := (Component{}).Workload(in); err != nil {
		t.Fatalf("with profile None: %v", err)
	}
}
