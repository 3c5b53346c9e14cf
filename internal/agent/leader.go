package agent

import (
	"context"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// RunLeaderElection campaigns for the leader Lease namespace/name until ctx
// ends, calling setLeader on every change. Leadership lost is campaigned for
// again; on ctx end a held Lease is released so another replica takes over at
// once. The Lease must exist or the client must be allowed to create it
// (deploy/ creates it, so the agent needs only get and update on it).
func RunLeaderElection(ctx context.Context, client kubernetes.Interface, c Config, namespace, identity string, setLeader func(bool), log *slog.Logger) error {
	lk := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: c.LeaderElectionID},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lk,
			LeaseDuration:   c.LeaderElectLeaseDuration,
			RenewDeadline:   c.LeaderElectRenewDeadline,
			RetryPeriod:     c.LeaderElectRetryPeriod,
			ReleaseOnCancel: true,
			Name:            "rebootwatch-agent",
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					log.Info("leader election: became the leader", "lease", namespace+"/"+c.LeaderElectionID, "identity", identity)
					setLeader(true)
				},
				OnStoppedLeading: func() {
					setLeader(false)
					log.Warn("leader election: not the leader", "lease", namespace+"/"+c.LeaderElectionID, "identity", identity)
				},
				OnNewLeader: func(id string) {
					if id != identity {
						log.Info("leader election: another agent leads", "lease", namespace+"/"+c.LeaderElectionID, "leader", id)
					}
				},
			},
		})
		if err != nil {
			return err
		}
		le.Run(ctx)
		if ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(c.LeaderElectRetryPeriod):
			}
		}
	}
	return nil
}
