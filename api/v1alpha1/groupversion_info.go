// Package v1alpha1 contains the AerospikeCluster, AerospikeBackup and AerospikeRestore API of the acko.io group.
// +kubebuilder:object:generate=true
// +groupName=acko.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "acko.io", Version: "v1alpha1"}

	// SchemeBuilder registers the API's types; it depends on apimachinery alone, so the API
	// package stays cheap to import.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &AerospikeCluster{}, &AerospikeClusterList{},
		&AerospikeBackup{}, &AerospikeBackupList{}, &AerospikeRestore{}, &AerospikeRestoreList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
