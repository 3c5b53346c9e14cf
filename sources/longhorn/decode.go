package longhorn

import (
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/rebootwatch/rebootwatch/model"
)

// This file decodes Longhorn volume lists and watch streams with the
// one-pass reader of scan.go: each item into a volumeItem (what the model
// reads of it), which becomes the informer's Volume or, for the one-shot
// read (once.go), the model's volume. Nothing is ever an unstructured map,
// and each byte is looked at once (client-go's path for the dynamic client reads
// each event four times: its framer, its WatchEvent, the kind probe and the
// map).

// volume is the item as the informer keeps it (the node as VolumeToModel
// reads it: currentNodeID, or ownerID while attached without one).
func (it *volumeItem) volume() Volume {
	return newVolume(types.UID(it.uid), it.resourceVersion, it.model())
}

// decodeVolumeList reads a VolumeList, calling each with every item as it
// is read (each must copy what it keeps), and returns the list's
// metadata: its continue token and resourceVersion.
func decodeVolumeList(s *scanner, each func(*volumeItem)) (metav1.ListMeta, error) {
	var lm metav1.ListMeta
	c, err := s.next()
	if err != nil {
		if ok, _ := s.atEnd(); ok && s.off == 0 && s.pos == 0 {
			return lm, errors.New("empty response")
		}
		return lm, err
	}
	if c != '{' {
		return lm, fmt.Errorf("want an object, got %q", c)
	}
	n := 0
	var kind string
	sawItems := false
	err = s.fields(func(key []byte) error {
		switch string(key) {
		case "items":
			if sawItems {
				// The first array's items are already out.
				return errors.New(`"items" twice`)
			}
			sawItems = true
			c, err := s.next()
			if err != nil {
				return err
			}
			switch c {
			case 'n':
				return s.skip() // "items": null
			case '[':
			default:
				return errors.New("items is not an array")
			}
			s.pos++
			if c, err := s.next(); err != nil || c == ']' {
				s.pos++
				return err
			}
			for {
				var it volumeItem
				if err := it.read(s); err != nil {
					return fmt.Errorf("item %d: %w", n, err)
				}
				each(&it)
				n++
				more, err := s.more(']')
				if err != nil || !more {
					return err
				}
			}
		case "metadata":
			lm = metav1.ListMeta{} // a key given twice: the last value wins
			return s.fields(func(key []byte) (err error) {
				switch string(key) {
				case "continue":
					lm.Continue, err = s.lenientString()
				case "resourceVersion":
					lm.ResourceVersion, err = s.lenientString()
				default:
					err = s.skip()
				}
				return err
			})
		case "kind":
			v, err := s.lenientString()
			kind = v
			return err
		}
		return s.skip()
	})
	if err != nil {
		return lm, err
	}
	if end, err := s.atEnd(); err != nil || !end {
		if err == nil {
			err = errors.New("data after the list")
		}
		return lm, err
	}
	if !sawItems && kind != "VolumeList" {
		return lm, fmt.Errorf("not a list (kind %q)", kind)
	}
	return lm, nil
}

// volumeItem is what the model reads of a Longhorn Volume. Fields of an
// unexpected type read as absent (as unstructured.NestedString would), so
// one odd object never makes the whole list unreadable.
type volumeItem struct {
	name, namespace                           string
	replicas                                  int
	robustness, state, currentNodeID, ownerID string
	// uid and resourceVersion, for the informer's cache; initialEventsEnd
	// is the k8s.io/initial-events-end annotation (a WatchList's BOOKMARK).
	uid, resourceVersion, initialEventsEnd string
	// A watch ERROR event's object is a Status: its top-level fields, and
	// its "status" when that is a string (a Volume's is an object).
	statusString, message, reason string
	code                          int
}

// read reads one item (null reads as an empty item, as encoding/json
// decodes it; any other non-object is an error). As in encoding/json's
// maps, a key given twice keeps its last value, wholly: an object's fields
// are reset when it starts again.
func (it *volumeItem) read(s *scanner) error {
	*it = volumeItem{}
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != '{' && c != 'n' {
		return fmt.Errorf("not an object (%q)", c)
	}
	return s.fields(func(key []byte) error {
		switch string(key) {
		case "metadata":
			it.name, it.namespace, it.uid, it.resourceVersion, it.initialEventsEnd = "", "", "", "", ""
			return s.fields(func(key []byte) (err error) {
				switch string(key) {
				case "name":
					it.name, err = s.lenientString()
				case "namespace":
					it.namespace, err = s.sharedString()
				case "uid":
					it.uid, err = s.lenientString()
				case "resourceVersion":
					it.resourceVersion, err = s.lenientString()
				case "annotations":
					it.initialEventsEnd = ""
					err = s.fields(func(key []byte) (err error) {
						if string(key) == metav1.InitialEventsAnnotationKey {
							it.initialEventsEnd, err = s.lenientString()
							return err
						}
						return s.skip()
					})
				default:
					err = s.skip()
				}
				return err
			})
		case "spec":
			it.replicas = 0
			return s.fields(func(key []byte) (err error) {
				if string(key) == "numberOfReplicas" {
					it.replicas, err = s.lenientInt()
					return err
				}
				return s.skip()
			})
		case "status":
			it.statusString, it.robustness, it.state, it.currentNodeID, it.ownerID = "", "", "", "", ""
			if c, err := s.next(); err == nil && c == '"' {
				it.statusString, err = s.lenientString()
				return err
			}
			return s.fields(func(key []byte) (err error) {
				switch string(key) {
				case "robustness":
					it.robustness, err = s.lenientString()
				case "state":
					it.state, err = s.sharedString()
				case "currentNodeID":
					it.currentNodeID, err = s.sharedString()
				case "ownerID":
					it.ownerID, err = s.sharedString()
				default:
					err = s.skip()
				}
				return err
			})
		case "message":
			it.message, err = s.lenientString()
			return err
		case "reason":
			it.reason, err = s.lenientString()
			return err
		case "code":
			it.code, err = s.lenientInt()
			return err
		}
		return s.skip()
	})
}

// model converts as VolumeToModel does.
func (it *volumeItem) model() model.Volume {
	v := model.Volume{Namespace: it.namespace, Name: it.name,
		Robustness: model.NormalRobustness(it.robustness), State: it.state,
		Replicas: it.replicas, Node: it.currentNodeID}
	if v.Node == "" && v.State == "attached" {
		v.Node = it.ownerID
	}
	return v
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
