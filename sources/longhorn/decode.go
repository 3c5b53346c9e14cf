package longhorn

import (
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// This file decodes the informer's lists and watch streams of Longhorn
// volumes straight into Volume, with the one-pass reader of scan.go and the
// volumeItem of once.go: nothing is ever an unstructured map, and each
// byte is looked at once (client-go's path for the dynamic client reads
// each event four times: its framer, its WatchEvent, the kind probe and the
// map).

// volume is the item as the informer keeps it (the node as VolumeToModel
// reads it: currentNodeID, or ownerID while attached without one).
func (it *volumeItem) volume() Volume {
	return newVolume(types.UID(it.uid), it.resourceVersion, it.model())
}

// decodeList reads a VolumeList's JSON from r into a *VolumeList.
func decodeList(r io.Reader) (*VolumeList, error) {
	l := &VolumeList{}
	lm, err := decodeVolumeList(newScanner(r), func(it *volumeItem) { l.Items = append(l.Items, it.volume()) })
	if err != nil {
		return nil, fmt.Errorf("volume list: %w", err)
	}
	l.ListMeta = lm
	return l, nil
}

// watchDecoder is a watch.Decoder reading the apiserver's JSON watch stream
// of Longhorn volumes: ADDED, MODIFIED, DELETED and BOOKMARK events carry a
// *Volume (a BOOKMARK's with its resourceVersion, and the
// k8s.io/initial-events-end annotation when it ends a WatchList's initial
// events), ERROR events the *metav1.Status the server sent (on a 410 Gone
// the reflector lists again). An event's "type" and "object" may come in
// either order: the object is read once, as a Volume and a Status at once.
type watchDecoder struct {
	body io.ReadCloser
	s    *scanner
}

func newWatchDecoder(body io.ReadCloser) *watchDecoder {
	return &watchDecoder{body: body, s: newScanner(body)}
}

// Decode reads the next event. It returns io.EOF for a stream that ended
// between events and io.ErrUnexpectedEOF for one cut inside an event, as
// watch.StreamWatcher expects them.
func (d *watchDecoder) Decode() (watch.EventType, runtime.Object, error) {
	s := d.s
	if end, err := s.atEnd(); err != nil {
		return "", nil, err
	} else if end {
		return "", nil, io.EOF
	}
	if c, _ := s.next(); c != '{' {
		return "", nil, fmt.Errorf("watch event: want an object, got %q", c)
	}
	var (
		typ           string
		haveType, obj bool
		it            volumeItem
	)
	err := s.fields(func(key []byte) (err error) {
		switch string(key) {
		case "type":
			haveType = true
			typ, err = s.lenientString()
		case "object":
			obj = true
			c, err := s.next()
			if err != nil {
				return err
			}
			if c != '{' {
				return fmt.Errorf("object is not an object (%q)", c)
			}
			return it.read(s)
		default:
			err = s.skip()
		}
		return err
	})
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return "", nil, io.ErrUnexpectedEOF
		}
		return "", nil, fmt.Errorf("watch event: %w", err)
	}
	if !haveType || !obj {
		return "", nil, errors.New("watch event without type or object")
	}
	et := watch.EventType(typ)
	if et == watch.Error {
		return et, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: it.statusString, Message: it.message, Reason: metav1.StatusReason(it.reason), Code: int32(it.code)}, nil
	}
	v := it.volume()
	if et == watch.Bookmark && it.initialEventsEnd == "true" {
		v.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return et, &v, nil
}

// Close closes the stream.
func (d *watchDecoder) Close() { _ = d.body.Close() }
