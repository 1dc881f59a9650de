package pki

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Hash is a digest of a Secret's data: it changes when, and only when,
// the data does. Pod templates carry the hashes of the Secrets their
// processes read once, so a re-issue rolls them.
func Hash(secret *corev1.Secret) string {
	h := sha256.New()
	for _, key := range slices.Sorted(maps.Keys(secret.Data)) {
		h.Write([]byte(key))
		h.Write([]byte{0})
		h.Write(secret.Data[key])
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
