package model

import (
	"testing"
	"time"
)

func TestAlertsFiring(t *testing.T) {
	c := NewCluster("t", Options{})
	if _, known := c.FiringAlerts(); known {
		t.Fatal("alerts known before any AlertsFiring")
	}
	names := []string{"NodeDown"}
	c.Apply(AlertsFiring{Names: names}, time.Unix(0, 0))
	names[0] = "changed"
	got, known := c.FiringAlerts()
	if !known || len(got) != 1 || got[0] != "NodeDown" {
		t.Fatalf("got %v known=%v", got, known)
	}
	c.Apply(AlertsFiring{}, time.Unix(1, 0))
	if got, known := c.FiringAlerts(); !known || len(got) != 0 {
		t.Fatalf("after clear: %v known=%v", got, known)
	}
}
