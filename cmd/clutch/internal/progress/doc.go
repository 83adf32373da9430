// Package progress draws a one-line progress bar for the long commands of
// the clutch CLI (export, import, check). It writes only to a terminal: a
// Bar over anything else (a pipe, a file, a test's buffer) draws nothing,
// so the output of a command never carries it. It redraws at most ten
// times a second, so counting each event costs an atomic add.
//
// It is a few lines of its own instead of a dependency: the CLI needs a
// count, a total, a rate and a carriage return, nothing a library adds.
package progress
