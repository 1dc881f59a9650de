package leaderelection

import (
	"context"
	"strconv"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// fakeAPI is an in-memory Lease with the API server's compare-and-swap on
// resourceVersion and a watch, for unit tests of the elector's decisions.
// The envtest tests run the same elector against a real API server.
type fakeAPI struct {
	mu       sync.Mutex
	lease    *coordinationv1.Lease
	rv       int
	watchers []*watch.RaceFreeFakeWatcher
	muted    bool
	calls    []string
	// fail, when set for a verb, is returned instead of doing it.
	fail map[string]error
}

var leaseGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func newFakeAPI() *fakeAPI { return &fakeAPI{fail: map[string]error{}} }

func (f *fakeAPI) record(verb string) error {
	f.calls = append(f.calls, verb)
	return f.fail[verb]
}

// count returns how many calls of verb were made.
func (f *fakeAPI) count(verb string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == verb {
			n++
		}
	}
	return n
}

func (f *fakeAPI) setFail(verb string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[verb] = err
}

func (f *fakeAPI) current() *coordinationv1.Lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease == nil {
		return nil
	}
	return f.lease.DeepCopy()
}

func (f *fakeAPI) notify(t watch.EventType, lease *coordinationv1.Lease) {
	if f.muted {
		return
	}
	for _, w := range f.watchers {
		w.Action(t, lease.DeepCopy())
	}
}

// mute drops every later watch event: a watch that misses changes.
func (f *fakeAPI) mute() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.muted = true
}

// write stores lease as another client would (no precondition).
func (f *fakeAPI) write(mutate func(*coordinationv1.Lease)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := watch.Modified
	if f.lease == nil {
		f.lease, t = &coordinationv1.Lease{}, watch.Added
		f.lease.Name, f.lease.Namespace = "lease", "ns"
	}
	mutate(f.lease)
	f.rv++
	f.lease.ResourceVersion = strconv.Itoa(f.rv)
	f.notify(t, f.lease)
}

func (f *fakeAPI) Get(context.Context) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("get"); err != nil {
		return nil, err
	}
	if f.lease == nil {
		return nil, apierrors.NewNotFound(leaseGR, "lease")
	}
	return f.lease.DeepCopy(), nil
}

func (f *fakeAPI) Create(_ context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("create"); err != nil {
		return nil, err
	}
	if f.lease != nil {
		return nil, apierrors.NewAlreadyExists(leaseGR, lease.Name)
	}
	f.rv++
	f.lease = lease.DeepCopy()
	f.lease.ResourceVersion = strconv.Itoa(f.rv)
	f.notify(watch.Added, f.lease)
	return f.lease.DeepCopy(), nil
}

func (f *fakeAPI) Update(_ context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("update"); err != nil {
		return nil, err
	}
	if f.lease == nil {
		return nil, apierrors.NewNotFound(leaseGR, lease.Name)
	}
	if lease.ResourceVersion != f.lease.ResourceVersion {
		return nil, apierrors.NewConflict(leaseGR, lease.Name, nil)
	}
	f.rv++
	f.lease = lease.DeepCopy()
	f.lease.ResourceVersion = strconv.Itoa(f.rv)
	f.notify(watch.Modified, f.lease)
	return f.lease.DeepCopy(), nil
}

func (f *fakeAPI) List(context.Context) (*coordinationv1.Lease, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("list"); err != nil {
		return nil, "", err
	}
	rv := strconv.Itoa(f.rv)
	if f.lease == nil {
		return nil, rv, nil
	}
	return f.lease.DeepCopy(), rv, nil
}

func (f *fakeAPI) Watch(context.Context, string) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("watch"); err != nil {
		return nil, err
	}
	w := watch.NewRaceFreeFake()
	f.watchers = append(f.watchers, w)
	return w, nil
}

func (f *fakeAPI) delete() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	gone := f.lease.DeepCopy()
	gone.ResourceVersion = strconv.Itoa(f.rv)
	f.lease = nil
	f.notify(watch.Deleted, gone)
}

// expire ends every watch with 410 Expired, as when the API server no
// longer has the watched resourceVersion.
func (f *fakeAPI) expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watchers {
		w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired})
	}
}

// breakWatches ends every watch, as when the connection to the API server
// drops.
func (f *fakeAPI) breakWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watchers {
		w.Stop()
	}
	f.watchers = nil
}
