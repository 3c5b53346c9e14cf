package lock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// The fresh read before a write (DESIGN §6 rule 3, issues 11 §1 and 22 §1).
//
// A plan is judged on the sources' caches, which follow watches: a frozen or
// black-holed API server, or a watch that stalled while the server still
// answers, leaves them quiet but unchanged, and a stale cache can pass every
// gate. So before it writes, the actor reads again every input of every
// gate, each with a quorum read (resourceVersion unset: the API server
// answers from etcd's current state, or from a cache it first brought up to
// it) or, for Prometheus, a query made now, all at once:
//
//   - the node list (fresh-data, verdict, holder, other-nodes, node): what
//     the gates read of each node;
//   - every lock object the lock sources read (kured's DaemonSets, fleetlock's
//     Leases): their holders (other-nodes) and kured's settings (the release
//     delay of the verdict, the window, the blocking pod selectors, the alert
//     URL and filter). The lock being written is read again by its driver
//     (Apply) with the judged resourceVersion as a precondition, so of that
//     one only the settings are compared here;
//   - Longhorn's volumes (volumes): which are degraded or faulted;
//   - the blocking alerts (alerts), asked of Prometheus now.
//
// PodDisruptionBudgets and pods are read by no gate (only by the blockers
// step), so they are not read here.
//
// What the gates read of any of them that differs from what the plan was
// judged on refuses the action with the fresh-data gate, naming what
// changed; a read that fails, or a source with no reader wired, refuses
// too. Nothing is written then.

// FreshReaders are the quorum reads the actor makes before a write, one per
// source the gates read, injected by the wiring (the sources' own one-shot
// readers: sources/sourceset.FreshReaders) so that this package needs no source.
// Each returns what its source would put in the model.
type FreshReaders struct {
	// Nodes lists every node with these labels ("" every node). nil: the
	// actor lists them through its Client (typed, paged).
	Nodes func(ctx context.Context, labelSelector string) ([]model.Node, error)
	// Locks lists every lock object the lock sources read.
	Locks func(ctx context.Context) ([]model.LockObject, error)
	// Volumes lists every Longhorn volume; installed is false when
	// Longhorn's volumes are not served (no CRD).
	Volumes func(ctx context.Context) (vols []model.Volume, installed bool, err error)
	// Alerts asks Prometheus now which blocking alerts fire, with the
	// settings the alert gate uses (the operator's, else those of kured,
	// whose judged configuration is kured; nil when none was read). filter
	// is false when no blocking-alert filter is configured (nothing asked).
	Alerts func(ctx context.Context, cfg *kured.Config) (names []string, filter bool, err error)
	// LeftCordoned reads the coordinator kinds of internal/coord now, and
	// each judges again, from its fresh read of the nodes and its own
	// records (SUC's jobs and plans, FLUO's annotations and agent pod),
	// whose cordon each node carries: the nodes they left cordoned and those
	// whose cordon is not theirs. An uncordon whose node gate rested on
	// their reading (Plan.LeftBy) is refused without it.
	LeftCordoned func(ctx context.Context) (Cordons, error)
}

// Judged are the inputs of the gates other than the nodes, as the plan was
// judged on them: the actor compares them with its fresh reads.
type Judged struct {
	// Locks are the lock objects of the model.
	Locks []model.LockObject
	// Volumes maps every Longhorn volume (namespace/name) to its
	// robustness.
	Volumes map[string]model.Robustness
	// AlertFilter: a blocking-alert filter was configured; Alerts are the
	// blocking alerts that fired.
	AlertFilter bool
	Alerts      []string
}

// judgedInputs records what the gates read of c besides the nodes.
func judgedInputs(c *model.Cluster) Judged {
	var j Judged
	for _, l := range c.Locks() {
		j.Locks = append(j.Locks, *l)
	}
	vols := c.Volumes()
	j.Volumes = make(map[string]model.Robustness, len(vols))
	for _, v := range vols {
		j.Volumes[v.Key()] = v.Robustness
	}
	j.AlertFilter = c.AlertFilterSet()
	j.Alerts, _ = c.FiringAlerts()
	j.Alerts = append([]string(nil), j.Alerts...)
	return j
}

// kuredConfig is the judged kured configuration whose Prometheus settings
// the alert gate used: of every kured lock object's (one per node pool),
// those they all share (kured.PrometheusOf, as the Prometheus source picks
// them); nil when none sets one or they differ (the source then reads no
// alerts, and neither does the fresh read).
func (j Judged) kuredConfig() *kured.Config {
	var cfgs []*kured.Config
	var names []string
	for _, l := range j.Locks {
		if s, ok := l.Spec.(*kured.Spec); ok && s != nil && s.Config != nil {
			cfgs, names = append(cfgs, s.Config), append(names, l.Namespace+"/"+l.Name)
		}
	}
	cfg, _ := kured.PrometheusOf(cfgs, names)
	return cfg
}

// nodeFacts is what the gates and verdicts read of one node: identity,
// readiness and when it last changed, cordon, boot id and machine id.
func nodeFacts(name, uid string, unschedulable bool, ready string, readySince time.Time, bootID, machineID string) string {
	since := ""
	if !readySince.IsZero() {
		since = readySince.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("uid=%s ready=%s since=%s cordoned=%v boot=%s machine=%s", uid, orDash(ready), orDash(since), unschedulable, orDash(bootID), orDash(machineID))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// judgedNodes returns every node of the model, sorted by name.
func judgedNodes(c *model.Cluster) []model.Node {
	out := make([]model.Node, 0, c.NodeCount())
	for _, name := range c.NodeNames() {
		if n, ok := c.Node(name); ok {
			out = append(out, *n)
		}
	}
	return out
}

// modelFacts returns the facts of judged nodes, by name.
func modelFacts(nodes []model.Node) map[string]string {
	out := make(map[string]string, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		var ready string
		var since time.Time
		for _, cd := range n.Conditions {
			if cd.Type == "Ready" {
				ready, since = cd.Status, cd.LastTransition
			}
		}
		out[n.Name] = nodeFacts(n.Name, n.UID, n.Unschedulable, ready, since, n.BootID, n.MachineID)
	}
	return out
}

// liveNodeFacts returns the facts of one API Node.
func liveNodeFacts(n *corev1.Node) string {
	var ready string
	var since time.Time
	for _, cd := range n.Status.Conditions {
		if cd.Type == corev1.NodeReady {
			ready, since = string(cd.Status), cd.LastTransitionTime.Time
		}
	}
	return nodeFacts(n.Name, string(n.UID), n.Spec.Unschedulable, ready, since, n.Status.NodeInfo.BootID, n.Status.NodeInfo.MachineID)
}

// ReadNodesFresh lists every node with a quorum read and returns their
// facts by name: through Fresh.Nodes when it is set, else through the
// typed client (pages of 500).
func (a *Actor) ReadNodesFresh(ctx context.Context) (map[string]string, error) {
	if a.Fresh.Nodes != nil {
		nodes, err := a.Fresh.Nodes(ctx, a.NodeSelector)
		if err != nil {
			return nil, err
		}
		return modelFacts(nodes), nil
	}
	out := map[string]string{}
	// Pages of one consistent snapshot; resourceVersion unset: a quorum read.
	opts := metav1.ListOptions{Limit: 500, LabelSelector: a.NodeSelector}
	for {
		l, err := a.Client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out[l.Items[i].Name] = liveNodeFacts(&l.Items[i])
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// diffNodes describes how the node list read now differs from the judged
// one ("" when it does not), naming at most a few nodes.
func diffNodes(judged, now map[string]string) string {
	var diffs []string
	for name, f := range judged {
		g, ok := now[name]
		switch {
		case !ok:
			diffs = append(diffs, name+" is gone")
		case g != f:
			diffs = append(diffs, name+" changed ("+changed(f, g)+")")
		}
	}
	for name := range now {
		if _, ok := judged[name]; !ok {
			diffs = append(diffs, name+" is new")
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	sort.Strings(diffs)
	return model.FirstFew(diffs, 5)
}

// changed names the facts that differ: "ready=True → ready=False".
func changed(was, is string) string {
	a, b := strings.Fields(was), strings.Fields(is)
	var out []string
	for i := range a {
		if i < len(b) && a[i] != b[i] {
			out = append(out, a[i]+" → "+b[i])
		}
	}
	return strings.Join(out, ", ")
}

// freshRead is what one fresh read found: the differences from the
// judged input, or why it could not be read.
type freshRead struct {
	diffs     []string
	err       error
	what      string // what was read, for an error: "list nodes"
	forbidden string // the grant a forbidden read needs, "" if it was not forbidden
}

// checkFresh reads every input of the gates fresh, all at once, and
// refuses (ok false) when a read fails or differs from what the plan was
// judged on.
func (a *Actor) checkFresh(ctx context.Context, p Plan) (Result, bool) {
	refuse := func(outcome model.Outcome, format string, args ...any) (Result, bool) {
		return Result{Outcome: outcome, Write: p.Write, Message: fmt.Sprintf("%s refused: %s: %s; nothing written",
			p.Action, GateFreshData, fmt.Sprintf(format, args...))}, false
	}
	if p.Nodes == nil {
		return refuse(model.OutcomeRefused, "the plan carries no judged node list to check against")
	}
	// The reads run at once, each bounded by ctx (the action's timeout);
	// all have ended when checkFresh returns.
	var nodes, locks, vols, alerts freshRead
	var wg sync.WaitGroup
	wg.Go(func() { nodes = a.freshNodes(ctx, p) })
	wg.Go(func() { locks = a.freshLocks(ctx, p) })
	wg.Go(func() { vols = a.freshVolumes(ctx, p) })
	wg.Go(func() { alerts = a.freshAlerts(ctx, p) })
	wg.Wait()

	who := a.Who
	if who == "" {
		who = "this user"
	}
	reads := []freshRead{nodes, locks, vols, alerts}
	for _, r := range reads {
		if r.forbidden != "" {
			return refuse(model.OutcomeForbidden, "forbidden: %s may not %s (the fresh read before a write needs it; grant %s): %v",
				who, r.what, r.forbidden, r.err)
		}
	}
	var why []string
	for _, r := range reads {
		switch {
		case r.err != nil && r.what == "list nodes":
			why = append(why, fmt.Sprintf("could not read the node list fresh for the action (list nodes: %s): the API server may be frozen or unreachable", failure(ctx, r)))
		case r.err != nil:
			why = append(why, fmt.Sprintf("could not %s fresh for the action (%s)", r.what, failure(ctx, r)))
		case len(r.diffs) > 0:
			why = append(why, r.diffs...)
		}
	}
	if len(why) > 0 {
		return refuse(model.OutcomeRefused, "%s — judge again", strings.Join(why, "; "))
	}
	if p.Action == model.ActionUncordon && p.LeftBy != "" {
		node := p.Status.Holder
		if a.Fresh.LeftCordoned == nil {
			return refuse(model.OutcomeRefused, "the node gate rests on a coordinator's reading (%s), which this actor cannot read again", p.LeftBy)
		}
		cs, err := a.Fresh.LeftCordoned(ctx)
		if err != nil {
			return refuse(model.OutcomeRefused, "could not read the coordinator kinds fresh for the action (%v) — judge again", err)
		}
		if why, ok := cs.NotOwned[node]; ok {
			return refuse(model.OutcomeRefused, "read again now, the cordon of %s is not its coordinator's: %s (judged: %s) — judge again", node, why, p.LeftBy)
		}
		if _, ok := cs.Left[node]; !ok {
			return refuse(model.OutcomeRefused, "read again now, no coordinator says it left %s cordoned (judged: %s) — judge again", node, p.LeftBy)
		}
	}
	return Result{}, true
}

// failure says why a fresh read failed, in a few words.
func failure(ctx context.Context, r freshRead) string {
	if ctx.Err() != nil || errors.Is(r.err, context.DeadlineExceeded) || apierrors.IsTimeout(r.err) || apierrors.IsServerTimeout(r.err) {
		return "request timed out"
	}
	return r.err.Error()
}

// failed is a fresh read that could not be made.
func failed(what, grant string, err error) freshRead {
	r := freshRead{what: what, err: err}
	if apierrors.IsForbidden(err) {
		r.forbidden = grant
	}
	return r
}

// freshNodes compares the node list read now with the judged one.
func (a *Actor) freshNodes(ctx context.Context, p Plan) freshRead {
	now, err := a.ReadNodesFresh(ctx)
	if err != nil {
		return failed("list nodes", "list on nodes", err)
	}
	if d := diffNodes(modelFacts(p.Nodes), now); d != "" {
		return freshRead{diffs: []string{"the node list read now differs from the one judged: " + d}}
	}
	return freshRead{}
}

// freshLocks compares every lock object read now with the judged ones: who
// holds each (but the one being written, which its driver's Apply reads
// again with the judged resourceVersion) and the coordinator's settings.
func (a *Actor) freshLocks(ctx context.Context, p Plan) freshRead {
	if a.Fresh.Locks == nil {
		return freshRead{what: "list the lock objects", err: errors.New("no fresh reader of the lock objects is wired")}
	}
	now, err := a.Fresh.Locks(ctx)
	if err != nil {
		return failed("list the lock objects", "list on daemonsets.apps and leases.coordination.k8s.io", err)
	}
	return freshRead{diffs: diffLocks(p.Judged.Locks, now, p.Write.Ref)}
}

// diffLocks describes how the lock objects read now differ from the judged
// ones; of the lock written (ref) only the settings count.
func diffLocks(judged, now []model.LockObject, written model.LockRef) []string {
	was := make(map[model.LockRef]*model.LockObject, len(judged))
	for i := range judged {
		was[judged[i].LockRef] = &judged[i]
	}
	var out []string
	seen := map[model.LockRef]bool{}
	for i := range now {
		l := &now[i]
		seen[l.LockRef] = true
		j, ok := was[l.LockRef]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("lock %s is new (it was not judged)", l.LockRef))
		case j.UID != l.UID:
			out = append(out, fmt.Sprintf("lock %s was replaced (uid %s → %s)", l.LockRef, j.UID, l.UID))
		default:
			if d := specDiff(j.Spec, l.Spec, l.LockRef == written); len(d) > 0 {
				out = append(out, fmt.Sprintf("lock %s changed: %s", l.LockRef, model.FirstFew(d, 5)))
			}
		}
	}
	for i := range judged {
		if !seen[judged[i].LockRef] {
			out = append(out, fmt.Sprintf("lock %s is gone", judged[i].LockRef))
		}
	}
	sort.Strings(out)
	return out
}

// specDiff names the fields of two lock specs that differ, with their old
// and new values: "Config.RebootDays [mo] → [su]". settingsOnly compares
// only a kured lock's configuration (the annotation of the lock being
// written is its driver's to compare).
func specDiff(was, is model.LockSpec, settingsOnly bool) []string {
	if settingsOnly {
		ws, _ := was.(*kured.Spec)
		is, _ := is.(*kured.Spec)
		if ws == nil || is == nil {
			return nil
		}
		var out []string
		fieldDiff("Config", reflect.ValueOf(ws.Config), reflect.ValueOf(is.Config), &out)
		return out
	}
	var out []string
	fieldDiff("", reflect.ValueOf(was), reflect.ValueOf(is), &out)
	return out
}

var timeType = reflect.TypeOf(time.Time{})

// fieldDiff appends the differences between a and b (values of one type)
// to out, field by field, named by their path.
func fieldDiff(path string, a, b reflect.Value, out *[]string) {
	name := func(s string) string {
		if path == "" {
			return s
		}
		return path + "." + s
	}
	if a.IsValid() != b.IsValid() || (a.IsValid() && a.Type() != b.Type()) {
		*out = append(*out, cmpOr(path, "the lock's content")+" changed kind")
		return
	}
	if !a.IsValid() {
		return
	}
	switch {
	case a.Kind() == reflect.Interface || a.Kind() == reflect.Pointer:
		switch {
		case a.IsNil() && b.IsNil():
		case a.IsNil() != b.IsNil():
			state := map[bool]string{true: "unread", false: "read"}
			*out = append(*out, fmt.Sprintf("%s %s → %s", cmpOr(path, "content"), state[a.IsNil()], state[b.IsNil()]))
		default:
			fieldDiff(path, a.Elem(), b.Elem(), out)
		}
	case a.Type() == timeType:
		ta, tb := a.Interface().(time.Time), b.Interface().(time.Time)
		if !ta.Equal(tb) {
			*out = append(*out, fmt.Sprintf("%s %s → %s", path, timeText(ta), timeText(tb)))
		}
	case a.Kind() == reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			f := a.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			fieldDiff(name(f.Name), a.Field(i), b.Field(i), out)
		}
	case !reflect.DeepEqual(a.Interface(), b.Interface()):
		if strings.Contains(strings.ToLower(path), "url") {
			// A URL may carry a password or a token: never its value.
			*out = append(*out, path+" changed")
			return
		}
		*out = append(*out, fmt.Sprintf("%s %s → %s", path, valueText(a), valueText(b)))
	}
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return "unset"
	}
	return t.UTC().Format(time.RFC3339)
}

// valueText is a short rendering of a changed value (cluster text: the
// output's boundary sanitises it).
func valueText(v reflect.Value) string {
	var s string
	if v.Kind() == reflect.String {
		s = strconv.Quote(v.String())
	} else {
		s = fmt.Sprint(v.Interface())
	}
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// bad reports whether the volumes gate refuses a volume of robustness r.
func bad(r model.Robustness) bool {
	return r == model.RobustnessDegraded || r == model.RobustnessFaulted
}

// freshVolumes reads Longhorn's volumes now and names every volume that is
// degraded or faulted now but was not when judged.
func (a *Actor) freshVolumes(ctx context.Context, p Plan) freshRead {
	if a.Fresh.Volumes == nil {
		return freshRead{what: "list Longhorn's volumes", err: errors.New("no fresh reader of Longhorn's volumes is wired")}
	}
	vols, _, err := a.Fresh.Volumes(ctx)
	if err != nil {
		return failed("list Longhorn's volumes", "list on volumes.longhorn.io", err)
	}
	var out []string
	for i := range vols {
		v := &vols[i]
		if !bad(v.Robustness) {
			continue
		}
		was, ok := p.Judged.Volumes[v.Key()]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("Longhorn volume %s is %s now (it was not judged)", v.Key(), v.Robustness))
		case !bad(was):
			out = append(out, fmt.Sprintf("Longhorn volume %s is %s now (was %s)", v.Key(), v.Robustness, was))
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = []string{model.FirstFew(out, 5)}
	}
	return freshRead{diffs: out}
}

// freshAlerts asks Prometheus now which blocking alerts fire and names
// those that did not fire when judged.
func (a *Actor) freshAlerts(ctx context.Context, p Plan) freshRead {
	if a.Fresh.Alerts == nil {
		if !p.Judged.AlertFilter {
			return freshRead{} // no gate configured, nothing to ask
		}
		return freshRead{what: "ask Prometheus which blocking alerts fire", err: errors.New("no fresh reader of Prometheus's alerts is wired")}
	}
	names, filter, err := a.Fresh.Alerts(ctx, p.Judged.kuredConfig())
	if err != nil {
		return failed("ask Prometheus which blocking alerts fire", "", err)
	}
	if filter != p.Judged.AlertFilter {
		if filter {
			return freshRead{diffs: []string{"a blocking-alert filter is configured now (none was when judged)"}}
		}
		return freshRead{diffs: []string{"no blocking-alert filter is configured now (one was when judged)"}}
	}
	was := map[string]bool{}
	for _, n := range p.Judged.Alerts {
		was[n] = true
	}
	var out []string
	for _, n := range names {
		if !was[n] {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return freshRead{}
	}
	return freshRead{diffs: []string{fmt.Sprintf("blocking alerts fire now: %s (not firing when judged)", model.FirstFew(out, 5))}}
}
