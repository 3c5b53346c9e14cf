package model

// AlertsFiring replaces the list of firing Prometheus alerts that block
// reboots (those matching kured's alert filter regexp): the alert gate. An
// empty list means none fire. It is sent only when an alert filter is set.
type AlertsFiring struct{ Names []string }

func (AlertsFiring) isEvent() {}

// FiringAlerts returns the blocking alerts that fire, and whether that is
// known at all (an alert filter is set and Prometheus answered).
func (c *Cluster) FiringAlerts() (names []string, known bool) {
	return c.alerts, c.alertsOK
}
