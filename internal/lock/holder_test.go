package lock

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

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

// zincatiRef is ZincatiNodeID as crypto/hmac computes it.
func zincatiRef(machineID string) (string, error) {
	key, err := normalMachineID(machineID)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write(zincatiAppID)
	sum := m.Sum(nil)[:16]
	sum[6] = (sum[6] & 0x0F) | 0x40
	sum[8] = (sum[8] & 0x3F) | 0x80
	return hex.EncodeToString(sum), nil
}

// FuzzZincatiNodeID: ZincatiNodeID gives crypto/hmac's id, or an error
// exactly when it does, for any machine id.
func FuzzZincatiNodeID(f *testing.F) {
	for _, s := range []string{"1c09ca98649c4c7abc779cd04c96812e", "1C09CA98-649C-4C7A-BC77-9CD04C96812E", " 1c09ca98649c4c7abc779cd04c96812e\n",
		"00000000000000000000000000000000", "ffffffffffffffffffffffffffffffff", "FfFfFfFfFfFfFfFfFfFfFfFfFfFfFfFf", "", "xyz",
		"1c09ca98649c4c7abc779cd04c96812", "zc09ca98649c4c7abc779cd04c96812e", "1c09ca98649c4c7abc779cd04c96812g", "--------------------------------"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		got, err := ZincatiNodeID(id)
		want, werr := zincatiRef(id)
		if (err != nil) != (werr != nil) || got != want {
			t.Errorf("ZincatiNodeID(%q) = %q, %v; crypto/hmac: %q, %v", id, got, err, want, werr)
		}
	})
}

// BenchmarkZincatiNodeID is one node's id, as the fleetlock holder index
// computes it for every node once (then caches it). Run with
//
//	go test -run '^$' -bench ZincatiNodeID -benchmem ./internal/lock/
func BenchmarkZincatiNodeID(b *testing.B) {
	ids := make([]string, 5000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%032x", i)
	}
	for _, impl := range []struct {
		name string
		f    func(string) (string, error)
	}{{"crypto/hmac", zincatiRef}, {"ZincatiNodeID", ZincatiNodeID}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := impl.f(ids[i%len(ids)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
