package egress

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Match them with errors.Is; each
// carries a protocol.Code (see protocol.CodeOf).
var (
	// ErrDenied: the policy refused a destination. Every refusal is a
	// [*DeniedError] wrapping it, with code POLICY_DENIED.
	ErrDenied error = coded.New("egress: destination refused", protocol.CodePolicyDenied)
	// ErrInvalidRule: an allow rule of Options.Allow cannot be parsed.
	ErrInvalidRule error = coded.New("egress: invalid allow rule", protocol.CodeInvalidField)
	// ErrInvalidOptions: Options or HTTPOptions hold an impossible value,
	// or a network level is unknown.
	ErrInvalidOptions error = coded.New("egress: invalid options", protocol.CodeInvalidField)
)

// DeniedError is one refused destination: the host as it was dialled, the
// resolved address (empty when the refusal came before resolution) and the
// rule that refused it. It wraps [ErrDenied], so errors.Is(err, ErrDenied)
// and errors.Is(err, protocol.CodePolicyDenied) hold and protocol.CodeOf
// gives POLICY_DENIED, also through the *net.OpError and *url.Error a dial
// or an HTTP request wraps it in.
type DeniedError struct {
	// Host is the name or IP literal dialled ("api.example.com").
	Host string
	// Address is the resolved address the dial was about to connect to
	// ("10.0.0.7:443"); "" when refused before resolution.
	Address string
	// Rule says why: the range that is refused ("loopback 127.0.0.0/8"),
	// "no allow rule matches (egress-restricted)", "network level none",
	// "redirect from https to http", ...
	Rule string
}

// Error returns "egress: destination refused: host H (address A): RULE".
func (e *DeniedError) Error() string {
	s := "egress: destination refused: host " + e.Host
	if e.Address != "" {
		s += " (address " + e.Address + ")"
	}
	return s + ": " + e.Rule
}

// Unwrap returns ErrDenied.
func (e *DeniedError) Unwrap() error { return ErrDenied }

func invalidRule(rule, why string) error {
	return coded.Wrap(ErrInvalidRule, quote(rule)+": "+why, nil)
}
