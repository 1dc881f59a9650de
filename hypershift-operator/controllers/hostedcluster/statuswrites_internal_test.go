package hostedcluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

func TestStatusWritesBehind(t *testing.T) {
	copyAt := func(rv string) *hyperv1.HostedCluster {
		return &hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{UID: "uid-1", ResourceVersion: rv}}
	}
	var w statusWrites
	if w.behind(copyAt("5")) {
		t.Fatal("a copy with no write of this process recorded is behind")
	}
	w.wrote(copyAt("100"))
	// Compared as integers, not as strings: "99" < "100".
	for _, rv := range []string{"99", "5"} {
		if !w.behind(copyAt(rv)) {
			t.Fatalf("a copy at %s, before the write at 100, is not behind", rv)
		}
	}
	if !w.behind(copyAt("not-a-number")) {
		t.Fatal("a copy whose resourceVersion does not compare is not behind")
	}
	// A copy at the write, or past it (someone else's write since), ends
	// the record: later copies are not compared again.
	if w.behind(copyAt("100")) {
		t.Fatal("the copy at the write is behind")
	}
	if w.behind(copyAt("99")) {
		t.Fatal("the record outlived a copy at the write")
	}
	w.wrote(copyAt("200"))
	if w.behind(copyAt("1000")) {
		t.Fatal("a copy past the write is behind")
	}
	w.wrote(copyAt("300"))
	w.forget("uid-1")
	if w.behind(copyAt("299")) {
		t.Fatal("a forgotten HostedCluster's copy is behind")
	}
}
