package bus

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	"github.com/nats-io/nkeys"

	"github.com/dpsim/dpsim/pkg/wire"
)

// Message signing (optional: dpsim run --sign). Every process holds an ed25519 key (an nkeys
// user key); it signs the encoded payload of each data message it publishes and puts the
// signature in the Dpsim-Sig header. Receivers know every sender's public key and drop
// (counting ReasonSignature) a data message whose signature is missing or does not verify:
// a compromised role, or anyone on a server without permissions, cannot speak for another
// sender. The seed reaches a process through its environment (EnvSignSeed), never argv; the
// public keys are a JSON file {"plant.0": "U...", ...}.

// EnvSignSeed carries a process's signing seed.
const EnvSignSeed = "DPSIM_SIGN_SEED"

// SigningKey is a process's signing key: its seed (secret) and public key.
type SigningKey struct {
	Seed   string
	Public string
}

// NewSigningKey creates an ed25519 key pair.
func NewSigningKey() (SigningKey, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return SigningKey{}, fmt.Errorf("bus: signing key: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return SigningKey{}, fmt.Errorf("bus: signing key: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return SigningKey{}, fmt.Errorf("bus: signing key: %w", err)
	}
	return SigningKey{Seed: string(seed), Public: pub}, nil
}

// WithSigner signs every data message the connection publishes with the key of seed.
func WithSigner(seed string) Option {
	return func(c *connConfig) { c.signSeed = seed }
}

// WithEnvSigner signs with the seed of the environment (EnvSignSeed), when set.
func WithEnvSigner() Option {
	return func(c *connConfig) {
		if s := os.Getenv(EnvSignSeed); s != "" {
			c.signSeed = s
		}
	}
}

// Signing reports whether the connection signs what it publishes.
func (c *Conn) Signing() bool { return c.signer != nil }

func newSigner(seed string) (nkeys.KeyPair, error) {
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		return nil, fmt.Errorf("bus: signing seed: %w", err)
	}
	return kp, nil
}

// sign returns the header value of data's signature.
func sign(kp nkeys.KeyPair, data []byte) (string, error) {
	sig, err := kp.Sign(data)
	if err != nil {
		return "", fmt.Errorf("bus: sign: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sig), nil
}

// Verifier checks the signatures of data messages against the senders' public keys.
type Verifier struct {
	keys map[string]nkeys.KeyPair
}

// NewVerifier returns a verifier of the senders' public keys (sender name -> key).
func NewVerifier(public map[string]string) (*Verifier, error) {
	v := &Verifier{keys: map[string]nkeys.KeyPair{}}
	for sender, pub := range public {
		kp, err := nkeys.FromPublicKey(pub)
		if err != nil {
			return nil, fmt.Errorf("bus: public key of %s: %w", sender, err)
		}
		v.keys[sender] = kp
	}
	return v, nil
}

// ReadVerifier reads a public-key file ({"plant.0": "U...", ...}).
func ReadVerifier(path string) (*Verifier, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bus: public keys: %w", err)
	}
	var keys map[string]string
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, fmt.Errorf("bus: public keys %s: %w", path, err)
	}
	return NewVerifier(keys)
}

// Verify checks that sig (the header value) is sender's signature of data.
func (v *Verifier) Verify(sender string, data []byte, sig string) error {
	kp := v.keys[sender]
	if kp == nil {
		return &wire.InvalidError{Reason: wire.ReasonSignature, Detail: "no public key for sender " + sender}
	}
	if sig == "" {
		return &wire.InvalidError{Reason: wire.ReasonSignature, Detail: "unsigned message"}
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return &wire.InvalidError{Reason: wire.ReasonSignature, Detail: "signature is not base64"}
	}
	if err := kp.Verify(data, raw); err != nil {
		return &wire.InvalidError{Reason: wire.ReasonSignature, Detail: "signature does not verify: not " + sender + "'s, or altered"}
	}
	return nil
}
