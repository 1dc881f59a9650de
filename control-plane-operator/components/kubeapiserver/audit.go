package kubeapiserver

import (
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/yaml"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/auditlogs"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
)

const (
	// AuditConfigMap holds the kube-apiserver's audit policy, under
	// AuditPolicyKey, and the profile it was made from, under
	// AuditProfileKey.
	AuditConfigMap = "kube-apiserver-audit"
	// AuditPolicyKey is the policy's key in AuditConfigMap.
	AuditPolicyKey = "policy.yaml"
	// AuditProfileKey is the profile's key in AuditConfigMap.
	AuditProfileKey = "profile"

	// AuditLogDir is where the kube-apiserver writes its audit log, in
	// its pod's audit-logs volume.
	AuditLogDir = "/var/log/kube-apiserver"
	// AuditLogPath is the audit log; rotated files are kept beside it as
	// audit-<time>.log.
	AuditLogPath = AuditLogDir + "/audit.log"
	// AuditLogMaxSizeMB is the size at which the log is rotated.
	AuditLogMaxSizeMB = 100
	// AuditLogMaxBackups is how many rotated files are kept: the volume
	// holds about (1 + AuditLogMaxBackups) * AuditLogMaxSizeMB.
	AuditLogMaxBackups = 1

	// AuditLogsContainer is the container that copies the audit log to
	// its standard output.
	AuditLogsContainer = "audit-logs"
	// AuditLogsImageTag is the payload's image of AuditLogsContainer,
	// which holds the control-plane-operator.
	AuditLogsImageTag = "hypershift"

	auditPolicyDir = "/etc/kubernetes/audit"
)

// AuditProfile is the audit profile of a HostedControlPlane:
// spec.configuration.apiServer.audit.profile, Default when unset.
func AuditProfile(hcp *hyperv1.HostedControlPlane) configv1.Audit {
	cfg := hcp.Spec.Configuration
	if cfg == nil || cfg.APIServer == nil {
		return configv1.Audit{Profile: configv1.DefaultAuditProfileType}
	}
	audit := *cfg.APIServer.Audit.DeepCopy()
	if audit.Profile == "" {
		audit.Profile = configv1.DefaultAuditProfileType
	}
	return audit
}

// AuditEnabled reports whether the kube-apiserver writes an audit log: it
// does unless the profile is None (custom rules then cannot bring it back,
// as in OpenShift: None turns auditing off).
func AuditEnabled(audit configv1.Audit) bool {
	return audit.Profile != configv1.NoneAuditProfileType
}

// AuditPolicy is the audit policy of audit, OpenShift's profiles for a
// Kubernetes API server:
//
//   - Default logs every request at Metadata level: who did what to which
//     object, when, and with what result, but no bodies;
//   - WriteRequestBodies also logs the request and response bodies of
//     writes (create, update, patch, delete, deletecollection);
//   - AllRequestBodies logs the bodies of reads too;
//   - None logs nothing.
//
// At every profile, the bodies of Secrets, ConfigMaps, token requests and
// token reviews are never logged (they carry credentials), and neither
// are health checks and API discovery. Each custom rule applies its
// profile to the members of its group, the first matching rule winning,
// before the top-level profile applies to everyone else.
func AuditPolicy(audit configv1.Audit) *auditv1.Policy {
	policy := &auditv1.Policy{
		TypeMeta:          metav1.TypeMeta{APIVersion: auditv1.SchemeGroupVersion.String(), Kind: "Policy"},
		OmitStages:        []auditv1.Stage{auditv1.StageRequestReceived},
		OmitManagedFields: true,
	}
	if !AuditEnabled(audit) {
		policy.Rules = []auditv1.PolicyRule{{Level: auditv1.LevelNone}}
		return policy
	}
	policy.Rules = []auditv1.PolicyRule{{
		Level:           auditv1.LevelNone,
		UserGroups:      []string{"system:authenticated", "system:unauthenticated"},
		NonResourceURLs: []string{"/api*", "/version", "/healthz", "/readyz", "/livez"},
	}}
	for _, custom := range audit.CustomRules {
		for _, rule := range profileRules(custom.Profile) {
			rule.UserGroups = []string{custom.Group}
			policy.Rules = append(policy.Rules, rule)
		}
	}
	policy.Rules = append(policy.Rules, profileRules(audit.Profile)...)
	return policy
}

// sensitiveResources are the resources whose bodies hold credentials.
var sensitiveResources = []auditv1.GroupResources{
	{Group: "", Resources: []string{"secrets", "configmaps", "serviceaccounts/token"}},
	{Group: "authentication.k8s.io", Resources: []string{"tokenreviews"}},
}

// writeVerbs are the verbs WriteRequestBodies logs the bodies of.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// profileRules are the rules of one profile, for everyone.
func profileRules(profile configv1.AuditProfileType) []auditv1.PolicyRule {
	metadata := auditv1.PolicyRule{Level: auditv1.LevelMetadata}
	sensitive := auditv1.PolicyRule{Level: auditv1.LevelMetadata, Resources: sensitiveResources}
	// Events are written all the time by every controller; their bodies
	// say nothing an audit needs.
	events := auditv1.PolicyRule{Level: auditv1.LevelNone, Resources: []auditv1.GroupResources{
		{Group: "", Resources: []string{"events"}}, {Group: "events.k8s.io", Resources: []string{"events"}},
	}}
	switch profile {
	case configv1.NoneAuditProfileType:
		return []auditv1.PolicyRule{{Level: auditv1.LevelNone}}
	case configv1.WriteRequestBodiesAuditProfileType:
		return []auditv1.PolicyRule{events, sensitive, {Level: auditv1.LevelRequestResponse, Verbs: writeVerbs}, metadata}
	case configv1.AllRequestBodiesAuditProfileType:
		return []auditv1.PolicyRule{events, sensitive, {Level: auditv1.LevelRequestResponse}}
	default:
		return []auditv1.PolicyRule{metadata}
	}
}

// auditConfigMap is the ConfigMap of the policy of audit.
func auditConfigMap(hcp *hyperv1.HostedControlPlane, audit configv1.Audit) (*corev1.ConfigMap, error) {
	policy, err := yaml.Marshal(AuditPolicy(audit))
	if err != nil {
		return nil, fmt.Errorf("failed to encode the audit policy: %w", err)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: component.ObjectMeta(hcp, Name, AuditConfigMap),
		Data:       map[string]string{AuditPolicyKey: string(policy), AuditProfileKey: string(audit.Profile)},
	}, nil
}

// auditArgs are the kube-apiserver's audit flags: none when the profile
// is None.
func auditArgs(audit configv1.Audit) []string {
	if !AuditEnabled(audit) {
		return nil
	}
	return []string{
		"--audit-policy-file=" + auditPolicyDir + "/" + AuditPolicyKey,
		"--audit-log-path=" + AuditLogPath,
		"--audit-log-format=json",
		fmt.Sprintf("--audit-log-maxsize=%d", AuditLogMaxSizeMB),
		fmt.Sprintf("--audit-log-maxbackup=%d", AuditLogMaxBackups),
	}
}

// withAuditLog mounts the audit policy and the log's volume into the
// kube-apiserver, pod.Containers[0], and adds the audit-logs container,
// which copies the log to its standard output, so that `kubectl logs
// <pod> -c audit-logs` shows it.
func withAuditLog(in component.Inputs, pod *corev1.PodSpec) error {
	image, err := in.Image(Name, AuditLogsImageTag)
	if err != nil {
		return err
	}
	pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts,
		component.Mount("audit-policy", auditPolicyDir),
		corev1.VolumeMount{Name: "audit-logs", MountPath: AuditLogDir})
	res, err := in.Resources(Name, AuditLogsContainer, AuditLogsResources)
	if err != nil {
		return err
	}
	sidecar := component.Container(AuditLogsContainer, image, []string{"/usr/bin/control-plane-operator"},
		[]string{auditlogs.CommandName, "--path=" + AuditLogPath}, res)
	sidecar.Env = nil
	sidecar.VolumeMounts = []corev1.VolumeMount{component.Mount("audit-logs", AuditLogDir)}
	pod.Containers = append(pod.Containers, sidecar)
	pod.Volumes = append(pod.Volumes,
		component.ConfigMapVolume("audit-policy", AuditConfigMap, AuditPolicyKey),
		corev1.Volume{Name: "audit-logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	return nil
}
