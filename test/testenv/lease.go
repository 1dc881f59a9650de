package testenv

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Holder returns the holder of the Lease namespace/name: "" when the Lease
// names nobody, does not exist or cannot be read now, since callers poll
// it while operators start, stop and hand over.
func (e *Env) Holder(t testing.TB, namespace, name string) string {
	lease := &coordinationv1.Lease{}
	if err := e.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, lease); err != nil {
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}
