package model

// AlertsFiring replaces the list of firing Prometheus alerts that block
// reboots (those matching kured's alert filter regexp): the alert gate. An
// empty list means none fire. It is sent only when an alert filter is set;
// Unknown says the filter is set but Prometheus has not answered yet.
type AlertsFiring struct {
	Names   []string
	Unknown bool
	// From says whose filter decides which alerts block: the user's
	// --prometheus-alerts, or kured's own settings read from its DaemonSet.
	From string
	// Off says no alert gate is configured any more (kured's DaemonSet lost
	// its --prometheus-url): the filter and its last answer are forgotten.
	Off bool
}

func (AlertsFiring) isEvent() {}

// FiringAlerts returns the blocking alerts that fire, and whether that is
// known at all (an alert filter is set and Prometheus answered).
func (c *Cluster) FiringAlerts() (names []string, known bool) {
	return c.alerts, c.alertsOK
}

// AlertFilterFrom says whose blocking-alert filter is in use ("" unknown).
func (c *Cluster) AlertFilterFrom() string { return c.alertFrom }

// AlertFilterSet reports whether a blocking-alert filter is configured.
func (c *Cluster) AlertFilterSet() bool { return c.alertFilter }
