package bus

import (
	"fmt"
	"os"

	"github.com/nats-io/nkeys"

	"github.com/dpsim/dpsim/pkg/wire"
)

// Sealed boxes (the challenger's x(0)). The launcher holds a curve (X25519) key pair, and so
// does every process that receives a secret from it (the plant; each agent host): the secret
// travels sealed to its receiver (nkeys Seal: NaCl box, authenticated by the launcher's key),
// so a subscriber to its subject - on any server, with or without permissions - reads
// ciphertext only. A receiver gets its curve seed (EnvX0Seed) and the launcher's public curve
// key (EnvX0Sender) through its environment or its --credentials file, never argv.
// pkg/contract lays the boxes out in the x0 message.

// Environment variables of the sealed x(0).
const (
	// EnvX0Seed carries a receiving process's curve seed (secret): it opens the boxes sealed
	// to it.
	EnvX0Seed = "DPSIM_X0_SEED"
	// EnvX0Sender carries the launcher's public curve key: a box opens only if it sealed it.
	EnvX0Sender = "DPSIM_X0_SENDER"
)

// CurveKey is a curve key pair: its seed (secret) and public key.
type CurveKey struct {
	Seed   string
	Public string
}

// NewCurveKey creates a curve key pair (nkeys.CreateCurveKeys).
func NewCurveKey() (CurveKey, error) {
	kp, err := nkeys.CreateCurveKeys()
	if err != nil {
		return CurveKey{}, fmt.Errorf("bus: curve key: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return CurveKey{}, fmt.Errorf("bus: curve key: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return CurveKey{}, fmt.Errorf("bus: curve key: %w", err)
	}
	return CurveKey{Seed: string(seed), Public: pub}, nil
}

// Env returns the environment entries that hand a receiving process its curve seed (k) and
// the sender's public key.
func (k CurveKey) Env(sender string) []string {
	return []string{EnvX0Seed + "=" + k.Seed, EnvX0Sender + "=" + sender}
}

// EnvCurveKey returns the curve seed and the sender's public key of the environment ("" when
// unset).
func EnvCurveKey() (seed, sender string) { return os.Getenv(EnvX0Seed), os.Getenv(EnvX0Sender) }

// Seal seals data with k to the holder of the public curve key recipient (only k.Seed is
// needed). It is pkg/contract's Sealer.
func (k CurveKey) Seal(data []byte, recipient string) ([]byte, error) {
	kp, err := curvePair(k.Seed)
	if err != nil {
		return nil, err
	}
	box, err := kp.Seal(data, recipient)
	if err != nil {
		return nil, fmt.Errorf("bus: seal: %w", err)
	}
	return box, nil
}

// Open opens a box sealed to k by the holder of the public curve key sender (only k.Seed is
// needed): an *InvalidError (ReasonSealed) when it was not sealed to this key by that sender,
// or was altered. It is pkg/contract's Opener.
func (k CurveKey) Open(box []byte, sender string) ([]byte, error) {
	kp, err := curvePair(k.Seed)
	if err != nil {
		return nil, err
	}
	data, err := kp.Open(box, sender)
	if err != nil {
		return nil, &wire.InvalidError{Reason: wire.ReasonSealed, Detail: "sealed box does not open: not sealed to this process by the launcher, or altered (" + err.Error() + ")"}
	}
	return data, nil
}

func curvePair(seed string) (nkeys.KeyPair, error) {
	kp, err := nkeys.FromCurveSeed([]byte(seed))
	if err != nil {
		return nil, fmt.Errorf("bus: curve seed: %w", err)
	}
	return kp, nil
}
