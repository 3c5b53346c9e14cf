package sourceset

import (
	"context"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/kube"
	"github.com/rebootwatch/rebootwatch/sources/longhorn"
	"github.com/rebootwatch/rebootwatch/sources/prometheus"
)

// FreshReaders are the reads the lock engine's actor makes before each
// write (lock.Actor.Fresh), from the same options as the sources Start
// starts: each source's own one-shot read, a quorum read made just now (or
// a Prometheus query), of what the gates read — the nodes, the lock objects
// (with kured's settings), Longhorn's volumes and the blocking alerts, the
// latter of the user's Prometheus when one is given, else of kured's own
// (the --prometheus-url and alert settings of kured's judged DaemonSet, as
// Start's Prometheus source uses them).
func FreshReaders(o Options) lock.FreshReaders {
	return lock.FreshReaders{
		Nodes: func(ctx context.Context, labelSelector string) ([]model.Node, error) {
			return kube.ReadNodes(ctx, o.Client, labelSelector)
		},
		Locks: func(ctx context.Context) ([]model.LockObject, error) {
			return kube.ReadLocks(ctx, o.Client, o.KuredDaemonSet, o.FleetlockNamespace, o.Disabled)
		},
		Volumes: func(ctx context.Context) ([]model.Volume, bool, error) {
			return longhorn.ReadVolumes(ctx, longhorn.Options{Client: o.Dynamic, REST: o.LonghornREST,
				RequestTimeout: o.RequestTimeout, Logger: o.Logger})
		},
		Alerts: func(ctx context.Context, kured *kured.Config) ([]string, bool, error) {
			po := o.Prometheus
			if po.RequestTimeout <= 0 {
				po.RequestTimeout = o.RequestTimeout
			}
			switch {
			case o.NoPrometheus:
				return nil, false, nil
			case po.URL == "" && po.AlertFilter == "":
				if kured == nil || kured.PrometheusURL == "" {
					return nil, false, nil
				}
				po.URL = kured.PrometheusURL
				po.KuredAlerts = &prometheus.KuredAlerts{Filter: kured.AlertFilterRegexp, MatchOnly: kured.AlertFilterMatchOnly, FiringOnly: kured.AlertFiringOnly}
			}
			return prometheus.QueryAlerts(ctx, po)
		},
	}
}
