package hostedcluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// nodePortIndex indexes HostedClusters by the APIServer node port they ask
// for in spec.services (none when the management cluster allocates one).
const nodePortIndex = "apiServerNodePort"

func nodePortKey(hc *hyperv1.HostedCluster) string {
	if port := hyperv1.APIServerNodePort(hc.Spec.Services); port != 0 {
		return strconv.Itoa(int(port))
	}
	return ""
}

func indexNodePorts(ctx context.Context, mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &hyperv1.HostedCluster{}, nodePortIndex, func(obj client.Object) []string {
		if key := nodePortKey(obj.(*hyperv1.HostedCluster)); key != "" {
			return []string{key}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("failed to index HostedClusters by node port: %w", err)
	}
	return nil
}

// reconcileNodePort refuses, before anything is created for it, a
// HostedCluster that asks for an APIServer node port another HostedCluster
// holds, naming that cluster: the API server would refuse the second
// kube-apiserver Service in words that name neither cluster. The holder is
// the one whose endpoint has the port, else the one created first. The
// refused cluster waits on its user (ValidConfiguration=False,
// NodePortConflict, one event) and hears at once when the other lets the
// port go (clustersOnNodePort). Whether the port is in the management
// cluster's range only its API server knows, when the Service is created:
// the control-plane-operator reports that refusal (RefusedByAPIServer).
func (r *Reconciler) reconcileNodePort(ctx context.Context, s *scope) (ctrl.Result, error) {
	key := nodePortKey(s.hc)
	if key == "" {
		return ctrl.Result{}, nil
	}
	list := &hyperv1.HostedClusterList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{nodePortIndex: key}); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to list the HostedClusters on node port %s: %w", key, err)
	}
	port := hyperv1.APIServerNodePort(s.hc.Spec.Services)
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == s.hc.UID || !holdsNodePort(other, s.hc, port) {
			continue
		}
		message := hyperv1.NodePortConflictMessage(port, other.Namespace+"/"+other.Name)
		return ctrl.Result{}, s.block(hyperv1.ValidConfiguration, hyperv1.NodePortConflictReason, message, waitsOnUser, errors.New(message))
	}
	return ctrl.Result{}, nil
}

// holdsNodePort reports whether other, rather than hc, holds port: the one
// whose endpoint shows the port; when both or neither do, the one created
// first, then the first by namespace and name.
func holdsNodePort(other, hc *hyperv1.HostedCluster, port int32) bool {
	otherHas, hcHas := endpointPort(other) == port, endpointPort(hc) == port
	if otherHas != hcHas {
		return otherHas
	}
	if !other.CreationTimestamp.Equal(&hc.CreationTimestamp) {
		return other.CreationTimestamp.Before(&hc.CreationTimestamp)
	}
	return other.Namespace+"/"+other.Name < hc.Namespace+"/"+hc.Name
}

func endpointPort(hc *hyperv1.HostedCluster) int32 {
	if hc.Status.ControlPlaneEndpoint == nil {
		return 0
	}
	return hc.Status.ControlPlaneEndpoint.Port
}

// clustersOnNodePort maps a HostedCluster to the others that ask for its
// node port: the one refused learns when the holder is deleted or moves.
func (r *Reconciler) clustersOnNodePort(ctx context.Context, obj client.Object) []reconcile.Request {
	hc, ok := obj.(*hyperv1.HostedCluster)
	if !ok {
		return nil
	}
	key := nodePortKey(hc)
	if key == "" {
		return nil
	}
	list := &hyperv1.HostedClusterList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{nodePortIndex: key}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the HostedClusters on a node port", "nodePort", key)
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].UID != hc.UID {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return requests
}
