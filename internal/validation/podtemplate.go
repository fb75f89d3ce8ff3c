package validation

import (
	"fmt"
	"slices"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
)

// The messages below are Kubernetes' own (k8s.io/kubernetes pkg/apis/core/validation), so that a user
// reads the words the API server would have answered when it refused the pods; the names, labels and
// annotations are checked by apimachinery's validation, which the API server uses.
const (
	msgVolumeTypeRequired = "must specify a volume type"
	msgOneVolumeType      = "may not specify more than 1 volume type"
	msgDNSConfigRequired  = "must provide `dnsConfig` when `dnsPolicy` is None"
	msgHostPortMatch      = "must match `containerPort` when `hostNetwork` is true"
	msgMaxSkew            = "must be greater than zero"
	msgTopologyKey        = "can not be empty"
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
)

// operatorContainers names the containers the operator adds, with what each one is.
var operatorContainers = map[string]string{
	v1alpha1.AerospikeContainerName:   "the Aerospike container",
	v1alpha1.ExporterContainerName:    "the exporter container (spec.monitoring)",
	resources.ConfigInitContainer:     "the operator's init container that copies aerospike.conf",
	resources.ConfigReportContainer:   "the operator's init container that reports the aerospike.conf copied",
	resources.PrepareVolumesContainer: "the operator's init container that prepares the storage volumes",
}

// operatorVolumeRoles says what each of the operator's own pod volumes is.
var operatorVolumeRoles = map[string]string{
	resources.ConfigMapVolume:  "the operator's volume of the rack's ConfigMap",
	resources.ConfigVolume:     "the operator's volume of the pod's aerospike.conf",
	resources.SMDVolume:        "the operator's volume of asd's system metadata",
	resources.VolumePlanVolume: "the operator's volume of the storage volumes' plan",
}

// validatePodTemplate refuses the pod settings Kubernetes would refuse in the pods the operator builds,
// with Kubernetes' words, before anything is stored; and the ones that collide with the operator's own
// containers and volumes, naming both.
func validatePodTemplate(c *v1alpha1.AerospikeCluster) field.ErrorList {
	o := c.Spec.PodSpec
	if o == nil {
		return nil
	}
	p := specPath.Child("podSpec")
	errs := slices.Concat(
		metav1validation.ValidateLabels(o.Labels, p.Child("labels")),
		apivalidation.ValidateAnnotations(o.Annotations, p.Child("annotations")),
		metav1validation.ValidateLabels(o.ServiceLabels, p.Child("serviceLabels")),
		apivalidation.ValidateAnnotations(o.ServiceAnnotations, p.Child("serviceAnnotations")),
		validateInitContainers(c, o, p.Child("initContainers")),
		validatePodVolumes(c, o, p.Child("volumes")),
		validateMounts(c, o),
		validateDNS(o, p),
		validateSpread(o.TopologySpreadConstraints, p.Child("topologySpreadConstraints")),
		validateHostNetwork(c, o),
	)
	if o.PriorityClassName != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(o.PriorityClassName) {
			errs = append(errs, field.Invalid(p.Child("priorityClassName"), o.PriorityClassName, msg))
		}
	}
	return errs
}

// validateInitContainers: a name and an image each, a DNS label as name, unique among every container
// of the pod (Kubernetes' rule: init containers and containers share the names).
func validateInitContainers(c *v1alpha1.AerospikeCluster, o *v1alpha1.PodOverrides, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	users := map[string]string{}
	for i, s := range o.Sidecars {
		users[s.Container.Name] = fmt.Sprintf("spec.podSpec.sidecars[%d]", i)
	}
	for i, s := range o.InitContainers {
		ip := p.Index(i)
		name := s.Container.Name
		switch {
		case name == "":
			errs = append(errs, field.Required(ip.Child("name"), "every init container needs a name"))
		case operatorContainers[name] != "" && operatorContainerPresent(c, name):
			errs = append(errs, field.Duplicate(ip.Child("name"), name+": is the name of "+operatorContainers[name]))
		case users[name] != "":
			errs = append(errs, field.Duplicate(ip.Child("name"), name+": is the name of "+users[name]))
		default:
			for _, msg := range utilvalidation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(ip.Child("name"), name, msg))
			}
		}
		if s.Container.Image == "" {
			errs = append(errs, field.Required(ip.Child("image"), "every init container needs an image"))
		}
		users[name] = ip.String()
	}
	return errs
}

// operatorContainerPresent reports whether the operator adds the container of this name to the pods of
// this cluster (the exporter only with monitoring, prepare-volumes only with storage volumes): only a
// name the pods have collides. The Aerospike container and the config copy are always there.
func operatorContainerPresent(c *v1alpha1.AerospikeCluster, name string) bool {
	switch name {
	case v1alpha1.ExporterContainerName:
		return c.MonitoringEnabled()
	case resources.PrepareVolumesContainer:
		return len(resources.StorageVolumes(c)) > 0
	}
	return true
}

// validatePodVolumes: a DNS label as name, unique, not one of the operator's volumes or a storage
// volume's, exactly one of the four sources the API offers.
func validatePodVolumes(c *v1alpha1.AerospikeCluster, o *v1alpha1.PodOverrides, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	storage := map[string]int{}
	if c.Spec.Storage != nil {
		for i, v := range c.Spec.Storage.Volumes {
			storage[v.Name] = i
		}
	}
	seen := sets.New[string]()
	for i, pv := range o.Volumes {
		v := pv.Volume
		np := p.Index(i).Child("name")
		i2, isStorage := storage[v.Name]
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(np, ""))
		case operatorVolumeRoles[v.Name] != "":
			errs = append(errs, field.Duplicate(np, v.Name+": is the name of "+operatorVolumeRoles[v.Name]))
		case isStorage:
			errs = append(errs, field.Duplicate(np, fmt.Sprintf("%s: is the name of spec.storage.volumes[%d]", v.Name, i2)))
		case seen.Has(v.Name):
			errs = append(errs, field.Duplicate(np, v.Name))
		default:
			for _, msg := range utilvalidation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(np, v.Name, msg))
			}
		}
		seen.Insert(v.Name)
		errs = append(errs, validateVolumeSource(v.VolumeSource, p.Index(i))...)
	}
	return errs
}

// validateVolumeSource allows a Secret, ConfigMap, emptyDir or projected source, exactly one.
func validateVolumeSource(src corev1.VolumeSource, p *field.Path) field.ErrorList {
	n := 0
	for _, set := range []bool{src.Secret != nil, src.ConfigMap != nil, src.EmptyDir != nil, src.Projected != nil} {
		if set {
			n++
		}
	}
	other := src
	other.Secret, other.ConfigMap, other.EmptyDir, other.Projected = nil, nil, nil, nil
	switch {
	case other != corev1.VolumeSource{}:
		return field.ErrorList{field.Invalid(p, "", "an extra volume is a secret, configMap, emptyDir or projected volume: "+
			"storage the operator manages is spec.storage.volumes")}
	case n == 0:
		return field.ErrorList{field.Required(p, msgVolumeTypeRequired)}
	case n > 1:
		return field.ErrorList{field.Forbidden(p, msgOneVolumeType)}
	}
	return nil
}

// validateMounts refuses a sidecar's or init container's mount of a volume the pods do not have, with
// Kubernetes' answer (Not found).
func validateMounts(c *v1alpha1.AerospikeCluster, o *v1alpha1.PodOverrides) field.ErrorList {
	have := sets.New[string]()
	for name := range operatorVolumeRoles {
		have.Insert(name)
	}
	for _, v := range resources.StorageVolumes(c) {
		have.Insert(v.Name)
	}
	for _, v := range o.Volumes {
		have.Insert(v.Volume.Name)
	}
	var errs field.ErrorList
	check := func(list []v1alpha1.Sidecar, p *field.Path) {
		for i, s := range list {
			for j, m := range s.Container.VolumeMounts {
				if !have.Has(m.Name) {
					errs = append(errs, field.NotFound(p.Index(i).Child("volumeMounts").Index(j).Child("name"), m.Name))
				}
			}
		}
	}
	check(o.Sidecars, specPath.Child("podSpec", "sidecars"))
	check(o.InitContainers, specPath.Child("podSpec", "initContainers"))
	return errs
}

// validateDNS: dnsPolicy None needs a dnsConfig; Kubernetes' limits on nameservers and search paths.
func validateDNS(o *v1alpha1.PodOverrides, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if o.DNSPolicy == corev1.DNSNone && o.DNSConfig == nil {
		errs = append(errs, field.Required(p.Child("dnsConfig"), msgDNSConfigRequired))
	}
	if d := o.DNSConfig; d != nil {
		if len(d.Nameservers) > maxDNSNameservers {
			errs = append(errs, field.Invalid(p.Child("dnsConfig", "nameservers"), d.Nameservers,
				fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
		}
		if len(d.Searches) > maxDNSSearchPaths {
			errs = append(errs, field.Invalid(p.Child("dnsConfig", "searches"), d.Searches,
				fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
		}
	}
	return errs
}

// validateSpread: a positive maxSkew, a topologyKey, one constraint per topologyKey and
// whenUnsatisfiable (Kubernetes' rules).
func validateSpread(list []corev1.TopologySpreadConstraint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, t := range list {
		ip := p.Index(i)
		if t.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(ip.Child("maxSkew"), t.MaxSkew, msgMaxSkew))
		}
		if t.TopologyKey == "" {
			errs = append(errs, field.Required(ip.Child("topologyKey"), msgTopologyKey))
		}
		if t.WhenUnsatisfiable != corev1.DoNotSchedule && t.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(ip.Child("whenUnsatisfiable"), t.WhenUnsatisfiable,
				[]string{string(corev1.DoNotSchedule), string(corev1.ScheduleAnyway)}))
		}
		pair := fmt.Sprintf("{%v, %v}", t.TopologyKey, t.WhenUnsatisfiable)
		if seen.Has(pair) {
			errs = append(errs, field.Duplicate(ip, pair))
		}
		seen.Insert(pair)
	}
	return errs
}

// validateHostNetwork refuses what host networking cannot do: a HostPort external access (the pods are
// already on their nodes' addresses, and Kubernetes wants a host port equal to its container port), a
// rack that puts several pods on one node (they would take the same ports: all but one stay Pending),
// and a sidecar port whose hostPort differs from its containerPort.
func validateHostNetwork(c *v1alpha1.AerospikeCluster, o *v1alpha1.PodOverrides) field.ErrorList {
	if !o.HostNetwork {
		return nil
	}
	p := specPath.Child("podSpec", "hostNetwork")
	var errs field.ErrorList
	if c.ExternalAccessType() == v1alpha1.ExternalHostPort {
		errs = append(errs, field.Invalid(p, true, fmt.Sprintf("conflicts with spec.externalAccess type HostPort: "+
			"with hostNetwork asd's service port 3000 is already open on the node's address, and host port %d "+
			"would have to be the container port (Kubernetes: hostPort %s); use hostNetwork without externalAccess, "+
			"or externalAccess without hostNetwork", c.ExternalHostPort(), msgHostPortMatch)))
	}
	for _, rack := range c.RackPlan() {
		if node := pinnedNode(o, rack); node != "" && rack.Size > 1 {
			errs = append(errs, field.Invalid(p, true, fmt.Sprintf("rack %d places %d pods on node %s, but with "+
				"hostNetwork each pod opens asd's ports (3000-3003) on its node: only one fits, the others would stay "+
				"Pending; spread the rack over nodes", rack.ID, rack.Size, node)))
		}
	}
	for i, s := range o.Sidecars {
		for j, port := range s.Container.Ports {
			if port.HostPort != 0 && port.HostPort != port.ContainerPort {
				errs = append(errs, field.Invalid(specPath.Child("podSpec", "sidecars").Index(i).Child("ports").Index(j).
					Child("hostPort"), port.HostPort, msgHostPortMatch))
			}
		}
	}
	return errs
}

// pinnedNode is the one node a rack's pods are forced onto (nodeName, or a kubernetes.io/hostname node
// selector of the rack or the cluster), "" when they may go to several.
func pinnedNode(o *v1alpha1.PodOverrides, rack v1alpha1.RackPlacement) string {
	node := o.NodeSelector[corev1.LabelHostname]
	if r := rack.Rack; r != nil {
		if n := r.NodeSelector[corev1.LabelHostname]; n != "" {
			node = n
		}
		if r.NodeName != "" {
			node = r.NodeName
		}
	}
	return node
}

// validateRackPlacement checks each rack's own placement as the cluster's: node selector labels, topology
// spread constraints.
func validateRackPlacement(c *v1alpha1.AerospikeCluster) field.ErrorList {
	var errs field.ErrorList
	if o := c.Spec.PodSpec; o != nil {
		errs = append(errs, metav1validation.ValidateLabels(o.NodeSelector, specPath.Child("podSpec", "nodeSelector"))...)
	}
	if c.Spec.RackConfig == nil {
		return errs
	}
	for i, r := range c.Spec.RackConfig.Racks {
		p := specPath.Child("rackConfig", "racks").Index(i)
		errs = append(errs, metav1validation.ValidateLabels(r.NodeSelector, p.Child("nodeSelector"))...)
		errs = append(errs, validateSpread(r.TopologySpreadConstraints, p.Child("topologySpreadConstraints"))...)
	}
	return errs
}

// validateMonitoring: the PodMonitor's labels, the exporter's variable names (Kubernetes' rule), a scrape
// timeout no longer than the interval (the Prometheus Operator refuses the scrape configuration
// otherwise).
func validateMonitoring(c *v1alpha1.AerospikeCluster) field.ErrorList {
	m := c.Spec.Monitoring
	if m == nil {
		return nil
	}
	p := specPath.Child("monitoring")
	var errs field.ErrorList
	for i, e := range m.Env {
		for _, msg := range utilvalidation.IsEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(p.Child("env").Index(i).Child("name"), e.Name, msg))
		}
	}
	pm := m.PodMonitor
	if pm == nil {
		return errs
	}
	errs = append(errs, metav1validation.ValidateLabels(pm.Labels, p.Child("podMonitor", "labels"))...)
	interval, ierr := model.ParseDuration(pm.Interval)
	timeout, terr := model.ParseDuration(pm.ScrapeTimeout)
	if pm.Interval != "" && pm.ScrapeTimeout != "" && ierr == nil && terr == nil && timeout > interval {
		errs = append(errs, field.Invalid(p.Child("podMonitor", "scrapeTimeout"), pm.ScrapeTimeout,
			fmt.Sprintf("must not be longer than the interval (%s): Prometheus refuses such a scrape", pm.Interval)))
	}
	return errs
}
