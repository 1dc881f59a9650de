package pki

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/keyutil"
)

// reasonPublicKey says the public key was re-derived from the private key.
const reasonPublicKey = "its public key does not match its private key"

// serviceAccountKeys keeps the service-account key pair while its private
// key parses: re-generating it would invalidate every token the hosted
// cluster issued. A public key that does not match is derived again.
func (p *planner) serviceAccountKeys() error {
	s := p.live[ServiceAccountKeySecret]
	var private, public []byte
	var write *Write
	if s == nil {
		write = &Write{Reason: reasonMissing, Cause: Missing}
	} else {
		private, public = s.Data[ServiceAccountPrivateKeyKey], s.Data[ServiceAccountPublicKeyKey]
		var err error
		if write, public, err = checkServiceAccountKeys(private, public); err != nil {
			return err
		}
	}
	if write != nil && write.Reason != reasonPublicKey {
		var err error
		if private, public, err = newServiceAccountKeys(); err != nil {
			return fmt.Errorf("failed to generate %s: %w", ServiceAccountKeySecret, err)
		}
	}
	p.add(ServiceAccountKeySecret, corev1.SecretTypeOpaque, map[string][]byte{
		ServiceAccountPrivateKeyKey: private,
		ServiceAccountPublicKeyKey:  public,
	}, write)
	return nil
}

// checkServiceAccountKeys returns why the pair must be written, and the
// public key to store: derived again when it does not match a private key
// that parses.
func checkServiceAccountKeys(private, public []byte) (*Write, []byte, error) {
	key, err := parseKey(private)
	if err != nil {
		return &Write{Reason: reasonKeyInvalid, Cause: Damaged}, public, nil
	}
	if publicKeyMatches(public, key.Public()) {
		return nil, public, nil
	}
	if public, err = encodePublicKey(key.Public()); err != nil {
		return nil, nil, fmt.Errorf("failed to derive the public key of %s: %w", ServiceAccountKeySecret, err)
	}
	return &Write{Reason: reasonPublicKey, Cause: Damaged}, public, nil
}

// publicKeyMatches says whether publicPEM holds exactly the public key of
// the private key.
func publicKeyMatches(publicPEM []byte, want any) bool {
	keys, err := keyutil.ParsePublicKeysPEM(publicPEM)
	return err == nil && len(keys) == 1 && samePublicKey(keys[0], want)
}
