package get

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"

	"github.com/hypershift-le/hypershift/support/leasestate"
)

// observer judges Leases by the changes this command sees, on its own
// clock (leasestate's rule), never by renewTime, which the holder writes on
// its clock. A single listing sees each Lease once: a held Lease is then
// neither valid nor expired as far as the command can tell. With --watch
// the command keeps looking: a Lease it sees change is valid until it goes
// its lease duration without another change, and one it sees unchanged for
// its lease duration has expired.
type observer struct {
	seen map[string]sighting
}

// sighting is the version of one Lease the command saw last.
type sighting struct {
	leasestate.Sighting
	// afterAnother is set when the command saw this version replace an
	// earlier one: the Lease was written while it looked.
	afterAnother bool
}

// judge records lease as seen at now and returns its validity: false
// without a holder or once expired, true once seen written within its
// lease duration, nil (unknown) otherwise.
func (o *observer) judge(lease *coordinationv1.Lease, now time.Time) *bool {
	if leasestate.Holder(lease) == "" {
		return ptr.To(false)
	}
	if o.seen == nil {
		o.seen = map[string]sighting{}
	}
	key := lease.Namespace + "/" + lease.Name
	last, ok := o.seen[key]
	var lastSighting *leasestate.Sighting
	if ok {
		lastSighting = &last.Sighting
	}
	// A Lease that declares no duration expires at once.
	s, changed := leasestate.See(lastSighting, lease, now, 0)
	if changed {
		last = sighting{Sighting: s, afterAnother: ok}
		o.seen[key] = last
	}
	switch {
	case last.Expired(now):
		return ptr.To(false)
	case last.afterAnother:
		return ptr.To(true)
	}
	return nil
}

// forget drops a Lease the command saw go missing.
func (o *observer) forget(namespace, name string) {
	delete(o.seen, namespace+"/"+name)
}
