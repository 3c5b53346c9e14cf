package longhorn

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rebootwatch/rebootwatch/model"
)

// ReadVolumes is the one-shot read's Table without its follow-up GETs (the
// actor needs the robustness only); a missing CRD is "not installed", any
// other failure an error.
func TestReadVolumes(t *testing.T) {
	api := &fakeLonghornAPI{}
	for i := range 3 {
		api.vols = append(api.vols, volume(fmt.Sprintf("pvc-%d", i), []string{"healthy", "degraded"}[i%2], 3, "w-1"))
	}
	vols, installed, err := ReadVolumes(context.Background(), Options{REST: onceREST(t, api)})
	if err != nil || !installed || len(vols) != 3 || vols[1].Robustness != model.RobustnessDegraded {
		t.Fatalf("%+v %v %v", vols, installed, err)
	}
	want := []string{
		"/apis/longhorn.io/v1beta2/volumes?fieldSelector=metadata.namespace%21%3Dlonghorn-system",
		"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?includeObject=None",
	}
	if got := sortedCalls(api); !reflect.DeepEqual(got, want) {
		t.Errorf("calls %q\nwant %q", got, want)
	}
	if vols, installed, err := ReadVolumes(context.Background(), Options{REST: onceREST(t, &fakeLonghornAPI{status: 404})}); err != nil || installed || vols != nil {
		t.Errorf("no CRD: %+v %v %v", vols, installed, err)
	}
	if _, _, err := ReadVolumes(context.Background(), Options{REST: onceREST(t, &fakeLonghornAPI{status: 403})}); !apierrors.IsForbidden(err) {
		t.Errorf("forbidden: %v", err)
	}
	// Without a REST client (the demo), through the dynamic client.
	vols, installed, err = ReadVolumes(context.Background(), Options{Client: newFake(volume("pvc-a", "faulted", 3, ""))})
	if err != nil || !installed || len(vols) != 1 || vols[0].Robustness != model.RobustnessFaulted {
		t.Fatalf("dynamic: %+v %v %v", vols, installed, err)
	}
}
