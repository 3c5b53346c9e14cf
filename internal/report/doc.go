// Package report renders the one-shot text report of `rebootwatch
// --snapshot`: a summary line, the locks with their verdicts, a node table
// with phase and progress, Longhorn volumes and the attention list.
//
// It is a pure function of a model.Cluster and a time: it must not read the
// clock, the environment or the terminal. The caller says whether to colour;
// the colours are the theme's, for the tone of each verdict, phase and
// source status (model.Tone).
package report
