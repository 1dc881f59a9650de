package main

import (
	"strings"

	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubecontrollermanager"
)

// lever is one setting of a hosted control plane's kube-apiserver, etcd
// or kube-controller-manager: flags, or the Go runtime's environment.
type lever struct {
	name string
	// what is the setting, as the report shows it.
	what string
	// apiServerFlags, etcdFlags and controllerManagerFlags are each
	// program's flags, by name without the dashes.
	apiServerFlags, etcdFlags, controllerManagerFlags map[string]string
	// env is set for all three processes.
	env map[string]string
}

// anchor is the control plane with every default but what a hosted
// cluster's runs with for its function: the kube-apiserver with every API
// group on, the watch cache on with its default sizes, priority and
// fairness on; etcd with its defaults; kube-controller-manager running the
// controllers the control-plane-operator renders, each with its own
// ServiceAccount's credentials; Go's collector at GOGC=100 (the
// control-plane-operator renders GOGC=50 for the kube-apiserver,
// kubeapiserver.DefaultGOGC, since this benchmark measured it).
var anchor = lever{name: "anchor", what: "no lever (the anchor)"}

// trimmedControllers are the default controllers less those a hosted
// cluster can start without: no cloud, no metrics, no quota, no CronJob,
// PodDisruptionBudget or expanding volume in use yet. Measured, not
// shipped: each is a Kubernetes feature a user of the hosted cluster may
// count on (conformance tests several).
var trimmedControllers = kubecontrollermanager.Controllers + ",-horizontal-pod-autoscaler-controller,-resourcequota-controller,-cronjob-controller,-ttl-after-finished-controller," +
	"-disruption-controller,-replicationcontroller-controller,-endpointslice-mirroring-controller,-persistentvolume-expander-controller,-ephemeral-volume-controller," +
	"-storageversion-garbage-collector-controller,-legacy-serviceaccount-token-cleaner-controller,-validatingadmissionpolicy-status-controller,-selinux-warning-controller"

// levers are measured one at a time against the anchor.
var levers = []lever{
	{name: "gogc75", what: "GOGC=75", env: map[string]string{"GOGC": "75"}},
	{name: "gogc50", what: "GOGC=50", env: map[string]string{"GOGC": "50"}},
	{name: "gogc25", what: "GOGC=25", env: map[string]string{"GOGC": "25"}},
	{name: "apf-off", what: "kube-apiserver --enable-priority-and-fairness=false", apiServerFlags: map[string]string{"enable-priority-and-fairness": "false"}},
	{name: "watch-cache-off", what: "kube-apiserver --watch-cache=false", apiServerFlags: map[string]string{"watch-cache": "false"}},
	{name: "events-cache-off", what: "kube-apiserver --watch-cache-sizes=events#0,events.events.k8s.io#0", apiServerFlags: map[string]string{"watch-cache-sizes": "events#0,events.events.k8s.io#0"}},
	{name: "dra-off", what: "kube-apiserver --runtime-config=resource.k8s.io/v1=false", apiServerFlags: map[string]string{"runtime-config": "resource.k8s.io/v1=false"}},
	{name: "etcd-snapshot-1000", what: "etcd --snapshot-count=1000 --snapshot-catchup-entries=500", etcdFlags: map[string]string{"snapshot-count": "1000", "snapshot-catchup-entries": "500"}},
	{name: "etcd-quota-256mi", what: "etcd --quota-backend-bytes=256Mi", etcdFlags: map[string]string{"quota-backend-bytes": "268435456"}},
	{name: "kcm-trimmed", what: "kube-controller-manager without HPA, quota, cronjob, ttl-after-finished, disruption, replicationcontroller, endpointslice-mirroring, volume expander and ephemeral volume, storage-version GC, legacy token cleaner, policy status, SELinux warning controllers",
		controllerManagerFlags: map[string]string{"controllers": trimmedControllers}},
	{name: "kcm-no-gc-quota", what: "kube-controller-manager without the garbage collector and quota controllers (the two that watch every resource)",
		controllerManagerFlags: map[string]string{"controllers": kubecontrollermanager.Controllers + ",-garbage-collector-controller,-resourcequota-controller"}},
}

func leverNames() string {
	names := make([]string, 0, len(levers))
	for _, l := range levers {
		names = append(names, l.name)
	}
	return strings.Join(names, ", ")
}
