package kubeapiserver

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/podspec"
	"github.com/hypershift-le/hypershift/support/resources"
)

// Where the kube-apiserver finds its certificates and keys.
const (
	servingDir        = "/etc/kubernetes/certs/server"
	clientCADir       = "/etc/kubernetes/certs/client-ca"
	etcdClientDir     = "/etc/kubernetes/certs/etcd-client"
	serviceAccountDir = "/etc/kubernetes/secrets/service-account"
	kubeletClientDir  = "/etc/kubernetes/certs/kubelet-client"
	encryptionDir     = "/etc/kubernetes/secrets/encryption"

	// ServiceAccountIssuer is the issuer of the hosted cluster's
	// service-account tokens.
	ServiceAccountIssuer = "https://kubernetes.default.svc"
)

// Resources are each replica's: its working set is 171 MiB p50 idle with
// DefaultGOGC (make bench-controlplanes, 10 control planes; 209 MiB with
// Go's default in the run before it on the same machine; VmRSS 297 MiB,
// which counts its mapped binary too). The request keeps the room it had
// over the 197-212 MiB measured before; the limit is about six times the
// working set, for lists and watches of a busy cluster, and its Go
// runtime is told to stay under 80% of it (support/resources.GoRuntimeEnv). The CPU request is what a
// converged kube-apiserver pod used, 31-32m with its audit-logs container
// (make bench-controlplanes, 10 control planes, mean over 2 minutes), with
// room; no CPU limit: it starts (about 7 s of CPU) and serves bursts on
// what the node has spare.
var Resources = resources.Defaults{CPU: "40m", Memory: "256Mi", MemoryLimit: "1Gi"}

// DefaultGOGC is the kube-apiserver's GOGC unless the HostedCluster's
// hypershift.openshift.io/kube-apiserver-gogc annotation says otherwise:
// its heap may grow by half its live size between collections, not by all
// of it. Measured one setting at a time against Go's 100 (make
// bench-levers: a bare kube-apiserver with a few hundred objects
// and a watch on every resource, two runs): its anonymous memory (heap
// and stacks) 0.79-0.80 of the anchor's (about 152 against 192 MiB); its
// CPU to start 1.04-1.26 of the anchor's (noise about 20%) and to take the
// load 1.11. 75 saves less (0.87-0.88); 25 saves more (0.70) for about
// 1.6 times the CPU. The other levers (priority and fairness off, the
// watch cache off, an unused API group off) saved 0-6%, within the noise.
// The limit-derived GOMEMLIMIT stays the backstop for a busy cluster.
const DefaultGOGC = "50"

// ShutdownDelay is how long a kube-apiserver asked to stop keeps serving
// (its /readyz failing) before it closes its listener: a pod being deleted
// leaves its Service's EndpointSlice at once, but kube-proxy on each node
// rewrites its rules a moment later (within its 1 s minimum sync period on
// an idle node), and a connection it sends to a closed listener is refused
// (seen in a drain: 1 of 184 requests). Ten seconds covers a busy node
// several times over, and is what each pod's deletion costs.
const ShutdownDelay = 10 * time.Second

// WatchDrain is how long, after the delay, it gives its watches to end
// before it stops: without it, its HTTP server waits the whole shutdown
// timeout (60 s) for their connections, and the pod is killed at the end
// of its grace period (a drain waited 72 s for one kube-apiserver pod;
// with it, the process exits about a second after the delay).
const WatchDrain = 5 * time.Second

// requestsDrain is how long, after the delay, it may finish the requests
// in flight before it is killed: most end in milliseconds, and one that
// waits on an etcd going away with it (its namespace deleted) would hold
// the pod for its whole request timeout (60 s), and every teardown with
// it. Delay and drain make the pod's grace period, 30 s, Kubernetes'
// default.
const requestsDrain = 20 * time.Second

// AuditLogsResources are the audit-logs container's: a copy loop of a few
// MiB.
var AuditLogsResources = resources.Defaults{CPU: "1m", Memory: "16Mi", MemoryLimit: "64Mi"}

// Workload implements component.Component.
func (Component) Workload(in component.Inputs) (*component.Workload, error) {
	hcp := in.HostedControlPlane
	image, err := in.Image(Name, ImageTag)
	if err != nil {
		return nil, err
	}
	etcdURL, err := etcd.ClientURL(in)
	if err != nil {
		return nil, err
	}
	audit := AuditProfile(hcp)
	auditConfig, err := auditConfigMap(hcp, audit)
	if err != nil {
		return nil, err
	}
	res, err := in.Resources(Name, Name, Resources)
	if err != nil {
		return nil, err
	}
	goRuntime, err := resources.GoRuntimeEnv(hcp.Annotations, hyperv1.KubeAPIServerGoMemoryLimitAnnotation, hyperv1.KubeAPIServerGOGCAnnotation, DefaultGOGC, res)
	if err != nil {
		return nil, err
	}
	container := component.Container(Name, image, []string{"/usr/bin/kube-apiserver"}, append(args(in, etcdURL), auditArgs(audit)...), res)
	container.Env = append(container.Env, goRuntime...)
	container.Ports = []corev1.ContainerPort{component.TCPPort("https", Port)}
	// Alive whether or not etcd answers: restarting the kube-apiserver
	// does not bring etcd back, and a single replica restarted just as its
	// etcd returns (a lost node back after a minute) refuses every request
	// a while longer. Ready only with etcd. Started once ready the first
	// time, so Ready a second after it first serves.
	container.StartupProbe = podspec.StartupProbe("/readyz", "https", corev1.URISchemeHTTPS)
	container.LivenessProbe = podspec.HTTPProbe("/livez?exclude=etcd", "https", corev1.URISchemeHTTPS, 0, 10, 6)
	container.ReadinessProbe = podspec.HTTPProbe("/readyz", "https", corev1.URISchemeHTTPS, 0, 5, 3)
	container.VolumeMounts = []corev1.VolumeMount{
		component.Mount("serving-cert", servingDir),
		component.Mount("client-ca", clientCADir),
		component.Mount("etcd-client", etcdClientDir),
		component.Mount("service-account-key", serviceAccountDir),
		component.Mount("kubelet-client", kubeletClientDir),
		component.Mount("encryption-config", encryptionDir),
	}
	pod := component.PodSpec(hcp, container,
		component.SecretVolume("serving-cert", pki.KubeAPIServerSecret),
		component.SecretVolume("client-ca", pki.RootCASecret, pki.CACertKey),
		component.SecretVolume("etcd-client", pki.EtcdClientSecret),
		component.SecretVolume("service-account-key", pki.ServiceAccountKeySecret),
		component.SecretVolume("kubelet-client", pki.KubeletClientSecret),
		component.SecretVolume("encryption-config", pki.EncryptionConfigSecret, pki.EncryptionConfigKey))
	pod.TerminationGracePeriodSeconds = ptr.To(int64((ShutdownDelay + requestsDrain).Seconds()))
	if AuditEnabled(audit) {
		if err := withAuditLog(in, &pod); err != nil {
			return nil, err
		}
	}
	replicas := component.Replicas(hcp.Spec.ControllerAvailabilityPolicy, highlyAvailableReplicas)
	w := in.Deployment(Name, replicas, strategy(replicas), pod,
		pki.KubeAPIServerSecret, pki.RootCASecret, pki.EtcdClientSecret, pki.ServiceAccountKeySecret, pki.KubeletClientSecret, pki.EncryptionConfigSecret)
	component.SetConfigHash(&w.Object.(*appsv1.Deployment).Spec.Template.ObjectMeta, auditConfig)
	w.Extras = append([]client.Object{auditConfig}, w.Extras...)
	return w, nil
}

// strategy: with one replica, the new pod is ready before the old one
// goes, so the API keeps serving; with several, one goes before a new one
// comes, so the rollout needs no room beyond the replicas.
func strategy(replicas int32) appsv1.DeploymentStrategy {
	s := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	if replicas > 1 {
		s.RollingUpdate = &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			MaxSurge:       ptr.To(intstr.FromInt32(0)),
		}
	}
	return s
}

// args is the kube-apiserver's command line.
func args(in component.Inputs, etcdURL string) []string {
	hcp := in.HostedControlPlane
	podIP := "$(" + component.PodIPEnv + ")"
	a := []string{
		"--advertise-address=" + podIP,
		"--bind-address=" + podIP,
		fmt.Sprintf("--secure-port=%d", Port),
		"--tls-cert-file=" + servingDir + "/" + pki.TLSCertKey,
		"--tls-private-key-file=" + servingDir + "/" + pki.TLSKeyKey,
		"--client-ca-file=" + clientCADir + "/" + pki.CACertKey,
		"--etcd-servers=" + etcdURL,
		"--etcd-cafile=" + etcdClientDir + "/" + pki.CACertKey,
		"--etcd-certfile=" + etcdClientDir + "/" + pki.TLSCertKey,
		"--etcd-keyfile=" + etcdClientDir + "/" + pki.TLSKeyKey,
		"--service-account-issuer=" + ServiceAccountIssuer,
		"--service-account-key-file=" + serviceAccountDir + "/" + pki.ServiceAccountPublicKeyKey,
		"--service-account-signing-key-file=" + serviceAccountDir + "/" + pki.ServiceAccountPrivateKeyKey,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction,PodSecurity",
		"--allow-privileged=true",
		"--anonymous-auth=true",
		// The hosted cluster's kubernetes Service is not pointed at the
		// pods' addresses, which the hosted cluster cannot reach: the
		// endpoint is published to clients by spec.services instead.
		"--endpoint-reconciler-type=none",
		"--shutdown-delay-duration=" + ShutdownDelay.String(),
		"--shutdown-watch-termination-grace-period=" + WatchDrain.String(),
		// Nodes join with bootstrap tokens (kubelet TLS bootstrap). The
		// kubelets it reaches (logs, exec, port-forward) are verified
		// against the root CA, which kube-controller-manager signs their
		// serving certificates with, by their InternalIP: their host names
		// mean nothing on the management cluster's network.
		"--enable-bootstrap-token-auth=true",
		"--kubelet-certificate-authority=" + clientCADir + "/" + pki.CACertKey,
		"--kubelet-client-certificate=" + kubeletClientDir + "/" + pki.TLSCertKey,
		"--kubelet-client-key=" + kubeletClientDir + "/" + pki.TLSKeyKey,
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		// Secrets are stored encrypted (the PKI keeps the configuration:
		// pki.EncryptionConfiguration); a new configuration rolls the
		// pods, by the Secrets' hash.
		"--encryption-provider-config=" + encryptionDir + "/" + pki.EncryptionConfigKey,
	}
	a = append(a, component.Flag("service-cluster-ip-range", component.ServiceNetwork(hcp))...)
	return append(a, component.Flag("feature-gates", component.FeatureGates(hcp))...)
}
