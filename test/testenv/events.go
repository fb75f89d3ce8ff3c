package testenv

import (
	"context"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventMessages lists the notes of the events with the given reason about the named object, in the
// order the API server lists them.
func EventMessages(c client.Reader, key types.NamespacedName, reason string) ([]string, error) {
	list := &eventsv1.EventList{}
	if err := c.List(context.Background(), list, client.InNamespace(key.Namespace)); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == key.Name && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out, nil
}
