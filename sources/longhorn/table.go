package longhorn

import (
	"errors"
	"fmt"
	"io"

	"github.com/rebootwatch/rebootwatch/model"
)

// This file decodes a meta.k8s.io/v1 Table of Longhorn volumes, as the
// apiserver serves it for Accept: application/json;as=Table;v=v1;g=meta.k8s.io
// with includeObject=None: per volume only the cells of the CRD's printer
// columns, about 110 bytes instead of 3.5 KB of JSON, which the apiserver
// serialises in a fraction of the time (docs/performance.md; once.go says
// how the one-shot read uses it). The cells are found by the columns' names, which Longhorn has
// kept since v1.1.0: Name (the first column, format "name"), State
// (.status.state), Robustness (.status.robustness) and Node
// (.status.currentNodeID). A Table has no namespace, no
// spec.numberOfReplicas and no status.ownerID.

// TableAccept asks the apiserver for a Table instead of the objects.
const TableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// The printer columns the Table read needs (besides the name column).
const (
	columnState      = "State"
	columnRobustness = "Robustness"
	columnNode       = "Node"
)

var (
	// errNotTable: the server answered something else than a Table.
	errNotTable = errors.New("not a Table")
	// errTableColumns: the Table lacks a column the model needs (an old or
	// edited CRD).
	errTableColumns = errors.New("the Table lacks the State, Robustness or Node column")
)

// tableCols are the indexes of the cells read in each row.
type tableCols struct {
	name, state, robustness, node int
	n                             int // how many columns the Table has
}

// DecodeVolumeTable reads a Table of Longhorn volumes (without objects) from
// r and returns the volumes as the model sees them, all in namespace (a
// Table row has none), with Replicas 0 and Node only from the Node column
// (status.currentNodeID), and the Table's continue token. A cell that is
// null or not a string reads as an absent field, as VolumeToModel reads a
// field of another type. An answer that is not a Table is errNotTable; a
// Table without a Name, State, Robustness or Node column is
// errTableColumns; a document that is cut short or not JSON, or a row whose
// cells do not match the columns, is an error.
func DecodeVolumeTable(r io.Reader, namespace string) ([]model.Volume, string, error) {
	vols, cont, err := decodeVolumeTable(newScanner(r), namespace)
	if err != nil {
		return nil, "", fmt.Errorf("volume table: %w", err)
	}
	return vols, cont, nil
}

func decodeVolumeTable(s *scanner, namespace string) ([]model.Volume, string, error) {
	c, err := s.next()
	if err != nil {
		if ok, _ := s.atEnd(); ok && s.off == 0 && s.pos == 0 {
			return nil, "", errors.New("empty response")
		}
		return nil, "", err
	}
	if c != '{' {
		return nil, "", fmt.Errorf("want an object, got %q", c)
	}
	var (
		out              []model.Volume
		early            [][]string // rows read before the columns: every cell, "" if not a string
		cols             *tableCols
		kind, cont       string
		sawCols, sawRows bool
		in               = interner{}
	)
	err = s.fields(func(key []byte) error {
		switch string(key) {
		case "kind":
			v, err := s.lenientString()
			kind = v
			return err
		case "metadata":
			cont = "" // a key given twice: the last value wins
			return s.fields(func(key []byte) (err error) {
				if string(key) == "continue" {
					cont, err = s.lenientString()
					return err
				}
				return s.skip()
			})
		case "columnDefinitions":
			if sawCols {
				return errors.New(`"columnDefinitions" twice`)
			}
			sawCols = true
			cs, err := readColumns(s)
			if err != nil {
				return err
			}
			cols = &cs
			if cols.name < 0 || cols.state < 0 || cols.robustness < 0 || cols.node < 0 {
				return errTableColumns
			}
			return nil
		case "rows":
			if sawRows {
				return errors.New(`"rows" twice`)
			}
			sawRows = true
			return readArray(s, func(i int) error {
				if cols == nil {
					row, err := readRawRow(s)
					if err != nil {
						return fmt.Errorf("row %d: %w", i, err)
					}
					early = append(early, row)
					return nil
				}
				v, err := readRow(s, cols, &in)
				if err != nil {
					return fmt.Errorf("row %d: %w", i, err)
				}
				v.Namespace = namespace
				out = append(out, v)
				return nil
			})
		}
		return s.skip()
	})
	if err != nil {
		return nil, "", err
	}
	if end, err := s.atEnd(); err != nil || !end {
		if err == nil {
			err = errors.New("data after the table")
		}
		return nil, "", err
	}
	if kind != "Table" {
		return nil, "", fmt.Errorf("%w (kind %q)", errNotTable, kind)
	}
	if cols == nil {
		return nil, "", errTableColumns
	}
	for i, row := range early {
		if len(row) != cols.n {
			return nil, "", fmt.Errorf("row %d: %d cells for %d columns", i, len(row), cols.n)
		}
		v := model.Volume{Namespace: namespace, Name: row[cols.name], State: row[cols.state],
			Robustness: model.NormalRobustness(row[cols.robustness]), Node: row[cols.node]}
		out = append(out, v)
	}
	return out, cont, nil
}

// readArray reads an array (null reads as empty), calling each with the
// index of every element, which each must consume.
func readArray(s *scanner, each func(i int) error) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	switch c {
	case 'n':
		return s.skip()
	case '[':
	default:
		return fmt.Errorf("want an array, got %q", c)
	}
	s.pos++
	if c, err := s.next(); err != nil || c == ']' {
		s.pos++
		return err
	}
	for i := 0; ; i++ {
		if err := each(i); err != nil {
			return err
		}
		more, err := s.more(']')
		if err != nil || !more {
			return err
		}
	}
}

// readColumns reads columnDefinitions and finds the columns read: the name
// column is the first of format "name" (else the one named Name), the others
// the first of their name. -1 is a column not found.
func readColumns(s *scanner) (tableCols, error) {
	cols := tableCols{name: -1, state: -1, robustness: -1, node: -1}
	named := -1
	err := readArray(s, func(i int) error {
		var name, format string
		c, err := s.next()
		if err != nil {
			return err
		}
		if c != '{' {
			return fmt.Errorf("column %d: not an object (%q)", i, c)
		}
		if err := s.fields(func(key []byte) (err error) {
			switch string(key) {
			case "name":
				name, err = s.lenientString()
			case "format":
				format, err = s.lenientString()
			default:
				err = s.skip()
			}
			return err
		}); err != nil {
			return err
		}
		cols.n++
		set := func(p *int) {
			if *p < 0 {
				*p = i
			}
		}
		if format == "name" {
			set(&cols.name)
		}
		switch name {
		case "Name":
			if named < 0 {
				named = i
			}
		case columnState:
			set(&cols.state)
		case columnRobustness:
			set(&cols.robustness)
		case columnNode:
			set(&cols.node)
		}
		return nil
	})
	if cols.name < 0 {
		cols.name = named
	}
	return cols, err
}

// readRow reads one row's cells, keeping the four it needs.
func readRow(s *scanner, cols *tableCols, in *interner) (model.Volume, error) {
	var v model.Volume
	n := -1
	c, err := s.next()
	if err != nil {
		return v, err
	}
	if c != '{' {
		return v, fmt.Errorf("not an object (%q)", c)
	}
	err = s.fields(func(key []byte) error {
		if string(key) != "cells" {
			return s.skip()
		}
		if n >= 0 {
			return errors.New(`"cells" twice`)
		}
		n = 0
		return readArray(s, func(i int) error {
			n++
			if i != cols.name && i != cols.state && i != cols.robustness && i != cols.node {
				return s.skip()
			}
			// One cell may be several of the four (a column both of
			// format name and named State, say): each takes it.
			b, ok, err := cellBytes(s)
			if !ok {
				return err
			}
			if i == cols.name {
				v.Name = string(b)
			}
			if i == cols.state {
				v.State = in.intern(b)
			}
			if i == cols.robustness {
				v.Robustness = model.NormalRobustness(string(b))
			}
			if i == cols.node {
				v.Node = in.intern(b)
			}
			return nil
		})
	})
	if err != nil {
		return v, err
	}
	if n != cols.n {
		return v, fmt.Errorf("%d cells for %d columns", max(n, 0), cols.n)
	}
	if v.Robustness == "" {
		v.Robustness = model.NormalRobustness("")
	}
	return v, nil
}

// readRawRow reads one row's cells as strings, "" for a cell that is not
// one (rows sent before the columns: the apiserver never does, but JSON
// does not order an object's keys).
func readRawRow(s *scanner) ([]string, error) {
	c, err := s.next()
	if err != nil {
		return nil, err
	}
	if c != '{' {
		return nil, fmt.Errorf("not an object (%q)", c)
	}
	var cells []string
	saw := false
	err = s.fields(func(key []byte) error {
		if string(key) != "cells" {
			return s.skip()
		}
		if saw {
			return errors.New(`"cells" twice`)
		}
		saw = true
		return readArray(s, func(int) error {
			b, _, err := cellBytes(s)
			cells = append(cells, string(b))
			return err
		})
	})
	return cells, err
}

// cellBytes reads a cell: a string's bytes (valid until the next read) and
// true, or, for anything else, nothing.
func cellBytes(s *scanner) ([]byte, bool, error) {
	c, err := s.next()
	if err != nil {
		return nil, false, err
	}
	if c != '"' {
		return nil, false, s.skip()
	}
	b, err := s.stringBytes()
	return b, err == nil, err
}

// interner shares the strings of values that repeat across rows (states,
// nodes): 10,000 volumes sit on a few hundred nodes in a few states.
type interner map[string]string

// maxInterned bounds the interner, so hostile input cannot grow it beyond
// what the rows themselves hold.
const maxInterned = 4096

func (in interner) intern(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in) < maxInterned {
		in[s] = s
	}
	return s
}
