// Package atomicfile writes a file whole or not at all: the bytes go to a
// temporary file in the same directory, made with the final mode before
// anything is written, which is synced and then renamed over the path (or
// linked to it, for a file that must not replace another). A reader never
// sees half a file, a failure leaves what the path held before, and other
// users of the machine never see a wider mode, even for a moment. On
// systems that allow it the directory is synced too, so the rename
// survives a power loss.
//
// It is the one way the clutch command writes its own files: exports, the
// contexts config, serve's key file, the demo's public keys and restored
// stores.
package atomicfile
