package lock

import (
	"context"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/model"
)

// AsJudged is asJudged for the package's external tests.
var AsJudged = asJudged

// asJudged are fresh readers that find the lock objects, Longhorn's volumes
// and the alerts exactly as p was judged on them (the nodes are read
// through the actor's client): for the tests about everything else than
// those reads, whose fake or shared API server holds no source of its own.
// The tests of the fresh reads themselves (fresh_test.go,
// fresh_integration_test.go) use real readers.
func asJudged(p Plan) FreshReaders {
	return FreshReaders{
		Locks: func(context.Context) ([]model.LockObject, error) {
			return append([]model.LockObject(nil), p.Judged.Locks...), nil
		},
		Volumes: func(context.Context) ([]model.Volume, bool, error) {
			var out []model.Volume
			for k, r := range p.Judged.Volumes {
				ns, name, _ := cut(k)
				out = append(out, model.Volume{Namespace: ns, Name: name, Robustness: r})
			}
			return out, len(out) > 0, nil
		},
		Alerts: func(context.Context, *kured.Config) ([]string, bool, error) {
			return p.Judged.Alerts, p.Judged.AlertFilter, nil
		},
	}
}

func cut(k string) (string, string, bool) {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return k[:i], k[i+1:], true
		}
	}
	return "", k, false
}
