// Package keyfile reads the key file of `clutch verify`: the public keys
// that may sign for each agent.
//
// # Format
//
// A JSON object from agent id to that agent's keys, each in the form of an
// AgentCard key (docs/protocol.md §1.4, §6.1):
//
//	{
//	  "agent:ui":  [{"kid": "key_ui_01", "public_key": "<32 bytes, base64>"}],
//	  "agent:ken": [{"kid": "key_ken_01", "alg": "ed25519", "public_key": "..."},
//	                {"kid": "key_ken_02", "public_key": "..."}]
//	}
//
// alg may be left out; when present it must be "ed25519". public_key is the
// 32-byte Ed25519 public key in base64url without padding (as in an
// AgentCard) or in standard base64 with padding. A kid is unique within an
// agent. A message verifies only against the keys of its own from.agent_id:
// a valid signature by another agent's key is a failure (UNKNOWN_KEY).
// Duplicate members, unknown members of a key and invalid UTF-8 are errors.
package keyfile
