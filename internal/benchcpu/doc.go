// Package benchcpu gives the module's benchmarks the CPU time the process
// has used, so that they can report CPU per operation (all goroutines, the
// collector included) next to their rate: unlike a rate, it barely moves
// when other processes share the machine. Where the platform does not
// give it, Process returns 0 and the benchmarks report no CPU figure.
package benchcpu
