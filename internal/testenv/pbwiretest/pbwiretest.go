// Package pbwiretest builds protobuf by hand, field by field, for the tests
// of the sources' protobuf readers: encodings a hostile or unusual server
// may send and the generated Marshal never makes (a field given twice, the
// wrong wire type, a length claimed and never sent). It must not be
// imported by non-test code.
package pbwiretest

import (
	"bytes"
	"encoding/binary"
)

// The protobuf wire types used here.
const (
	WireVarint = 0
	WireBytes  = 2
)

// Tag is field f's tag with the wire type given.
func Tag(f, wire int) []byte { return binary.AppendUvarint(nil, uint64(f<<3|wire)) }

// Bytes is field f holding the parts joined, length-delimited.
func Bytes(f int, parts ...[]byte) []byte {
	v := bytes.Join(parts, nil)
	b := append(Tag(f, WireBytes), binary.AppendUvarint(nil, uint64(len(v)))...)
	return append(b, v...)
}

// String is field f holding s.
func String(f int, s string) []byte { return Bytes(f, []byte(s)) }

// Varint is field f holding v as a varint.
func Varint(f int, v uint64) []byte { return binary.AppendUvarint(Tag(f, WireVarint), v) }
