package auth_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/clutchprotocol/clutch/auth"
)

// TestCredentials: each authenticator says which credentials it takes; a
// chain takes its members', once each; a func says nothing.
func TestCredentials(t *testing.T) {
	keys, err := auth.APIKeys(map[string]auth.Caller{"key-0123456789abcdef": {AgentID: "agent:k"}})
	if err != nil {
		t.Fatal(err)
	}
	certs, err := auth.ClientCerts(map[string]auth.Caller{"subject:CN=ken": {AgentID: "agent:ken"}})
	if err != nil {
		t.Fatal(err)
	}
	bearer := auth.Bearer(func(context.Context, string) (*auth.Caller, error) { return nil, auth.ErrUnauthenticated })
	anon := auth.Anonymous(auth.Caller{AgentID: "agent:anon"})
	fn := auth.AuthenticatorFunc(func(*http.Request) (*auth.Caller, error) { return nil, auth.ErrNoCredentials })
	for _, tc := range []struct {
		name string
		a    auth.Authenticator
		want []auth.Credential
	}{
		{"api keys", keys, []auth.Credential{auth.CredentialBearer, auth.CredentialAPIKey}},
		{"bearer", bearer, []auth.Credential{auth.CredentialBearer}},
		{"client certs", certs, []auth.Credential{auth.CredentialClientCert}},
		{"anonymous", anon, []auth.Credential{auth.CredentialNone}},
		{"chain", auth.Chain(certs, keys, bearer, fn, anon), []auth.Credential{auth.CredentialClientCert, auth.CredentialBearer, auth.CredentialAPIKey, auth.CredentialNone}},
		{"func", fn, nil},
	} {
		if got := auth.Credentials(tc.a); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
