package certs

import (
	"bytes"
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// PreviousCAKey holds, in the shared Secret, the CA before the last rotation, which the caBundle
// keeps trusting until it expires.
const PreviousCAKey = "previous-ca.crt"

// errLostRace: another replica created or rotated the shared pair between our read and our write.
var errLostRace = errors.New("the shared webhook certificate changed meanwhile")

// loadShared reads the Secret into current and previous; an absent or unusable Secret leaves
// current nil, so a new pair is made and stored.
func (s *SelfSigned) loadShared(ctx context.Context) error {
	secret := &corev1.Secret{}
	err := s.client.Get(ctx, *s.opts.Secret, secret)
	if apierrors.IsNotFound(err) {
		s.current, s.previous, s.secret = nil, nil, nil
		return nil
	}
	if err != nil {
		return err
	}
	s.secret = secret
	pair, err := parseKeyPair(secret.Data[CAFile], secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		logf.FromContext(ctx).Info("The shared webhook certificate is unusable; replacing it",
			"secret", s.opts.Secret.String(), "reason", err.Error())
		s.current, s.previous = nil, nil
		return nil
	}
	if s.current == nil || !bytes.Equal(s.current.certPEM, pair.certPEM) {
		s.current = pair
	}
	s.previous = nil
	if prev := secret.Data[PreviousCAKey]; len(prev) > 0 {
		if ca, err := parseCA(prev); err == nil {
			s.previous = &keyPair{caPEM: prev, ca: ca}
		}
	}
	return nil
}

// store saves a new pair in the Secret (creating it, or updating the version read, which may be the
// chart's empty one), so that every replica serves it; without a Secret there is nothing to share.
func (s *SelfSigned) store(ctx context.Context, next, previous *keyPair) error {
	if s.opts.Secret == nil {
		return nil
	}
	data := map[string][]byte{CAFile: next.caPEM, corev1.TLSCertKey: next.certPEM, corev1.TLSPrivateKeyKey: next.keyPEM}
	if previous != nil {
		data[PreviousCAKey] = previous.caPEM
	}
	var secret *corev1.Secret
	var err error
	if s.secret == nil {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name: s.opts.Secret.Name, Namespace: s.opts.Secret.Namespace,
				Labels: map[string]string{ackov1alpha1.LabelManagedBy: ackov1alpha1.ManagedBy},
			},
			// Opaque, like the empty Secret the chart installs (so that Helm deletes it on uninstall).
			Type: corev1.SecretTypeOpaque,
			Data: data,
		}
		err = s.client.Create(ctx, secret)
	} else {
		// Only the data changes, at the version read: the installer's metadata stays its own, so
		// that `helm upgrade` finds no field of its manifest taken over.
		secret = s.secret.DeepCopy()
		secret.Data = data
		err = s.client.Update(ctx, secret)
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return errLostRace
	}
	if err != nil {
		return err
	}
	s.secret = secret
	return nil
}
