package fleetlock

import "testing"

func TestZincatiNodeIDVector(t *testing.T) {
	got, err := ZincatiNodeID("1c09ca98649c4c7abc779cd04c96812e")
	if err != nil {
		t.Fatal(err)
	}
	if want := "978a225b3d7b40e9acd7ce9b62f68444"; got != want {
		t.Fatalf("ZincatiNodeID = %s, want %s", got, want)
	}
	up, _ := ZincatiNodeID("1C09CA98-649C-4C7A-BC77-9CD04C96812E")
	if up != got {
		t.Fatalf("upper-case dashed machine id gave %s, want %s", up, got)
	}
	for _, bad := range []string{"", "xyz", "1c09ca98649c4c7abc779cd04c96812", "zc09ca98649c4c7abc779cd04c96812e"} {
		if _, err := ZincatiNodeID(bad); err == nil {
			t.Errorf("ZincatiNodeID(%q) gave no error", bad)
		}
	}
}
