package sources

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// This file reads a metadata-only list (a meta.k8s.io/v1
// PartialObjectMetadataList) sent as protobuf, for the audits of watches
// whose objects are custom resources (issue 35 §2): the apiserver serves
// a custom resource's metadata as protobuf (never its objects), in about
// half the CPU it takes for the same metadata as JSON, and reading it here
// costs a pass over each item's ObjectMeta, keeping only the namespace,
// name and resourceVersion (managedFields, most of the bytes, are skipped
// by their length). The list is read as it streams: nothing of it is held
// but one item at a time.

// MetadataListAccept asks the apiserver for a PartialObjectMetadataList as
// protobuf.
const MetadataListAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// ErrNotProtobuf is a response that does not start with the apiserver's
// protobuf envelope (a proxy that ignored the Accept header): read it
// another way.
var ErrNotProtobuf = errors.New("not a protobuf response")

// protobufEnvelope starts every protobuf response of the apiserver.
var protobufEnvelope = []byte("k8s\x00")

// ReadMetadataList reads a protobuf PartialObjectMetadataList from r,
// calling each with every item's namespace, name and resourceVersion (the
// bytes are valid only during the call), and returns the list's
// resourceVersion. A cut, garbled or oversized stream is an error, never a
// shorter list; a response that is not protobuf is ErrNotProtobuf.
func ReadMetadataList(r io.Reader, each func(namespace, name, resourceVersion []byte)) (string, error) {
	d := NewPBStream(r, 64<<10)
	var env [4]byte
	if _, err := d.ReadFull(env[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return "", errors.New("empty response")
		}
		return "", UnexpectedEOF(err)
	}
	if !bytes.Equal(env[:], protobufEnvelope) {
		return "", ErrNotProtobuf
	}
	var kind, listRV string
	sawList := false
	for {
		f, wire, n, err := d.Field()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		if (f == 1 || f == 2) && wire != PBBytes {
			return "", fmt.Errorf("field %d: wrong wire type %d", f, wire)
		}
		switch {
		case f == 1: // runtime.Unknown's typeMeta: apiVersion 1, kind 2
			b, err := d.Read(n)
			if err != nil {
				return "", err
			}
			err = PBFields(b, func(f int, wire uint64, v []byte) error {
				if f == 2 {
					if wire != PBBytes {
						return fmt.Errorf("field %d: wrong wire type %d", f, wire)
					}
					kind = string(v)
				}
				return nil
			})
			if err != nil {
				return "", err
			}
		case f == 2: // raw: the list, read item by item
			if kind != "PartialObjectMetadataList" {
				return "", fmt.Errorf("want a PartialObjectMetadataList, got kind %q", kind)
			}
			if sawList {
				return "", errors.New("the list twice")
			}
			if listRV, err = d.metadataList(n, each); err != nil {
				return "", err
			}
			sawList = true
		case f == 3 && wire == PBBytes && n > 0:
			return "", errors.New("content encoding not supported")
		default:
			if err := d.Skip(wire, n); err != nil {
				return "", err
			}
		}
	}
	if !sawList {
		return "", fmt.Errorf("want a PartialObjectMetadataList, got kind %q and no list", kind)
	}
	return listRV, nil
}

// metadataList reads a PartialObjectMetadataList of size bytes: its
// ListMeta (field 1) and its items (field 2, each a PartialObjectMetadata
// whose ObjectMeta is its field 1).
func (d *PBStream) metadataList(size int64, each func(ns, name, rv []byte)) (string, error) {
	var listRV string
	items := 0
	end := d.Off() + size
	for d.Off() < end {
		f, wire, n, err := d.Field()
		if err != nil {
			return "", UnexpectedEOF(err)
		}
		if wire != PBBytes || d.Off()+n > end {
			return "", fmt.Errorf("list field %d: bad wire type or length", f)
		}
		b, err := d.Read(n)
		if err != nil {
			return "", err
		}
		switch f {
		case 1: // ListMeta: resourceVersion is its field 2 (a scalar's last value wins)
			err = PBFields(b, func(f int, wire uint64, v []byte) error {
				if f == 2 {
					if wire != PBBytes {
						return fmt.Errorf("field %d: wrong wire type %d", f, wire)
					}
					listRV = string(v)
				}
				return nil
			})
		case 2:
			var ns, name, rv []byte
			ns, name, rv, err = PBItemMeta(b)
			if err == nil {
				each(ns, name, rv)
			}
			if err != nil {
				err = fmt.Errorf("item %d: %w", items, err)
			}
			items++
		}
		if err != nil {
			return "", err
		}
	}
	if d.Off() != end {
		return "", errors.New("the list overruns its length")
	}
	return listRV, nil
}

// PBItemMeta reads an API object's namespace (ObjectMeta field 3), name (1)
// and resourceVersion (6) from its protobuf (ObjectMeta is the object's
// field 1); they point into b. A field given twice keeps its last value,
// as the generated decoder has it. The metadata lists here and the kube
// source's protobuf audit lists share it.
func PBItemMeta(b []byte) (ns, name, rv []byte, err error) {
	err = PBFields(b, func(f int, wire uint64, v []byte) error {
		if f != 1 {
			return nil
		}
		if wire != PBBytes {
			return fmt.Errorf("field %d: wrong wire type %d", f, wire)
		}
		return PBFields(v, func(f int, wire uint64, v []byte) error {
			switch f {
			case 1, 3, 6:
				if wire != PBBytes {
					return fmt.Errorf("field %d: wrong wire type %d", f, wire)
				}
			}
			switch f {
			case 1:
				name = v
			case 3:
				ns = v
			case 6:
				rv = v
			}
			return nil
		})
	})
	return ns, name, rv, err
}
