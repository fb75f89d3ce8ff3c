// Package volumes reads what the storage of a cluster's pods depends on in the API server: the
// StorageClass a volume's claims use, which decides whether the volume may grow.
package volumes

import (
	"context"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// defaultClassAnnotation marks the cluster's default StorageClass.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// Class is the StorageClass named (nil or empty: the default class), and the name it goes by ("" for a
// default that does not exist). It is nil, without error, when there is no such class.
func Class(ctx context.Context, r client.Reader, name *string) (*storagev1.StorageClass, string, error) {
	if name != nil && *name != "" {
		class := &storagev1.StorageClass{}
		err := r.Get(ctx, client.ObjectKey{Name: *name}, class)
		if apierrors.IsNotFound(err) {
			return nil, *name, nil
		}
		if err != nil {
			return nil, *name, err
		}
		return class, *name, nil
	}
	list := &storagev1.StorageClassList{}
	if err := r.List(ctx, list); err != nil {
		return nil, "", err
	}
	for i := range list.Items {
		if list.Items[i].Annotations[defaultClassAnnotation] == "true" {
			return &list.Items[i], list.Items[i].Name, nil
		}
	}
	return nil, "", nil
}
