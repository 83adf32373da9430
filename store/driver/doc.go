// Package driver holds the machinery the in-tree backends (memstore,
// boltstore) share so that they cannot disagree: preparing messages for
// Append, the change signal followers wait on, and the Read and Follow
// loops built on a backend's page function.
package driver
