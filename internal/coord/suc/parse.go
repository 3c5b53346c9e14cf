package suc

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/rebootwatch/rebootwatch/model"
)

// fields reads an unstructured object (JSON decoded into map[string]any)
// as a hostile input: a field of another type than SUC writes is recorded
// in bad, and its value is the zero value only for the caller to ignore.
type fields struct{ bad []string }

func (f *fields) mark(path string) { f.bad = append(f.bad, path) }

// get walks path; ok is false when a step is absent; a step that is not an
// object is marked bad.
func (f *fields) get(obj map[string]any, path ...string) (any, bool) {
	var cur any = obj
	for i, p := range path {
		m, isMap := cur.(map[string]any)
		if !isMap {
			if cur != nil {
				f.mark(strings.Join(path[:i], "."))
			}
			return nil, false
		}
		v, ok := m[p]
		if !ok || v == nil {
			return nil, false
		}
		cur = v
	}
	return cur, true
}

func (f *fields) str(obj map[string]any, path ...string) string {
	v, ok := f.get(obj, path...)
	if !ok {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		f.mark(strings.Join(path, "."))
	}
	return s
}

func (f *fields) boolean(obj map[string]any, path ...string) bool {
	v, ok := f.get(obj, path...)
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		f.mark(strings.Join(path, "."))
	}
	return b
}

// integer reads a whole JSON number (int64 from a typed decode, float64
// from encoding/json, json.Number); ok is false when absent or bad.
func (f *fields) integer(obj map[string]any, path ...string) (int64, bool) {
	v, ok := f.get(obj, path...)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int64(n), true
		}
	case interface{ String() string }:
		if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
			return i, true
		}
	}
	f.mark(strings.Join(path, "."))
	return 0, false
}

func (f *fields) strings(obj map[string]any, path ...string) []string {
	v, ok := f.get(obj, path...)
	if !ok {
		return nil
	}
	list, isList := v.([]any)
	if !isList {
		f.mark(strings.Join(path, "."))
		return nil
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, isStr := x.(string)
		if !isStr {
			f.mark(strings.Join(path, "."))
			return nil
		}
		out = append(out, s)
	}
	return out
}

func (f *fields) time(obj map[string]any, path ...string) time.Time {
	s := f.str(obj, path...)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		f.mark(strings.Join(path, "."))
		return time.Time{}
	}
	return t
}

func (f *fields) object(obj map[string]any, path ...string) (map[string]any, bool) {
	v, ok := f.get(obj, path...)
	if !ok {
		return nil, false
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		f.mark(strings.Join(path, "."))
		return nil, false
	}
	return m, true
}

func (f *fields) conditions(obj map[string]any, path ...string) []Condition {
	v, ok := f.get(obj, path...)
	if !ok {
		return nil
	}
	list, isList := v.([]any)
	if !isList {
		f.mark(strings.Join(path, "."))
		return nil
	}
	var out []Condition
	for i, x := range list {
		m, isMap := x.(map[string]any)
		if !isMap {
			f.mark(fmt.Sprintf("%s[%d]", strings.Join(path, "."), i))
			continue
		}
		out = append(out, Condition{
			Type: f.str(m, "type"), Status: f.str(m, "status"),
			Reason: f.str(m, "reason"), Message: f.str(m, "message"),
			LastUpdate: f.time(m, "lastUpdateTime"), LastTransition: f.time(m, "lastTransitionTime"),
		})
	}
	return out
}

// selector reads a metav1.LabelSelector.
func (f *fields) selector(obj map[string]any, path ...string) *model.LabelSelector {
	m, ok := f.object(obj, path...)
	if !ok {
		return nil
	}
	s := &model.LabelSelector{}
	if ml, ok := f.object(m, "matchLabels"); ok {
		s.MatchLabels = map[string]string{}
		for k, v := range ml {
			vs, isStr := v.(string)
			if !isStr {
				f.mark(strings.Join(path, ".") + ".matchLabels")
				return nil
			}
			s.MatchLabels[k] = vs
		}
	}
	if v, ok := f.get(m, "matchExpressions"); ok {
		list, isList := v.([]any)
		if !isList {
			f.mark(strings.Join(path, ".") + ".matchExpressions")
			return nil
		}
		for _, x := range list {
			e, isMap := x.(map[string]any)
			if !isMap {
				f.mark(strings.Join(path, ".") + ".matchExpressions")
				return nil
			}
			s.MatchExpressions = append(s.MatchExpressions, model.LabelRequirement{
				Key: f.str(e, "key"), Operator: f.str(e, "operator"), Values: f.strings(e, "values")})
		}
	}
	return s
}

// ParsePlan reads a Plan from its unstructured content. Fields of another
// type than SUC writes are listed in Plan.Bad; the judging treats what they
// bear on as unknown.
func ParsePlan(obj map[string]any) Plan {
	f := &fields{}
	p := Plan{
		Namespace: f.str(obj, "metadata", "namespace"), Name: f.str(obj, "metadata", "name"),
		UID: f.str(obj, "metadata", "uid"), ResourceVersion: f.str(obj, "metadata", "resourceVersion"),
		Created: f.time(obj, "metadata", "creationTimestamp"),
	}
	if c, ok := f.integer(obj, "spec", "concurrency"); ok {
		p.Spec.Concurrency = c
	}
	p.Spec.NodeSelector = f.selector(obj, "spec", "nodeSelector")
	p.Spec.Cordon = f.boolean(obj, "spec", "cordon")
	if d, ok := f.object(obj, "spec", "drain"); ok {
		p.Spec.Drain = true
		if v, ok := f.get(d, "timeout"); ok {
			// IntOrString: nanoseconds as a number, or a kubectl duration.
			switch t := v.(type) {
			case string:
				p.Spec.DrainTimeout = t
			default:
				if n, ok := f.integer(d, "timeout"); ok {
					p.Spec.DrainTimeout = time.Duration(n).String()
				}
			}
		}
	}
	p.Spec.Exclusive = f.boolean(obj, "spec", "exclusive")
	if w, ok := f.object(obj, "spec", "window"); ok {
		p.Spec.Window = &Window{Days: f.strings(w, "days"), StartTime: f.str(w, "startTime"),
			EndTime: f.str(w, "endTime"), TimeZone: f.str(w, "timeZone")}
	}
	p.Spec.Version = f.str(obj, "spec", "version")
	p.Spec.Channel = f.str(obj, "spec", "channel")
	p.Spec.Image = f.str(obj, "spec", "upgrade", "image")
	if n, ok := f.integer(obj, "spec", "jobActiveDeadlineSecs"); ok {
		p.Spec.JobActiveDeadlineSecs = &n
	}
	if s := f.str(obj, "spec", "postCompleteDelay"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			p.Spec.PostCompleteDelay = d
		} else {
			f.mark("spec.postCompleteDelay")
		}
	}
	p.Status.Applying = f.strings(obj, "status", "applying")
	p.Status.LatestVersion = f.str(obj, "status", "latestVersion")
	p.Status.LatestHash = f.str(obj, "status", "latestHash")
	p.Status.Conditions = f.conditions(obj, "status", "conditions")
	p.Bad = f.bad
	return p
}

// SlotsBad reports whether a field the slots are read from is bad
// (spec.concurrency, spec.nodeSelector, status.applying, status.latestHash).
func (p *Plan) SlotsBad() (string, bool) {
	for _, b := range p.Bad {
		for _, k := range []string{"spec.concurrency", "spec.nodeSelector", "status.applying", "status.latestHash", "spec", "status"} {
			if b == k || strings.HasPrefix(b, k+".") {
				return b, true
			}
		}
	}
	return "", false
}

// JobFrom reads a Job SUC created; ok is false when it is not one of
// SUC's (no upgrade.cattle.io/plan label).
func JobFrom(j *batchv1.Job) (Job, bool) {
	plan := j.Labels[LabelPlan]
	if plan == "" {
		return Job{}, false
	}
	out := Job{
		Namespace: j.Namespace, Name: j.Name,
		Plan: plan, Node: j.Labels[LabelNode], Version: j.Labels[LabelVersion],
		Controller: j.Labels[LabelController], PlanHash: j.Labels[LabelPlanPrefix+plan],
		Created: j.CreationTimestamp.Time, Active: int(j.Status.Active), Failed: int(j.Status.Failed),
		BackoffLimit: j.Spec.BackoffLimit, ActiveDeadlineSeconds: j.Spec.ActiveDeadlineSeconds,
	}
	if j.Status.StartTime != nil {
		out.Started = j.Status.StartTime.Time
	}
	for _, c := range j.Status.Conditions {
		out.Conditions = append(out.Conditions, Condition{Type: string(c.Type), Status: string(c.Status),
			Reason: c.Reason, Message: c.Message, LastUpdate: c.LastProbeTime.Time, LastTransition: c.LastTransitionTime.Time})
	}
	return out, true
}
