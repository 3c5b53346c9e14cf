// Package fakekube gives client-go's fake clientsets what the API server
// does and the fake object tracker does not: names for objects created with
// metadata.generateName (rebootwatch's Events). The demo cluster
// (sources/sim) and the tests that act through a fake clientset use it.
//
// It must stay a thin reactor: no behaviour the real API server lacks, no
// imports of ours.
package fakekube

import (
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// GenerateNames makes creates with an empty name and a generateName get
// generateName plus a suffix unique within f, as the API server does (its
// suffix is random; this one counts, so runs are reproducible).
func GenerateNames(f *k8stesting.Fake) {
	var n atomic.Uint64
	f.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok {
			return false, nil, nil
		}
		m, err := meta.Accessor(ca.GetObject())
		if err != nil || m.GetName() != "" || m.GetGenerateName() == "" {
			return false, nil, nil
		}
		m.SetName(fmt.Sprintf("%s%05x", m.GetGenerateName(), n.Add(1)))
		return false, nil, nil
	})
}
