package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/rebootwatch/rebootwatch/internal/buildinfo"
	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/kubeclient"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/internal/notify"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/kube"
	"github.com/rebootwatch/rebootwatch/sources/longhorn"
	"github.com/rebootwatch/rebootwatch/sources/prometheus"
	"github.com/rebootwatch/rebootwatch/sources/sourceset"
)

// Main runs rebootwatch-agent with args (without the program name): the
// agent's composition root (cmd/rebootwatch-agent only calls it). It returns
// the exit code: 0 after a clean stop, 1 when the agent cannot start (no
// cluster configuration, a port in use), 2 for bad flags.
func Main(args []string, stdout, stderr io.Writer) int {
	return run(args, stdout, stderr, os.Getenv, rest.InClusterConfig, setGCPercent(os.Getenv))
}

// agentGCPercent is the agent's GC target unless GOGC says otherwise: the
// heap may grow by a quarter of what it keeps before the next collection,
// instead of the runtime's doubling (docs/agent.md, "Memory").
const agentGCPercent = 25

// setGCPercent sets the GC target to agentGCPercent unless the environment
// sets GOGC (which the runtime has then applied), and returns the target in
// force: the environment's GOGC as given, else agentGCPercent.
func setGCPercent(getenv func(string) string) string {
	if v := getenv("GOGC"); v != "" {
		return v
	}
	debug.SetGCPercent(agentGCPercent)
	return strconv.Itoa(agentGCPercent)
}

// run is Main with its environment, its in-cluster configuration and the GC
// target in force (setGCPercent's answer, for the startup log) given.
func run(args []string, stdout, stderr io.Writer, getenv func(string) string, inCluster func() (*rest.Config, error), gcPercent string) int {
	cfg, err := ParseFlags(args, stdout)
	switch {
	case errors.Is(err, ErrHelp):
		return 0
	case errors.Is(err, ErrVersion):
		fmt.Fprintln(stdout, buildinfo.Read().Text("rebootwatch-agent"))
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "rebootwatch-agent:", err)
		fmt.Fprintln(stderr, "rebootwatch-agent --help lists the flags")
		return 2
	}
	log := NewLogger(stdout, cfg.LogLevel)
	klog.SetSlogLogger(log) // client-go's own lines become JSON too
	fail := func(msg string, err error) int {
		log.Error(msg, "error", err.Error())
		fmt.Fprintf(stderr, "rebootwatch-agent: %s: %v\n", msg, err)
		return 1
	}

	if cfg.ReclaimStartupPages {
		reclaimStartupPages(log, "start")
	}

	restCfg, origin, err := LoadRESTConfig(cfg, getenv, inCluster)
	if err != nil {
		return fail("cannot configure the Kubernetes client", err)
	}
	metrics := NewMetrics()
	apiCfg := WithErrorCounting(restCfg, func(verb string) { metrics.APIErrors.WithLabelValues(verb).Inc() })
	watchCfg := kubeclient.WatchConfig(apiCfg, cfg.RequestTimeout)
	client, err := kubernetes.NewForConfig(apiCfg)
	if err != nil {
		return fail("cannot build the Kubernetes client", err)
	}
	// The informers' built-in types travel as protobuf (nodes at a fraction
	// of JSON's decoding cost), Longhorn's volumes as JSON decoded straight
	// into small structs (sources/longhorn).
	watchClient, err := kubernetes.NewForConfig(kubeclient.ProtobufConfig(watchCfg))
	if err != nil {
		return fail("cannot build the Kubernetes client", err)
	}
	dyn, err := dynamic.NewForConfig(watchCfg)
	if err != nil {
		return fail("cannot build the dynamic client", err)
	}
	longhornREST, err := longhorn.NewREST(watchCfg)
	if err != nil {
		return fail("cannot build the Longhorn client", err)
	}

	// Notify URLs carry tokens: an invalid one is reported by position and
	// service only, and the URLs are never logged.
	notifier, err := notify.New(notify.Options{URLs: cfg.NotifyURLs, Timeout: cfg.RequestTimeout,
		Registerer: metrics.Registry, Log: log, Prefix: "rebootwatch-agent:"})
	if err != nil {
		fmt.Fprintln(stderr, "rebootwatch-agent:", err)
		return 2
	}
	notifier.SetBlockedAfter(cfg.NotifyBlockedAfter)

	health := NewHealth(time.Now, cfg.Interval)
	srv, err := Listen(cfg.HealthProbeBindAddress, cfg.MetricsBindAddress, health, metrics)
	if err != nil {
		return fail("cannot listen", err)
	}

	namespace := ResolveNamespace(cfg.LeaderElectionNamespace, getenv, os.ReadFile)
	identity := Identity(getenv, randomSuffix())
	var coordinators func(context.Context, time.Time) []kinds.Result
	if cfg.Coordinators.Observed() {
		coordinators = func(ctx context.Context, now time.Time) []kinds.Result {
			return cfg.Coordinators.ReadAll(ctx, coord.Clients{Kube: client, Dynamic: dyn, Drain: kube.DrainRead(client)}, now)
		}
	}
	a := New(&Agent{
		Coordinators: coordinators,
		Config:       cfg,
		Log:          log,
		Identity:     identity,
		Client:       client,
		Engine:       lock.New(lock.Options{OrphanGrace: cfg.OrphanGrace, Unattended: true}),
		Actor: &lock.Actor{Client: client, Who: "rebootwatch-agent/" + identity, DryRun: cfg.DryRun, FieldManager: coord.AgentFieldManager,
			Logger: log, Timeout: cfg.RequestTimeout, Fresh: sourceset.FreshReaders(sourceOptions(cfg, watchClient, dyn, longhornREST, log))},
		Sources: sourceStarters(cfg, watchClient, dyn, longhornREST, log),
		Health:  health,
		Metrics: metrics,
		Notify:  notifier,
	})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log.Info("starting", "config", origin, "identity", identity, "leaderElect", cfg.LeaderElect,
		"leaderLease", namespace+"/"+cfg.LeaderElectionID, "interval", cfg.Interval.String(),
		"requestTimeout", cfg.RequestTimeout.String(), "dryRun", cfg.DryRun, "reapGhost", cfg.ReapGhost,
		"reapExpired", cfg.ReapExpired, "releaseOrphaned", cfg.ReleaseOrphaned, "orphanGrace", cfg.OrphanGrace.String(),
		"kured", cfg.Kured, "kuredDaemonSet", cfg.KuredDaemonSet, "fleetlock", cfg.Fleetlock, "fleetlockNamespace", cfg.FleetlockNamespace,
		"coordinators", cfg.Coordinators.String(),
		"prometheusURL", sanitize.MaskURL(cfg.PrometheusURL), "prometheusAlerts", cfg.PrometheusAlerts,
		"alertGate", AlertGateDecision(cfg),
		"notifyTargets", notifier.Targets(), "notifyBlockedAfter", cfg.NotifyBlockedAfter.String(),
		"reclaimStartupPages", cfg.ReclaimStartupPages, "gcPercent", gcPercent,
		"healthAddress", srv.HealthAddr, "metricsAddress", srv.MetricsAddr)

	electionDone := make(chan struct{})
	if cfg.LeaderElect {
		go func() {
			defer close(electionDone)
			if err := RunLeaderElection(ctx, client, cfg, namespace, identity, a.SetLeader, log); err != nil {
				log.Error("leader election cannot run", "error", err.Error())
				stop()
			}
		}()
	} else {
		close(electionDone)
	}

	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(ctx) }()
	code := 0
	select {
	case err := <-runErr:
		if err != nil {
			code = fail("agent stopped", err)
		}
	case err := <-srv.Err():
		code = fail("health/metrics server failed", err)
	}
	stop()
	// Let leader election release the Lease so another replica takes over at once.
	select {
	case <-electionDone:
	case <-time.After(cfg.RequestTimeout):
		log.Warn("leader Lease not released in time; another replica takes over when it expires")
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutdownCtx)
	log.Info("stopped", "identity", identity)
	return code
}

// sourceStarters wires the agent to the one list of sources a live session
// starts too (sources/sourceset): nodes, locks, PodDisruptionBudgets and pods,
// Longhorn, and Prometheus (--prometheus-url, else kured's own).
func sourceStarters(cfg Config, client kubernetes.Interface, dyn dynamic.Interface, longhornREST rest.Interface, log *slog.Logger) []Starter {
	return []Starter{{
		Name: "sources",
		Start: func(ctx context.Context, sink func(model.Event)) (Source, error) {
			return sourceset.Start(ctx, sourceOptions(cfg, client, dyn, longhornREST, log), sink)
		},
	}}
}

// sourceOptions are the options of the agent's sources, which its actor's
// fresh read before a write reads again (sourceset.FreshReaders).
func sourceOptions(cfg Config, client kubernetes.Interface, dyn dynamic.Interface, longhornREST rest.Interface, log *slog.Logger) sourceset.Options {
	return sourceset.Options{
		Client: client, Dynamic: dyn, LonghornREST: longhornREST, RequestTimeout: cfg.RequestTimeout,
		KuredDaemonSet: cfg.KuredDaemonSet, FleetlockNamespace: cfg.FleetlockNamespace, Disabled: cfg.DisabledKinds(),
		Prometheus: prometheus.Options{URL: cfg.PrometheusURL, AlertFilter: cfg.PrometheusAlerts,
			BearerTokenFile: cfg.PrometheusTokenFile},
		Logger: log,
	}
}

// AlertGateDecision says, for the startup log, what the blocking-alert gate
// will do with this configuration: without a filter it passes every action,
// and that is a decision the operator should see, not a silent default.
func AlertGateDecision(cfg Config) string {
	switch {
	case cfg.PrometheusURL == "":
		return "kured's or off: no --prometheus-url, so kured's own (--prometheus-url and --alert-filter-regexp of its DaemonSet) is used once the DaemonSet is read; without those the alert gate passes every action"
	case cfg.PrometheusAlerts == "":
		return "off: no --prometheus-alerts (Prometheus is read for kured_reboot_required only); the alert gate passes every action"
	}
	return "on: actions are refused while an alert matching --prometheus-alerts fires, or while Prometheus cannot answer"
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
