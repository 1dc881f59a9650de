package hostednetwork

import (
	"testing"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

func TestDNSAddress(t *testing.T) {
	for cidr, want := range map[string]string{
		"172.31.0.0/16": "172.31.0.10",
		"10.96.0.0/12":  "10.96.0.10",
		"fd02::/112":    "fd02::a",
		"192.0.2.0/29":  "", // eight addresses: no tenth
		"not-a-cidr":    "",
	} {
		got, err := DNSAddress([]hyperv1.ServiceNetworkEntry{{CIDR: cidr}})
		switch {
		case want == "" && err == nil:
			t.Errorf("%s: got %s, want an error", cidr, got)
		case want != "" && (err != nil || got.String() != want):
			t.Errorf("%s: got %s, %v; want %s", cidr, got, err, want)
		}
	}
	if _, err := DNSAddress(nil); err == nil {
		t.Error("no Service network: want an error")
	}
}
