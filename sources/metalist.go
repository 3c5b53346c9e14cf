package sources

import (
	"bufio"
	"bytes"
	"encoding/binary"
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
	d := &pbStream{r: bufio.NewReaderSize(r, 64<<10)}
	var env [4]byte
	if _, err := io.ReadFull(d.r, env[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return "", errors.New("empty response")
		}
		return "", unexpectedEOF(err)
	}
	if !bytes.Equal(env[:], protobufEnvelope) {
		return "", ErrNotProtobuf
	}
	var kind, listRV string
	sawList := false
	for {
		f, wire, n, err := d.field()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		if (f == 1 || f == 2) && wire != pbBytes {
			return "", fmt.Errorf("field %d: wrong wire type %d", f, wire)
		}
		switch {
		case f == 1: // runtime.Unknown's typeMeta: apiVersion 1, kind 2
			b, err := d.read(n)
			if err != nil {
				return "", err
			}
			err = pbFields(b, func(f int, wire uint64, v []byte) error {
				if f == 2 {
					if wire != pbBytes {
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
		case f == 3 && wire == pbBytes && n > 0:
			return "", errors.New("content encoding not supported")
		default:
			if err := d.skip(wire, n); err != nil {
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
func (d *pbStream) metadataList(size int64, each func(ns, name, rv []byte)) (string, error) {
	var listRV string
	items := 0
	end := d.off + size
	for d.off < end {
		f, wire, n, err := d.field()
		if err != nil {
			return "", unexpectedEOF(err)
		}
		if wire != pbBytes || d.off+n > end {
			return "", fmt.Errorf("list field %d: bad wire type or length", f)
		}
		b, err := d.read(n)
		if err != nil {
			return "", err
		}
		switch f {
		case 1: // ListMeta: resourceVersion is its field 2 (a scalar's last value wins)
			err = pbFields(b, func(f int, wire uint64, v []byte) error {
				if f == 2 {
					if wire != pbBytes {
						return fmt.Errorf("field %d: wrong wire type %d", f, wire)
					}
					listRV = string(v)
				}
				return nil
			})
		case 2:
			var ns, name, rv []byte
			ns, name, rv, err = objectMeta(b)
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
	if d.off != end {
		return "", errors.New("the list overruns its length")
	}
	return listRV, nil
}

// objectMeta reads an object's namespace (ObjectMeta field 3), name (1)
// and resourceVersion (6) from its protobuf (ObjectMeta is the object's
// field 1); they point into b. A field given twice keeps its last value,
// as the generated decoder has it.
func objectMeta(b []byte) (ns, name, rv []byte, err error) {
	err = pbFields(b, func(f int, wire uint64, v []byte) error {
		if f != 1 {
			return nil
		}
		if wire != pbBytes {
			return fmt.Errorf("field %d: wrong wire type %d", f, wire)
		}
		return pbFields(v, func(f int, wire uint64, v []byte) error {
			switch f {
			case 1, 3, 6:
				if wire != pbBytes {
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

// pbStream reads protobuf fields from a stream.
type pbStream struct {
	r    *bufio.Reader
	off  int64  // bytes consumed
	item []byte // one field's bytes at a time
}

// ReadByte makes the stream an io.ByteReader for binary.ReadUvarint.
func (d *pbStream) ReadByte() (byte, error) {
	c, err := d.r.ReadByte()
	if err == nil {
		d.off++
	}
	return c, err
}

// protobuf wire types
const (
	pbVarint  = 0
	pbFixed64 = 1
	pbBytes   = 2
	pbFixed32 = 5
)

// field reads the next field's tag and, for a length-delimited field, its
// length (n is 8 or 4 for a fixed field, unused for a varint).
func (d *pbStream) field() (num int, wire uint64, n int64, err error) {
	tag, err := binary.ReadUvarint(d)
	if err != nil {
		return 0, 0, 0, err
	}
	num, wire = int(tag>>3), tag&7
	if num <= 0 {
		return 0, 0, 0, errors.New("bad field number")
	}
	switch wire {
	case pbVarint:
		return num, wire, 0, nil
	case pbFixed64:
		return num, wire, 8, nil
	case pbBytes:
		l, err := binary.ReadUvarint(d)
		if err != nil {
			return 0, 0, 0, unexpectedEOF(err)
		}
		if l > 1<<31 {
			return 0, 0, 0, fmt.Errorf("field %d: length %d", num, l)
		}
		return num, wire, int64(l), nil
	case pbFixed32:
		return num, wire, 4, nil
	}
	return 0, 0, 0, fmt.Errorf("field %d: unsupported wire type %d", num, wire)
}

// read returns a length-delimited field's n bytes, valid until the next
// read. A length is only the server's claim: past what the buffer holds,
// the buffer grows with the bytes that do arrive, never to the claim.
func (d *pbStream) read(n int64) ([]byte, error) {
	if int64(cap(d.item)) >= n {
		d.item = d.item[:n]
		m, err := io.ReadFull(d.r, d.item)
		d.off += int64(m)
		return d.item, unexpectedEOF(err)
	}
	buf := bytes.NewBuffer(d.item[:0])
	m, err := io.CopyN(buf, d.r, n)
	d.off += m
	d.item = buf.Bytes()
	return d.item, unexpectedEOF(err)
}

// skip discards a field's value.
func (d *pbStream) skip(wire uint64, n int64) error {
	if wire == pbVarint {
		_, err := binary.ReadUvarint(d)
		return unexpectedEOF(err)
	}
	m, err := d.r.Discard(int(n))
	d.off += int64(m)
	return unexpectedEOF(err)
}

// unexpectedEOF turns an EOF inside a field into ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// pbFields calls fn with every field of a protobuf message: its number,
// wire type and its bytes (a length-delimited field's content, or a
// varint's or fixed field's own bytes). A malformed or cut message is an
// error.
func pbFields(b []byte, fn func(field int, wire uint64, v []byte) error) error {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad field tag")
		}
		b = b[n:]
		field, wire := int(tag>>3), tag&7
		if field <= 0 {
			return errors.New("bad field number")
		}
		var v []byte
		switch wire {
		case pbVarint:
			_, n := binary.Uvarint(b)
			if n <= 0 {
				return fmt.Errorf("field %d: bad varint", field)
			}
			v, b = b[:n], b[n:]
		case pbFixed64:
			if len(b) < 8 {
				return fmt.Errorf("field %d: cut short", field)
			}
			v, b = b[:8], b[8:]
		case pbBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return fmt.Errorf("field %d: bad length", field)
			}
			v, b = b[n:n+int(l)], b[n+int(l):]
		case pbFixed32:
			if len(b) < 4 {
				return fmt.Errorf("field %d: cut short", field)
			}
			v, b = b[:4], b[4:]
		default:
			return fmt.Errorf("field %d: unsupported wire type %d", field, wire)
		}
		if err := fn(field, wire, v); err != nil {
			return err
		}
	}
	return nil
}
