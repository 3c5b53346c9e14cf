package kube

import (
	"context"
	"maps"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/model"
)

// This file is the PodDisruptionBudget source (issue 15): every policy/v1
// PodDisruptionBudget of the cluster, watched cluster-wide (there are few,
// and they are small once transformed), so the blockers can say which budget
// stops a drain.

// pdbResource names the resource in health messages.
const pdbResource = "poddisruptionbudgets.policy"

func startPDBs(s *Source) {
	cs := s.opts.Client
	p := s.newPart(model.SourcePDBs, pdbResource, "", &policyv1.PodDisruptionBudget{}, TransformPDB,
		func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return cs.PolicyV1().PodDisruptionBudgets("").List(ctx, lo)
		},
		func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			return cs.PolicyV1().PodDisruptionBudgets("").Watch(ctx, lo)
		})
	s.audit(p, auditTarget{what: "PodDisruptionBudget", rc: restOf(cs.PolicyV1().RESTClient()),
		resource: "poddisruptionbudgets", kind: "PodDisruptionBudgetList"})
	p.hint = "cannot tell why a drain is slow"
	p.whenSynced = func() (model.SourceStatus, string) { return model.StatusOK, "" }
	on := func(obj any) {
		if b, ok := obj.(*policyv1.PodDisruptionBudget); ok {
			s.send(model.PDBUpserted{PDB: PDBToModel(b)})
		}
	}
	s.handle(p, cache.ResourceEventHandlerFuncs{
		AddFunc: on,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*policyv1.PodDisruptionBudget)
			n, ok2 := newObj.(*policyv1.PodDisruptionBudget)
			if ok1 && ok2 && pdbEqual(PDBToModel(o), PDBToModel(n)) {
				return
			}
			on(newObj)
		},
		DeleteFunc: func(obj any) {
			if b, ok := unwrap(obj).(*policyv1.PodDisruptionBudget); ok {
				s.send(model.PDBDeleted{Namespace: b.Namespace, Name: b.Name})
			}
		},
	})
}

// TransformPDB keeps of a PodDisruptionBudget its identity and generation,
// its spec (selector, minAvailable, maxUnavailable, unhealthy pod eviction
// policy) and the status numbers with the DisruptionAllowed condition;
// managedFields, labels, annotations and status.disruptedPods are dropped.
func TransformPDB(obj any) (any, error) {
	b, ok := obj.(*policyv1.PodDisruptionBudget)
	if !ok {
		return obj, nil
	}
	out := &policyv1.PodDisruptionBudget{ObjectMeta: stripMeta(b.ObjectMeta)}
	out.Generation = b.Generation
	out.Spec = policyv1.PodDisruptionBudgetSpec{Selector: b.Spec.Selector, MinAvailable: b.Spec.MinAvailable,
		MaxUnavailable: b.Spec.MaxUnavailable, UnhealthyPodEvictionPolicy: b.Spec.UnhealthyPodEvictionPolicy}
	st := b.Status
	out.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: st.ObservedGeneration,
		DisruptionsAllowed: st.DisruptionsAllowed, CurrentHealthy: st.CurrentHealthy,
		DesiredHealthy: st.DesiredHealthy, ExpectedPods: st.ExpectedPods}
	for _, c := range st.Conditions {
		if c.Type == policyv1.DisruptionAllowedCondition {
			out.Status.Conditions = []metav1.Condition{{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}}
		}
	}
	return out, nil
}

// PDBToModel converts a (transformed or full) PodDisruptionBudget.
func PDBToModel(b *policyv1.PodDisruptionBudget) model.PDB {
	m := model.PDB{
		Namespace:          b.Namespace,
		Name:               b.Name,
		CurrentHealthy:     int(b.Status.CurrentHealthy),
		DesiredHealthy:     int(b.Status.DesiredHealthy),
		ExpectedPods:       int(b.Status.ExpectedPods),
		DisruptionsAllowed: int(b.Status.DisruptionsAllowed),
		Observed:           b.Status.ObservedGeneration >= b.Generation,
	}
	if sel := b.Spec.Selector; sel != nil {
		m.Selector = &model.LabelSelector{MatchLabels: maps.Clone(sel.MatchLabels)}
		for _, r := range sel.MatchExpressions {
			m.Selector.MatchExpressions = append(m.Selector.MatchExpressions, model.LabelRequirement{
				Key: r.Key, Operator: string(r.Operator), Values: append([]string(nil), r.Values...)})
		}
	}
	if b.Spec.MinAvailable != nil {
		m.MinAvailable = b.Spec.MinAvailable.String()
	}
	if b.Spec.MaxUnavailable != nil {
		m.MaxUnavailable = b.Spec.MaxUnavailable.String()
	}
	if p := b.Spec.UnhealthyPodEvictionPolicy; p != nil {
		m.UnhealthyPodEvictionPolicy = string(*p)
	}
	for _, c := range b.Status.Conditions {
		if c.Type == policyv1.DisruptionAllowedCondition && c.Status == metav1.ConditionFalse {
			m.BlockedReason, m.BlockedMessage = c.Reason, c.Message
		}
	}
	return m
}

// pdbEqual reports whether two budgets say the same to the model.
func pdbEqual(a, b model.PDB) bool {
	if a.Selector.String() != b.Selector.String() {
		return false
	}
	a.Selector, b.Selector = nil, nil
	return a == b
}
