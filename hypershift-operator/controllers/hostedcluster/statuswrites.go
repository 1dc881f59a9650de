package hostedcluster

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// statusWrites remembers, per HostedCluster (by uid), the resourceVersion
// of this process's last status write, until a pass starts from a copy at
// or past it.
//
// The HO's own status writes start no pass (notOnlyStatus), and the cache
// may not have received a write when the next pass starts (an event of
// another object, moments later). A pass that started from the copy its
// write replaced, and found what that copy's status says, would write
// nothing: the API server would keep the newer status, wrong by then, with
// no pass to come. So a pass whose cached copy is older than this
// process's last write starts from the API server's copy instead (one GET,
// only then). resourceVersions are compared as the API server defines
// them for one resource (k8s.io/apimachinery's resourceversion); one that
// does not compare (a storage without integer versions) counts as behind.
type statusWrites struct {
	last sync.Map // types.UID -> string
}

// wrote records hc's resourceVersion after this process wrote its status.
func (w *statusWrites) wrote(hc *hyperv1.HostedCluster) {
	w.last.Store(hc.UID, hc.ResourceVersion)
}

// forget drops what is known of the HostedCluster uid.
func (w *statusWrites) forget(uid types.UID) {
	w.last.Delete(uid)
}

// behind reports whether hc, a cached copy, predates this process's last
// status write of it; a copy at or past it ends the record.
func (w *statusWrites) behind(hc *hyperv1.HostedCluster) bool {
	v, ok := w.last.Load(hc.UID)
	if !ok {
		return false
	}
	written := v.(string)
	if cmp, err := resourceversion.CompareResourceVersion(hc.ResourceVersion, written); err == nil && cmp >= 0 {
		w.last.CompareAndDelete(hc.UID, written)
		return false
	}
	return true
}

// current returns hc, read from the cache into it, or from the API server
// when the cache has not received this process's last status write.
func (r *Reconciler) current(ctx context.Context, key client.ObjectKey, hc *hyperv1.HostedCluster) error {
	if err := r.Client.Get(ctx, key, hc); err != nil || !r.statusWrites.behind(hc) {
		return err
	}
	uid := hc.UID
	if err := r.APIReader.Get(ctx, key, hc); err != nil {
		return fmt.Errorf("failed to read HostedCluster %s past a cache that lacks the last status write: %w", key, err)
	}
	r.statusWrites.forget(uid)
	return nil
}
