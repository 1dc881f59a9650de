package install

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/utils/ptr"
)

// LeaderElectionFlowName names both the FlowSchema and the
// PriorityLevelConfiguration that carry leader-election Lease traffic.
const LeaderElectionFlowName = "hypershift-leader-election"

// leaderElectionPrecedence places the FlowSchema after every FlowSchema the
// API server suggests for its own components (system-leader-election 100,
// workload-leader-election 200, system-node-high 400, system-nodes 500,
// kube-controller-manager and kube-scheduler 800, kube-system-service-accounts
// 900) and before service-accounts (9000), global-default (9900) and
// catch-all (10000).
const leaderElectionPrecedence = 1000

// leaderElectionVerbs are what a Lease-based elector sends for its own
// Lease: client-go's lock gets, creates and updates it; the project's
// elector (support/leaderelection) also lists and watches it, by name, to
// learn of every renewal without polling.
var leaderElectionVerbs = []string{"get", "list", "watch", "create", "update"}

// leaderElectionFlowSchema routes the requests of leader election on Leases
// by ServiceAccounts to the priority level of leaderElectionPriorityLevel,
// so that a control-plane-operator (CPO) or the hypershift-operator (HO) can
// renew its Lease, and its standbys keep watching it, while other clients'
// lists saturate the API server; a renewal starved past the renew deadline
// would otherwise end the leader and stall its hosted cluster.
//
// Why it matches by the group system:serviceaccounts: every hosted cluster's
// CPO runs as ServiceAccount control-plane-operator in its own control-plane
// namespace, which exists only once the HostedCluster does, and a
// ServiceAccount subject of a FlowSchema needs an exact namespace (only the
// name may be "*"). A cluster-scoped, install-time object can therefore only
// name the CPOs by the group every ServiceAccount belongs to, and narrow the
// traffic by resourceRules instead: the verbs of leader election, on
// leases.coordination.k8s.io, in a namespace (clusterScope false, so a list
// or watch of Leases across all namespaces is not matched). Because the
// subject is the group, the HO (ServiceAccount hypershift-operator in the
// install namespace) is matched too, so the object does not depend on the
// install namespace and one FlowSchema serves every installation.
//
// What else it matches: the namespaced get, list, watch, create and update
// of Leases by every other ServiceAccount of the management cluster whose
// request no FlowSchema of lower matchingPrecedence claims first (the
// kube-system ServiceAccounts stay with the built-in system-leader-election,
// workload-leader-election and kube-system-service-accounts, nodes stay
// with system-node-high; a platform's own FlowSchemas below 1000 keep
// theirs). That is other operators' leader election: traffic of the same
// kind, small and periodic, which gains the same protection; one that
// floods only fills the queues its namespace hashes to. It does not
// match the HO's Lease informer (a list and watch across all namespaces,
// which stays with service-accounts, where a large list belongs), nor
// patch or delete, nor anything but Leases, nor users that are not
// ServiceAccounts (an HO run with --development on a developer's machine
// keeps its usual flow).
func leaderElectionFlowSchema(labels map[string]string) *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: flowcontrolv1.SchemeGroupVersion.String(), Kind: "FlowSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: LeaderElectionFlowName, Labels: labels},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: LeaderElectionFlowName},
			MatchingPrecedence:         leaderElectionPrecedence,
			// By namespace: each control plane has its own, so a namespace
			// whose clients flood their Lease shares queues with few others.
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByNamespaceType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{
					Kind:  flowcontrolv1.SubjectKindGroup,
					Group: &flowcontrolv1.GroupSubject{Name: serviceaccount.AllServiceAccountsGroup},
				}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs:      leaderElectionVerbs,
					APIGroups:  []string{coordinationv1.GroupName},
					Resources:  []string{"leases"},
					Namespaces: []string{flowcontrolv1.NamespaceEvery},
					// Namespaced requests only.
					ClusterScope: false,
				}},
			}},
		},
	}
}

// leaderElectionPriorityLevel is a priority level of its own for Lease
// renewals, so that no other flow, and no borrower, takes its seats.
//
// The numbers: a leader writes its Lease once per renew interval (about
// twice a minute with the project's defaults, four times with client-go's
// 15s retry period) and its standbys read it once per retry period (or, with
// the project's elector, only open a watch), so even 1000 hosted clusters
// send some tens of requests a second, each done in milliseconds: about one
// seat in use on average. 10 nominal concurrency shares, the size of the API
// server's own leader-election level, come to about 24 seats of the default
// 600 (400 read-only plus 200 mutating) next to the suggested levels' 245
// shares: a wide margin for a slow etcd, costing the other levels about 4%
// of their seats. LendablePercent 0 keeps those seats free for Lease
// traffic even while every other level is saturated (they cannot be
// borrowed); borrowing from idle levels stays allowed. Requests beyond the
// seats wait in 64 queues of up to 50; with the namespace as the flow and a
// hand of 6 queues, a namespace that floods fills at most 6 queues, and
// another namespace finds all of its 6 among them with a chance of 1 in
// C(64,6), about 1 in 75 million.
func leaderElectionPriorityLevel(labels map[string]string) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: flowcontrolv1.SchemeGroupVersion.String(), Kind: "PriorityLevelConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: LeaderElectionFlowName, Labels: labels},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](10),
				LendablePercent:          ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{
					Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{
						Queues:           64,
						HandSize:         6,
						QueueLengthLimit: 50,
					},
				},
			},
		},
	}
}
