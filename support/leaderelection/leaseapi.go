package leaderelection

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// leaseAPI is what the elector asks of the API server, for one Lease.
type leaseAPI interface {
	Get(ctx context.Context) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	// Update must be preconditioned on lease's resourceVersion.
	Update(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	// List returns the Lease (nil when missing) and the list's resourceVersion.
	List(ctx context.Context) (*coordinationv1.Lease, string, error)
	Watch(ctx context.Context, resourceVersion string) (watch.Interface, error)
}

// clientAPI is leaseAPI over a typed client.
type clientAPI struct {
	leases coordinationv1client.LeaseInterface
	name   string
}

func (c clientAPI) Get(ctx context.Context) (*coordinationv1.Lease, error) {
	return c.leases.Get(ctx, c.name, metav1.GetOptions{})
}

func (c clientAPI) Create(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return c.leases.Create(ctx, lease, metav1.CreateOptions{})
}

func (c clientAPI) Update(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return c.leases.Update(ctx, lease, metav1.UpdateOptions{})
}

func (c clientAPI) selector() string {
	return fields.OneTermEqualSelector("metadata.name", c.name).String()
}

func (c clientAPI) List(ctx context.Context) (*coordinationv1.Lease, string, error) {
	list, err := c.leases.List(ctx, metav1.ListOptions{FieldSelector: c.selector()})
	if err != nil {
		return nil, "", err
	}
	for i := range list.Items {
		if list.Items[i].Name == c.name {
			return &list.Items[i], list.ResourceVersion, nil
		}
	}
	return nil, list.ResourceVersion, nil
}

func (c clientAPI) Watch(ctx context.Context, resourceVersion string) (watch.Interface, error) {
	return c.leases.Watch(ctx, metav1.ListOptions{
		FieldSelector:       c.selector(),
		ResourceVersion:     resourceVersion,
		AllowWatchBookmarks: true,
	})
}
