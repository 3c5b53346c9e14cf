package sources

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// This file is the one protobuf wire reader of the sources: a stream of
// fields read as it arrives (PBStream, for lists and watch frames too large
// to hold) and the fields of one message in memory (PBFields). The kube
// source's node decoder and the metadata-list reader both build on it.

// PBStream reads protobuf fields from a stream, counting the bytes it
// consumed (Off).
type PBStream struct {
	r    *bufio.Reader
	off  int64  // bytes consumed
	item []byte // one field's bytes at a time
}

// ReadByte makes the stream an io.ByteReader for binary.ReadUvarint.
func (d *PBStream) ReadByte() (byte, error) {
	c, err := d.r.ReadByte()
	if err == nil {
		d.off++
	}
	return c, err
}

// The protobuf wire types.
const (
	PBVarint  = 0
	PBFixed64 = 1
	PBBytes   = 2
	PBFixed32 = 5
)

// NewPBStream reads r through a buffer of size bytes.
func NewPBStream(r io.Reader, size int) *PBStream {
	return &PBStream{r: bufio.NewReaderSize(r, size)}
}

// Off is how many bytes were consumed.
func (d *PBStream) Off() int64 { return d.off }

// ReadFull reads exactly len(b) bytes (an envelope, a frame's length
// prefix), counted in Off.
func (d *PBStream) ReadFull(b []byte) (int, error) {
	n, err := io.ReadFull(d.r, b)
	d.off += int64(n)
	return n, err
}

// Field reads the next field's tag and, for a length-delimited field, its
// length (n is 8 or 4 for a fixed field, unused for a varint).
func (d *PBStream) Field() (num int, wire uint64, n int64, err error) {
	tag, err := binary.ReadUvarint(d)
	if err != nil {
		return 0, 0, 0, err
	}
	num, wire = int(tag>>3), tag&7
	if num <= 0 {
		return 0, 0, 0, errors.New("bad field number")
	}
	switch wire {
	case PBVarint:
		return num, wire, 0, nil
	case PBFixed64:
		return num, wire, 8, nil
	case PBBytes:
		l, err := binary.ReadUvarint(d)
		if err != nil {
			return 0, 0, 0, UnexpectedEOF(err)
		}
		if l > 1<<31 {
			return 0, 0, 0, fmt.Errorf("field %d: length %d", num, l)
		}
		return num, wire, int64(l), nil
	case PBFixed32:
		return num, wire, 4, nil
	}
	return 0, 0, 0, fmt.Errorf("field %d: unsupported wire type %d", num, wire)
}

// Read returns a length-delimited field's n bytes, valid until the next
// read. A length is only the server's claim: past what the buffer holds,
// the buffer grows with the bytes that do arrive, never to the claim.
func (d *PBStream) Read(n int64) ([]byte, error) {
	if int64(cap(d.item)) >= n {
		d.item = d.item[:n]
		m, err := io.ReadFull(d.r, d.item)
		d.off += int64(m)
		return d.item, UnexpectedEOF(err)
	}
	buf := bytes.NewBuffer(d.item[:0])
	m, err := io.CopyN(buf, d.r, n)
	d.off += m
	d.item = buf.Bytes()
	return d.item, UnexpectedEOF(err)
}

// Skip discards a field's value.
func (d *PBStream) Skip(wire uint64, n int64) error {
	if wire == PBVarint {
		_, err := binary.ReadUvarint(d)
		return UnexpectedEOF(err)
	}
	m, err := d.r.Discard(int(n))
	d.off += int64(m)
	return UnexpectedEOF(err)
}

// UnexpectedEOF turns an EOF inside a field into ErrUnexpectedEOF.
func UnexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// PBFields calls fn with every field of a protobuf message: its number,
// wire type and its bytes (a length-delimited field's content, or a
// varint's or fixed field's own bytes). A malformed or cut message is an
// error.
//
// It reads the tags and varints with encoding/binary, not with protowire's
// ConsumeTag, ConsumeVarint and ConsumeBytes: those are calls where
// binary.Uvarint is inlined, and walking kubelet Nodes through them took
// longer in every run of the kube source's BenchmarkEachField.
func PBFields(b []byte, fn func(field int, wire uint64, v []byte) error) error {
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
		case PBVarint:
			_, n := binary.Uvarint(b)
			if n <= 0 {
				return fmt.Errorf("field %d: bad varint", field)
			}
			v, b = b[:n], b[n:]
		case PBFixed64:
			if len(b) < 8 {
				return fmt.Errorf("field %d: cut short", field)
			}
			v, b = b[:8], b[8:]
		case PBBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return fmt.Errorf("field %d: bad length", field)
			}
			v, b = b[n:n+int(l)], b[n+int(l):]
		case PBFixed32:
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
