package ids

import (
	"sort"
	"testing"
)

func TestNewMatchesSeedPattern(t *testing.T) {
	for _, p := range []string{LoadBalancer, Pool, Project, Subnet, Certificate} {
		id := New(p)
		if !Valid(p, id) {
			t.Fatalf("New(%q) = %q does not match the seed pattern", p, id)
		}
	}
	if Valid(LoadBalancer, "plb_01ARZ3NDEKTSV4RRFFQ69G5FAV") {
		t.Fatal("upper-case id accepted")
	}
	if Valid(LoadBalancer, "plb_01arz3ndektsv4rrffq69g5fau") { // 'u' is not Crockford
		t.Fatal("id with u accepted")
	}
}

func TestNewIsMonotonic(t *testing.T) {
	got := make([]string, 1000)
	for i := range got {
		got[i] = New(LoadBalancer)
	}
	if !sort.StringsAreSorted(got) {
		t.Fatal("ids made in sequence do not sort in sequence")
	}
}
